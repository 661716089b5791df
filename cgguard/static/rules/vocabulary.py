"""What the rules recognise: capture-size sources, block-count sinks, request counts.

Everything here comes from the field notes (section 3). Sources count *tokens*,
sinks count *blocks* (one per sequence is enough), request counts bound one by
the other. Keep this module free of logic beyond matching names (and free of libcst: the
driver screens text with it before deciding to parse); node matching lives in
:mod:`cgguard.static.rules.nodes`.
"""

from __future__ import annotations

import re

# Attributes holding the largest CUDA-graph capture size (tokens). The second is the
# name used before vLLM 0.11.1.
CAPTURE_SIZE_ATTRS = frozenset({"max_cudagraph_capture_size", "max_capture_size"})
# Sorted lists of capture sizes; ``[-1]`` or ``max(...)`` of them is the largest.
CAPTURE_LIST_NAMES = frozenset({"cudagraph_batch_sizes", "cudagraph_capture_sizes"})

# Every source above contains one of the substrings in cgguard.static.driver.prefilter.NEEDLES:
# keep them in step when adding a source, or the prefilter will skip its files.

# Names of request (sequence) counts: ``self.max_num_reqs``, ``scheduler_config.max_num_seqs``...
REQUEST_COUNT_NAMES = frozenset({"max_num_reqs", "max_num_seqs"})

# Where a value is a number of KV-cache blocks.
_BLOCK_COUNT_NAME = re.compile(
    r"""^(?:
        .*_blocks                       # min_blocks, num_blocks, fixed_num_blocks ...
      | blocks
      | num_gpu_blocks_override
      | num_gpu_blocks
      | .*profil\w*_(?:rows|slots)      # a layer remembering the profiling cache's rows
      | .*_(?:rows|slots)_\w*profil\w*
    )$""",
    re.VERBOSE,
)
# Byte budgets computed from a block count (``count * page_size``).
BYTE_BUDGET_NAMES = frozenset({"available_memory"})
# Callees that take a positional block count for the profiling KV cache config:
# `get_kv_cache_config_from_groups`, `_build_profiling_kv_cache_config`,
# `make_minimal_kv_cache`... (not any call with "profil" in its name).
_PROFILING_BUILDER = re.compile(
    r"(?:kv_cache_config|minimal_kv_cache|profil\w*(?:cache|config))", re.IGNORECASE
)


# Every sink above (block-count names, byte budgets, builder callees) contains one of
# these words, case aside: code without any of them cannot hold a finding, so the
# driver does not parse it (cgguard.static.driver.scan). Keep them in step.
SINK_WORDS = re.compile(r"blocks|available_memory|profil|kv_cache_config|minimal_kv_cache", re.IGNORECASE)


def is_block_count_name(name: str) -> bool:
    return bool(_BLOCK_COUNT_NAME.match(name))


def is_sink_name(name: str) -> bool:
    """Assignment target / keyword names that receive a block count (or bytes of one)."""
    return is_block_count_name(name) or name in BYTE_BUDGET_NAMES


def is_profiling_builder(callee: str) -> bool:
    return bool(_PROFILING_BUILDER.search(callee))
