"""The model is the rule's only vocabulary: a new sink, or a new rule of the same kind, is
a change to the model's data, read by the same core (docs/architecture.md says how)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from cgguard.static.core.analysis import Analysis
from cgguard.static.core.patterns import ParamSink
from cgguard.static.rules.model import MODEL, NEEDLES, SOURCE_NAMES

RULES = Path(__file__).resolve().parents[2] / "rules"


def _hit_lines(model, text: str) -> list[int]:
    program = Analysis(model)
    return sorted(h.node.span.line for h in program.hits(program.add("plugin.py", text)))


def test_the_setattr_sink_is_one_row_of_the_model():
    text = (RULES / "CGG001/cases/flagged/sinks_setattr_override.pycase").read_text()
    without = dataclasses.replace(MODEL, setattr_calls=frozenset())
    # The capture size handed to setattr() is no finding without the row, one with it.
    assert 20 not in _hit_lines(without, text)
    assert _hit_lines(MODEL, text) == [6, 20]


def test_a_builders_parameter_is_one_row_of_the_model():
    # A sink is a parameter of a named callee: the same keyword on another call is none.
    text = (
        "def profile(builder, groups, vllm_config):\n"
        "    cap = vllm_config.compilation_config.max_cudagraph_capture_size\n"
        "    builder.get_kv_cache_config_from_groups(groups, num_blocks=cap)\n"
        "    launch_kernel(groups, num_blocks=cap)\n"
        "    get_profiling_kv_cache_config(vllm_config, groups, cap)\n"
        "    make_profiling_config(vllm_config, groups, cap)\n"
    )
    assert _hit_lines(MODEL, text) == [3, 5]
    kept = tuple(s for s in MODEL.param_sinks if s.param != "num_blocks")
    assert _hit_lines(dataclasses.replace(MODEL, param_sinks=kept), text) == [5]
    kernel = (ParamSink("launch_kernel", "num_blocks"),)
    assert _hit_lines(dataclasses.replace(MODEL, param_sinks=kernel), text) == [4]


def test_a_rule_of_the_same_kind_is_a_model():
    # A token count that reaches a request-count field: the same core, another model.
    tokens_as_requests = dataclasses.replace(
        MODEL,
        source_attrs=frozenset({"max_num_batched_tokens"}),
        source_lists=frozenset(),
        store_sinks=frozenset({"max_num_seqs"}),
        param_sinks=(),
        bound_counts=frozenset(),
    )
    text = (
        "def configure(scheduler_config, vllm_config):\n"
        "    tokens = vllm_config.scheduler_config.max_num_batched_tokens\n"
        "    scheduler_config.max_num_seqs = tokens\n"
        "    return SchedulerConfig(max_num_seqs=vllm_config.scheduler_config.max_num_batched_tokens)\n"
    )
    assert _hit_lines(tokens_as_requests, text) == [3, 4]
    assert _hit_lines(MODEL, text) == []
    # The byte prefilter's needles follow the model's sources.
    assert tokens_as_requests.needles() == ("num_batched",)


def test_the_prefilter_needles_are_derived_from_the_sources():
    assert MODEL.needles() == NEEDLES
    for name in MODEL.source_attrs | MODEL.source_lists:
        assert any(needle in name for needle in NEEDLES), name
    # The whole names a text with a needle is asked for next are the model's sources too.
    assert MODEL.source_names() == SOURCE_NAMES
    assert set(SOURCE_NAMES) == MODEL.source_attrs | MODEL.source_lists


def test_a_needle_without_a_source_name_is_not_a_source():
    from cgguard.static.driver.prefilter import might_match, names_a_source

    assert not might_match("def f(capture_size, batch_sizes):\n    return capture_size\n")
    assert not names_a_source(b"x = self.capture_size\n")
    assert might_match("n = cc.cudagraph_batch_sizes[-1]\n")
    assert names_a_source(b"n = cc.max_capture_size\n")
