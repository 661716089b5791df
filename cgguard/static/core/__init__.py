"""The data-flow core: the intermediate form, its front ends, and the analysis on it."""
