"""Units are labels the configurations name; the core names none.

A source's value carries its model's ``source_label``; ``max()`` adds ``widened_label``;
the transfers join them (a helper that widens what it is handed widens the caller's count).
Which rule reports a hit is the configuration's word, by the labels its count carries.
"""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import pytest

from cgguard.static.core.program import Program
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
    program = Program(source_model)
    hits = program.hits(program.add(str(path), SOURCE))
    return {h.node.span.line: h.labels for h in hits}


def test_the_core_spells_no_configurations_label():
    labels = set()
    for configuration in CONFIGURATIONS:
        m = configuration.model()
        labels |= {m.source_label, m.widened_label}
    assert len(labels) == 4  # capture-size tokens, widened by max(), a batch's tokens, requests
    for path in sorted(CORE.glob("*.py")):
        assert not (_strings(path) & labels), path.name


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
