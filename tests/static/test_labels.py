"""Units are labels the configurations name; the core names none.

A source's value carries its model's ``source_label``; ``max()`` adds ``widened_label``;
the transfers join them (a helper that widens what it is handed widens the caller's count).
Which rule reports a hit is the configuration's word, by the labels its count carries. A
count without a source's labels carries the model's ``bound_label`` (a sanitizer's bound)
or ``unbounded_label`` (a count that bounds nothing).
"""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import pytest

from cgguard.static.core import pyast
from cgguard.static.core.analysis import Analysis
from cgguard.static.core.flow import ScopeFlow
from cgguard.static.rules import model
from cgguard.static.rules.configs import CAPTURE_SIZE_BLOCKS, CONFIGURATIONS
from tests.conftest import REPO

CORE = REPO / "cgguard" / "static" / "core"

# One count of each labelling: the capture size itself, widened by max(), and widened by a
# helper that takes max() of what it is handed.
SOURCE = """\
def widen(n):
    return max(n, 64)


def profile(vllm_config):
    cap = vllm_config.compilation_config.max_cudagraph_capture_size
    vllm_config.cache_config.num_gpu_blocks_override = cap or 16


def profile_wide(vllm_config):
    cap = vllm_config.compilation_config.max_cudagraph_capture_size
    vllm_config.cache_config.num_gpu_blocks_override = max(cap, 16)


def profile_through_helper(vllm_config):
    cap = vllm_config.compilation_config.max_cudagraph_capture_size
    vllm_config.cache_config.num_gpu_blocks_override = widen(cap)
"""


def _strings(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
    }


def _labels_by_line(source_model, tmp_path: Path) -> dict[int, frozenset[str]]:
    path = tmp_path / "plugin.py"
    path.write_text(SOURCE)
    program = Analysis(source_model)
    hits = program.hits(program.add(str(path), SOURCE))
    return {h.node.span.line: h.labels for h in hits}


def test_the_core_spells_no_configurations_label():
    followed, counted = set(), set()
    for configuration in CONFIGURATIONS:
        m = configuration.model()
        followed |= {m.source_label, m.widened_label}
        counted |= {m.bound_label, m.unbounded_label}
    assert len(followed) == 4  # capture-size tokens, widened by max(), a batch's tokens, requests
    # CGG001's requests and tokens, CGG003's bounds (and its tokens), the reverse's two
    assert len(counted) == 5
    assert {"requests", "tokens"} <= counted
    for path in sorted(CORE.glob("*.py")):
        assert not (_strings(path) & (followed | counted)), path.name


def test_values_carry_their_models_labels_and_max_joins_one(tmp_path: Path):
    m = model.model()
    wide = frozenset({m.source_label, m.widened_label})
    assert _labels_by_line(m, tmp_path) == {
        7: frozenset({m.source_label}),
        12: wide,
        17: wide,  # widened inside the helper it was handed to
    }


def test_renamed_labels_find_the_same_hits_and_the_configuration_maps_them(tmp_path: Path):
    original = _labels_by_line(model.model(), tmp_path)
    renamed_model = dataclasses.replace(
        model.model(), source_label="apples", widened_label="more apples"
    )
    renamed = _labels_by_line(renamed_model, tmp_path)
    assert sorted(renamed) == sorted(original)
    assert renamed[7] == {"apples"} and renamed[12] == renamed[17] == {"apples", "more apples"}
    # The rules are the configuration's, by label: the same map over the renamed labels
    # gives the same codes.
    rules = dataclasses.replace(
        CAPTURE_SIZE_BLOCKS, rules=(("more apples", "CGG002"), ("apples", "CGG001"))
    )
    assert [rules.rule_for(renamed[line]) for line in (7, 12, 17)] == [
        CAPTURE_SIZE_BLOCKS.rule_for(original[line]) for line in (7, 12, 17)
    ]
    assert rules.rule_for(renamed[7]) == "CGG001"
    assert rules.rule_for(renamed[12]) == "CGG002"


def test_a_count_no_rule_reports_is_an_error_that_names_it():
    with pytest.raises(ValueError, match="no rule reports a count labelled"):
        CAPTURE_SIZE_BLOCKS.rule_for(frozenset({"pears"}))


def test_where_paths_meet_a_local_keeps_the_first_paths_labels(tmp_path: Path):
    # Joined there, the widened second path would make this CGG002's suggestion; kept, it is
    # CGG001 with its safe fix at the sink, which bounds both paths.
    source = """\
def profile(vllm_config, c):
    if c:
        n = vllm_config.compilation_config.max_cudagraph_capture_size
    else:
        n = max(vllm_config.compilation_config.max_cudagraph_capture_size, 16)
    vllm_config.cache_config.num_gpu_blocks_override = n
"""
    from cgguard.static.driver.check import check_source

    path = tmp_path / "plugin.py"
    path.write_text(source)
    (finding,) = check_source(source, str(path))
    assert finding.code == "CGG001" and finding.line == 6
    assert finding.fix is not None and finding.fix.applicability == "safe"
    assert "min(vllm_config.scheduler_config.max_num_seqs, n) or 1" in finding.fix.edits[0].text


