"""CGG003: a count of tokens where a count of requests (or one sequence's length) belongs.

A configuration of the same engine as CGG001 (:mod:`.configs`), with its own sources,
sanitizers and sinks, all data:

========== =================================================================================
Sources    token counts: a batch's token budget (``<x>.max_num_tokens``,
           ``<x>.max_num_batched_tokens``) and the capture size (CGG001's sources).
Sanitize   ``min()`` with a request count (``max_num_reqs``, ``max_num_seqs``) or with one
           sequence's length (``max_model_len``); the ``if`` clamp and the conditional
           expression, as CGG001.
Sinks      the per-item sequence length of vLLM's dummy-data and profiling-input builders
           (``seq_len`` of :data:`PARAM_SINKS`, by keyword or at its position), and an
           ordering comparison with a count that holds one block per sequence
           (:data:`COMPARE_SINKS`, a Mamba cache's block count), where a request count
           belongs.
========== =================================================================================

Report-only: what the right count is (``max_model_len``, ``max_num_reqs``, a count
divided by the tokens per request) depends on what the code means, so no fix is offered.
"""

from __future__ import annotations

import dataclasses
import re
from typing import TYPE_CHECKING

from cgguard.static.core.needles import needles_of
from cgguard.static.rules import model as capture_model

if TYPE_CHECKING:
    from cgguard.static.core.flow import Hit
    from cgguard.static.core.patterns import Model

CODE = "CGG003"
NAME = "tokens-where-requests-belong"

# A batch's token budget, and the capture size (a batch's token count too).
TOKEN_BUDGET_ATTRS = frozenset({"max_num_tokens", "max_num_batched_tokens"})
SOURCE_ATTRS = TOKEN_BUDGET_ATTRS | capture_model.CAPTURE_SIZE_ATTRS
SOURCE_LISTS = capture_model.CAPTURE_LIST_NAMES
# What its sources' values count: a batch's tokens (CGG003 reports them widened or not).
TOKENS_LABEL = "a batch's tokens"
# A min() with one of these is at most a request count or one sequence's length.
BOUNDS = frozenset({"max_num_reqs", "max_num_seqs", "max_model_len"})
# What a count that derives from no source counts: one of BOUNDS, or tokens (this model names
# no token count besides its sources: only a followed value counts tokens where the flow asks
# a count's unit).
BOUND_LABEL = "requests or one sequence's length"
UNBOUNDED_LABEL = "tokens"
# One item's sequence length of the builders of dummy (profiling) inputs: (callee, parameter,
# position where it may be passed positionally, a method's receiver not counted).
PARAM_SINKS: tuple[tuple[str, str, int | None], ...] = (
    ("dummy_data_for_profiling", "seq_len", None),  # vLLM 0.7-0.8's input registry
    ("get_decoder_dummy_data", "seq_len", None),  # 0.8-0.11's multimodal registry
    ("get_dummy_processor_inputs", "seq_len", 0),
    ("get_dummy_inputs", "seq_len", None),
    ("get_dummy_mm_data", "seq_len", 0),
    # The number of requests a drafter's dummy run samples (vLLM Ascend's proposers: the
    # merged draft step, called directly or through the graph wrapper held as _runnable).
    ("_run_merged_draft", "batch_size", 1),
    ("_runnable", "batch_size", 1),
)
# A dummy run's token count, as the drafter is handed it, and once padded across
# data-parallel ranks (the first element of what the sync returns).
SOURCE_PARAMS = frozenset({"num_tokens"})
TUPLE_PASSTHROUGH_CALLS = frozenset({"_sync_metadata_across_dp"})
# Counts that hold one block per sequence: ordering a token count against one asks how many
# sequences fit, which a request count answers.
COMPARE_SINKS = frozenset({"num_mamba_cache_blocks"})

# The reverse, a request count where a count of tokens belongs: FlashInfer's decode
# CUDA-graph bound (``_decode_cudagraph_max_bs``), compared with a decode batch's tokens,
# where each decode carries ``1 + num_spec_tokens`` tokens. A product with the tokens per
# request converts a request count into tokens.
REQUEST_SOURCE_ATTRS = frozenset({"max_num_reqs", "max_num_seqs"})
TOKEN_BOUND_STORES = frozenset({"_decode_cudagraph_max_bs"})
# What the reverse's sources count: requests.
REQUESTS_LABEL = "a batch's requests"
# Nothing bounds a request count in the reverse (it names no bound); what bounds nothing is
# a followed count or its product with the tokens per request (a count of tokens).
REQUESTS_BOUND_LABEL = "no bound (the reverse names none)"
REQUESTS_UNBOUNDED_LABEL = "requests, or tokens converted from them"
TOKENS_PER_REQUEST = frozenset(
    {
        "num_spec_tokens",
        "num_speculative_tokens",
        "num_spec",
        "decode_query_len",
        "uniform_decode_query_len",
        "num_query_per_req",
    }
)
REQUEST_NEEDLES = needles_of(REQUEST_SOURCE_ATTRS)
REQUEST_SOURCE_NAMES = tuple(sorted(REQUEST_SOURCE_ATTRS))
# The reverse's one sink is a store of the bound: its sink word is the bound's name.
REQUEST_SINK_NAMES = tuple(sorted(TOKEN_BOUND_STORES))

