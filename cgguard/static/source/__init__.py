"""What a check reads and produces: a file's bytes and text, its lines, findings and text edits.

Below the driver and the workflow, which both use it; imports neither."""