# Counts without a source's labels: a bound (a local, a helper's return, the if clamp, the
# same bound on both paths), and counts that bound nothing (a token count, one path's token
# count, a sum of a token count and a request count); a fix takes a local holding a bound.
COUNTS = """\
def max_reqs(runner):
    return runner.max_num_reqs


def bounded_by_a_local(runner, cache_config):
    reqs = runner.max_num_reqs
    cap = runner.compilation_config.max_cudagraph_capture_size
    cache_config.num_gpu_blocks_override = min(cap, reqs) or 1


def bounded_by_a_helper(runner, cache_config):
    cap = runner.compilation_config.max_cudagraph_capture_size
    cache_config.num_gpu_blocks_override = min(cap, max_reqs(runner)) or 1


def bounded_by_the_clamp(runner, cache_config):
    cap = runner.compilation_config.max_cudagraph_capture_size
    if cap > runner.max_num_reqs:
        cap = runner.max_num_reqs
    cache_config.num_gpu_blocks_override = cap


def bounded_on_both_paths(runner, cache_config, c):
    if c:
        n = runner.max_num_reqs
    else:
        n = runner.max_num_seqs
    cap = runner.compilation_config.max_cudagraph_capture_size
    cache_config.num_gpu_blocks_override = min(cap, n) or 1


def tokens(runner, cache_config):
    toks = runner.max_num_tokens
    cap = runner.compilation_config.max_cudagraph_capture_size
    cache_config.num_gpu_blocks_override = min(cap, toks) or 1  # found


def tokens_on_one_path(runner, cache_config, c):
    if c:
        n = runner.max_num_reqs
    else:
        n = runner.max_num_tokens
    cap = runner.compilation_config.max_cudagraph_capture_size
    cache_config.num_gpu_blocks_override = min(cap, n) or 1  # found


def tokens_and_requests(runner, cache_config):
    toks = runner.max_num_tokens
    n = toks + runner.max_num_reqs
    cap = runner.compilation_config.max_cudagraph_capture_size
    cache_config.num_gpu_blocks_override = min(cap, n) or 1  # found


def the_fix_takes_a_local(cc, cache_config, scheduler):
    reqs = scheduler.max_num_seqs
    cache_config.num_gpu_blocks_override = cc.max_cudagraph_capture_size  # found
"""


def _count_hits(source_model, tmp_path: Path) -> list[tuple[int, frozenset[str], str | None]]:
    path = tmp_path / "plugin.py"
    path.write_text(COUNTS)
    program = Analysis(source_model)
    hits = program.hits(program.add(str(path), COUNTS))
    return sorted((h.node.span.line, h.labels, h.request) for h in hits)


def test_renamed_bound_and_unbounded_labels_find_the_same_hits(tmp_path: Path):
    m = model.model()
    original = _count_hits(m, tmp_path)
    # The counts that bound nothing are found, the bounds are not; the fix takes ``reqs``.
    found = [i for i, text in enumerate(COUNTS.splitlines(), 1) if text.endswith("# found")]
    assert [line for line, _, _ in original] == found
    assert [request for _, _, request in original] == [*["runner.max_num_reqs"] * 3, "reqs"]
    for bound, unbounded in (("apples", "pears"), (m.unbounded_label, m.bound_label)):
        renamed = dataclasses.replace(m, bound_label=bound, unbounded_label=unbounded)
        assert _count_hits(renamed, tmp_path) == original, (bound, unbounded)


def test_count_kind_answers_with_the_models_labels():
    body = pyast.parse(
        "reqs = self.max_num_reqs\n"
        "toks = self.max_num_tokens\n"
        "reqs * 2\n"
        "toks + 1\n"
        "reqs + toks\n"
        "reqs + unknown()\n"
    ).body
    for m in (model.model(), dataclasses.replace(model.model(), bound_label="apples")):
        flow = ScopeFlow(m, None)
        flow.run(body[:2])
        kinds = [flow.count_kind(stmt.value) for stmt in body[2:]]
        assert kinds == [m.bound_label, m.unbounded_label, None, None]


def test_a_model_whose_bound_and_unbounded_labels_are_one_is_an_error():
    with pytest.raises(ValueError, match="bound_label and unbounded_label are both 'apples'"):
        dataclasses.replace(model.model(), bound_label="apples", unbounded_label="apples")