NEEDLES = needles_of(SOURCE_ATTRS | SOURCE_LISTS | SOURCE_PARAMS)
SOURCE_NAMES = tuple(sorted(SOURCE_ATTRS | SOURCE_LISTS | SOURCE_PARAMS))
# Every sink above names one of these words where it is reached (the configuration derives
# its sink words from them, rules/configs.py): a builder's name where it is called (not
# where a model defines its own ``get_dummy_mm_data``), or the block count's name.
SINK_CALLEES = tuple(dict.fromkeys(c for c, _, _ in PARAM_SINKS))
SINK_NAMES = tuple(sorted(COMPARE_SINKS))


def model() -> Model:
    """CGG001's model with CGG003's sources, bounds and sinks (its propagators kept)."""
    from cgguard.static.core.patterns import ParamSink

    return dataclasses.replace(
        capture_model.model(),
        source_attrs=SOURCE_ATTRS,
        source_lists=SOURCE_LISTS,
        bound_counts=BOUNDS,
        unbounded_counts=frozenset(),
        store_sinks=frozenset(),
        param_sinks=tuple(ParamSink(c, p, at) for c, p, at in PARAM_SINKS),
        compare_sinks=COMPARE_SINKS,
        source_params=SOURCE_PARAMS,
        tuple_passthrough_calls=TUPLE_PASSTHROUGH_CALLS,
        placement_names=re.compile(r"(?!)"),  # no local is where a finding goes
        source_label=TOKENS_LABEL,
        bound_label=BOUND_LABEL,
        unbounded_label=UNBOUNDED_LABEL,
    )


def requests_model() -> Model:
    """The reverse configuration: request counts followed to a bound counted in tokens,
    converted by a product with the tokens each request decodes."""
    return dataclasses.replace(
        capture_model.model(),
        source_attrs=REQUEST_SOURCE_ATTRS,
        source_lists=frozenset(),
        bound_counts=frozenset(),
        unbounded_counts=frozenset(),
        store_sinks=TOKEN_BOUND_STORES,
        param_sinks=(),
        placement_names=re.compile(r"(?!)"),
        converting_factors=TOKENS_PER_REQUEST,
        source_label=REQUESTS_LABEL,
        bound_label=REQUESTS_BOUND_LABEL,
        unbounded_label=REQUESTS_UNBOUNDED_LABEL,
    )


def message(hit: Hit) -> str:
    """One line: what meets what, and what belongs there (the page says why)."""
    from cgguard.static.core import ir
    from cgguard.static.core.flow import source_name

    named = source_name(hit.source)
    if named is None and isinstance(hit.source, ir.Name):
        named = hit.source.id  # a parameter holding the count (SOURCE_PARAMS)
    source = f"`{named or 'a token count'}`"
    if hit.sink.rsplit(".", 1)[-1] in TOKEN_BOUND_STORES:
        return (
            f"`{hit.sink}` counts tokens; {source} counts requests: multiply it by "
            "`1 + num_spec_tokens`"
        )
    if hit.sink.startswith("compared with "):
        other = hit.sink.removeprefix("compared with ")
        return (
            f"{source} counts tokens, `{other}` sequences: compare a request count (`max_num_reqs`)"
        )
    param = _sink_param(hit.sink)
    if param == "batch_size":
        return (
            f"`{hit.sink}` takes requests, {source} tokens: bound it by `max_num_reqs` on "
            "every path"
        )
    if param == "seq_len":
        return f"`{hit.sink}` gets {source}, a batch's tokens; one item is at most `max_model_len` tokens"
    # A helper's return that every caller hands to one of the sinks.
    return f"`{hit.sink}` gets {source}, a batch's tokens, where requests or one sequence's length belong"


def _sink_param(sink: str) -> str | None:
    """The parameter a hit's sink names: ``seq_len=`` by keyword, ``callee(...)`` at the
    callee's position; None for a helper's return (``helper()``)."""
    if sink.endswith("="):
        return sink[:-1]
    if sink.endswith("(...)"):
        callee = sink.removesuffix("(...)")
        return next((p for c, p, at in PARAM_SINKS if c == callee and at is not None), None)
    return None


def fix_terms(
    hit: Hit, text: str, shown: str, none_tested: frozenset[str] | None = None
) -> tuple[str | None, str | None]:
    """No fix: which count belongs there depends on what the code means."""
    return None, None
