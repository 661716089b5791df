"""The runtime guard: checks vLLM's CUDA-graph profiling KV cache at start-up.

vLLM 0.18.0-0.25.x (and forks/plugins that copied the line) size the throwaway
KV cache built for CUDA-graph memory profiling by *tokens*
(``max_cudagraph_capture_size or 1`` blocks) instead of by *sequences*. The guard
wraps vLLM's model-runner methods so that, when the profiling cache is about to
be allocated, its block count is compared with the per-sequence bound from
:mod:`cgguard.shared.bound`, and then, depending on the mode:

- ``off``   nothing is checked;
- ``warn``  one warning per process with the numbers, nothing changed;
- ``raise`` :class:`GuardViolation` before the cache is allocated;
- ``fix``   vLLM's own configuration code builds the cache for the bound instead.

Importing this package is cheap: vLLM is imported only by :func:`install`, and
nothing here imports the static half's dependencies (libcst, click).
"""

from __future__ import annotations

from cgguard.runtime.errors import GuardViolation
from cgguard.runtime.hooks import hooked_targets, install, uninstall

__all__ = ["GuardViolation", "hooked_targets", "install", "uninstall"]
