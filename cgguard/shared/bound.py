"""The profiling block bound: the one place both halves of cgguard take it from.

vLLM's CUDA-graph memory profiling builds a throwaway KV cache. Capture needs one
block per *sequence* in the largest captured batch, so upstream (vLLM PR #48483,
0.26.0) sizes it as::

    min(self.max_num_reqs, self.compilation_config.max_cudagraph_capture_size) or 1

vLLM 0.18.0-0.25.x used ``max_cudagraph_capture_size or 1``: one block per *token*.

The static fix writes :func:`bound_source` into code; the runtime guard compares
against :func:`profiling_block_bound`. Both are spelled from the same template so
they cannot drift apart.
"""

from __future__ import annotations

# The formula, as upstream spells it. ``{requests}`` is a request (sequence) count,
# ``{capture}`` the largest CUDA-graph capture size in tokens, ``{fallback}`` the
# count used when the minimum is 0 (upstream: 1).
BOUND_TEMPLATE = "min({requests}, {capture}) or {fallback}"
DEFAULT_FALLBACK = 1


def bound_source(requests: str, capture: str, fallback: str = str(DEFAULT_FALLBACK)) -> str:
    """Source text of the bounded block count, for the static fix."""
    return BOUND_TEMPLATE.format(requests=requests, capture=capture, fallback=fallback)


def profiling_block_bound(
    max_num_reqs: int, max_cudagraph_capture_size: int | None, fallback: int = DEFAULT_FALLBACK
) -> int:
    """Blocks the profiling KV cache needs: one per sequence of the largest graph.

    Evaluates :data:`BOUND_TEMPLATE`. A capture size of ``None`` (no graphs) is
    treated as 0, which the template's fallback turns into ``fallback`` blocks.
    """
    capture = max_cudagraph_capture_size or 0
    return min(max_num_reqs, capture) or fallback


def per_token_block_count(
    max_cudagraph_capture_size: int | None, fallback: int = DEFAULT_FALLBACK
) -> int:
    """Blocks vLLM 0.18.0-0.25.x allocated: ``max_cudagraph_capture_size or 1``."""
    return max_cudagraph_capture_size or fallback


# Releases carrying the per-token formula (inclusive lower, exclusive upper bound).
FIRST_AFFECTED = (0, 18, 0)
FIRST_FIXED = (0, 26, 0)
