"""The taint model of CGG001/CGG002 as data: sources, propagators, sanitizers, sinks.

The only module that names vLLM's attributes. :func:`model` fills the core's
:class:`cgguard.static.core.patterns.Model` with them; the byte prefilter's needles
(:data:`NEEDLES`) are derived from the same sources. Keep it free of libcst and of the
core's form at import (the byte prefilter imports it before anything is parsed), and of
logic beyond naming.

========== =================================================================================
Sources    a capture size, in tokens: ``<x>.max_cudagraph_capture_size``, the pre-0.11.1 name
           ``<x>.max_capture_size``, ``getattr(<x>, "<either name>"[, default])``, the last
           element of a capture-size list (``<x>.cudagraph_batch_sizes[-1]``) and ``max()``
           of one; a parameter whose default is one.
Propagate  locals (walrus, unpacking, chained targets), tuples and lists, ``a or K``,
           arithmetic, conditional expressions, :data:`PASSTHROUGH_CALLS` (``int``,
           ``cdiv``...), sorted or filtered copies of a capture-size list, ``partial``,
           attributes of ``self`` (per class and its bases), returns of helpers, and the
           arguments a helper hands to its return (the core's summaries).
Sanitize   ``min()`` with a request count (:data:`REQUEST_COUNT_NAMES` on any receiver, a
           local holding one, a helper or property returning one); the clamp
           ``if x > R: x = R`` and ``x if x <= R else R``. A ``min()`` with a token count
           (:data:`TOKEN_COUNT_NAMES`) or a constant still counts tokens.
Sinks      the allocation, typed by its API: a store of ``num_gpu_blocks_override`` on any
           object (also by ``setattr``, ``mock.patch.object``, ``replace``, any call's
           keyword and a splatted dict key), and the parameters of vLLM's KV-cache config
           builders (:data:`PARAM_SINKS`: ``available_memory``, ``num_blocks``,
           ``fixed_num_blocks``...), by keyword, at their position, or splatted. A name
           that looks like a block count is never a sink: a local named so is where the
           finding goes when its value reaches a sink, and a kernel's ``num_blocks=`` or a
           returned ``max_grid_blocks`` is nothing.
Fix bound  the request count a fix writes (:class:`~.requestbound.RequestBound`): a model
           runner's ``max_num_reqs``, the config's ``scheduler_config.max_num_seqs``, or
           what the class the count is read in has.
========== =================================================================================
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from cgguard.static.core.needles import needles_of

if TYPE_CHECKING:
    from cgguard.static.core.patterns import Model

# ---- sources ------------------------------------------------------------------------

# Attributes holding the largest CUDA-graph capture size (tokens). The second is the
# name used before vLLM 0.11.1. Read as attributes or by `getattr(x, "<name>", default)`.
CAPTURE_SIZE_ATTRS = frozenset({"max_cudagraph_capture_size", "max_capture_size"})
# Sorted lists of capture sizes; ``[-1]`` or ``max(...)`` of them is the largest.
CAPTURE_LIST_NAMES = frozenset({"cudagraph_batch_sizes", "cudagraph_capture_sizes"})
# The builtin that reads an attribute by its name (a version-spanning read).
GETATTR = "getattr"

# Every source above contains one of these substrings: a text without any of them
# cannot hold a finding (the byte prefilter's needles), derived from the sources.
NEEDLES = needles_of(CAPTURE_SIZE_ATTRS | CAPTURE_LIST_NAMES)
assert all(any(n in name for n in NEEDLES) for name in CAPTURE_SIZE_ATTRS | CAPTURE_LIST_NAMES)
# The sources' names whole: a text with a needle but none of these (a local ``batch_sizes``,
# a ``capture_size`` argument) names no source either.
SOURCE_NAMES = tuple(sorted(CAPTURE_SIZE_ATTRS | CAPTURE_LIST_NAMES))

# ---- labels -------------------------------------------------------------------------

# What a followed value counts: a source's value is a capture size's tokens, and ``max()``
# of it and other counts widens it (the count or more). CGG001 reports the first reaching a
# sink, CGG002 a widened one (rules/configs.py).
SOURCE_LABEL = "capture-size tokens"
WIDENED_LABEL = "widened by max()"
# What a count that derives from no source counts: a request count bounds a capture size
# (REQUEST_COUNT_NAMES, below), a token count does not (TOKEN_COUNT_NAMES).
BOUND_LABEL = "requests"
UNBOUNDED_LABEL = "tokens"

# ---- propagators --------------------------------------------------------------------

# Calls that hand their first argument through unchanged in magnitude.
PASSTHROUGH_CALLS = frozenset({"int", "ceil", "round", "abs", "cdiv", "round_up"})

# Calls a block-named local may be handed to without its count leaving the function:
# the propagators and sanitizers above, conversions, and logging.
NON_ESCAPING_CALLS = PASSTHROUGH_CALLS | frozenset(
    {
        "min",
        "max",
        "float",
        "str",
        "repr",
        "bool",
        "len",
        "isinstance",
        "print",
        "range",
        "debug",
        "info",
        "warning",
        "warning_once",
        "info_once",
        "error",
        "exception",
        "log",
    }
)

# ---- sanitizers -----------------------------------------------------------------------

# Names of request (sequence) counts: ``self.max_num_reqs``, ``scheduler_config.max_num_seqs``...
REQUEST_COUNT_NAMES = frozenset({"max_num_reqs", "max_num_seqs"})
# Counts of tokens: a min() of these and a capture size still grows with the token count.
TOKEN_COUNT_NAMES = frozenset({"max_num_tokens", "max_num_batched_tokens", "max_model_len"})

# ---- sinks ----------------------------------------------------------------------------

# Where the profiling KV cache's block count is handed to vLLM's allocation API: a
# parameter of a named callee (a module function or a builder's method of that name), by
# keyword or at its position. ``get_kv_cache_config_from_groups(vllm_config, groups,
# available_memory)`` takes a byte budget built from the count (the pre-releases); 0.33.0's
# builder takes ``num_blocks=``; ``_get_kv_cache_configs(..., fixed_num_blocks=)`` and
# ``get_profiling_kv_cache_config(vllm_config, kv_cache_spec, min_blocks)`` are the
# planner's (FIELD-NOTES section 3). A name that looks like a block count is no sink: a
# kernel's ``num_blocks=`` counts launch-grid blocks of tokens.
KV_CACHE_CONFIG_BUILDER = "get_kv_cache_config_from_groups"
PARAM_SINKS: tuple[tuple[str, str, int | None], ...] = (
    (KV_CACHE_CONFIG_BUILDER, "available_memory", 2),
    (KV_CACHE_CONFIG_BUILDER, "num_blocks", None),
    ("_get_kv_cache_configs", "fixed_num_blocks", None),
    ("get_profiling_kv_cache_config", "min_blocks", 2),
    ("get_profiling_kv_cache_config", "num_blocks", None),
)
# Attributes whose store on any object is the profiling cache's block count.
STORE_SINKS = frozenset({"num_gpu_blocks_override"})
# Locals where a finding is placed when their value reaches a sink (never a sink themselves).
_BLOCK_COUNT_LOCAL = r"^(?:.*_blocks|blocks|num_gpu_blocks_override|num_gpu_blocks)$"

# Every sink above names one of these words where it is reached: the stored attribute (also
# in ``setattr``, ``replace``, a keyword or a dict key), or the builder whose parameter it is
# where it is called (a parameter is a sink only of its callee, called by that name). The
# configuration derives its sink words from them (rules/configs.py): names as spelled, so a
# kernel's ``num_blocks=`` or a ``min_blocks`` local is none.
SINK_NAMES = tuple(sorted(STORE_SINKS))
SINK_CALLEES = tuple(sorted({callee for callee, _, _ in PARAM_SINKS}))


def is_capture_attr_name(value: object) -> bool:
    """A constant attribute name handed to ``getattr`` that reads a capture size."""
    return isinstance(value, str) and value in CAPTURE_SIZE_ATTRS


# ---- the model as patterns, read by the data-flow core ------------------------------


def model() -> Model:
    """The model the core reads (made per run: the core keeps nothing between runs)."""
    from cgguard.static.core.patterns import Model, ParamSink
    from cgguard.static.rules.requestbound import RequestBound

    return Model(
        source_attrs=CAPTURE_SIZE_ATTRS,
        source_lists=CAPTURE_LIST_NAMES,
        collection_calls=frozenset({"sorted", "list", "tuple"}),
        element_stores=frozenset({"append"}),
        partial_calls=frozenset({"partial"}),
        passthrough_calls=PASSTHROUGH_CALLS,
        widening_calls=frozenset({"max"}),
        clamp_calls=frozenset({"min"}),
        bound_counts=REQUEST_COUNT_NAMES,
        unbounded_counts=TOKEN_COUNT_NAMES,
        store_sinks=STORE_SINKS,
        param_sinks=tuple(ParamSink(c, p, at) for c, p, at in PARAM_SINKS),
        setattr_calls=frozenset({"setattr", "__setattr__", "object"}),
        replace_calls=frozenset({"replace"}),
        placement_names=re.compile(_BLOCK_COUNT_LOCAL),
        quiet_calls=NON_ESCAPING_CALLS,
        fix_bound=RequestBound(
            runner_names=frozenset({"runner", "model_runner"}),
            runner_request="max_num_reqs",
            config_roots=frozenset({"vllm_config", "get_current_vllm_config()"}),
            config_request="scheduler_config.max_num_seqs",
            source_config="compilation_config",
            class_requests=(
                ("max_num_reqs", "self.max_num_reqs"),
                ("max_num_seqs", "self.max_num_seqs"),
                ("scheduler_config", "self.scheduler_config.max_num_seqs"),
                ("vllm_config", "self.vllm_config.scheduler_config.max_num_seqs"),
                ("model_runner", "self.model_runner.max_num_reqs"),
            ),
            runner_classes=re.compile(r"ModelRunner"),
        ),
        source_label=SOURCE_LABEL,
        widened_label=WIDENED_LABEL,
        bound_label=BOUND_LABEL,
        unbounded_label=UNBOUNDED_LABEL,
    )


def __getattr__(name: str) -> Model:
    # ``MODEL``: made when asked (the byte prefilter imports this module for its needles
    # alone, and the model's types import the core's form).
    if name == "MODEL":
        return model()
    raise AttributeError(name)
