"""One program runs every selected rule in one pass over a file (``core/program.py``,
``core/modulepass.py``): the file is lowered once, a scope several lanes walk is walked once
with their states side by side (``core/controlflow.py``), and each lane finds what it finds
alone."""

from __future__ import annotations

import pytest

from cgguard.static.core import controlflow, modulepass
from cgguard.static.driver.check import check_source
from cgguard.static.driver.context import RunContext
from cgguard.static.workflow.ruledocs import all_rules

# One method where each of the three configurations has a finding, and where an ``if``
# clamps the token budget for CGG003's lane only (the capture size's lane follows no budget).
EVERY_RULE = """\
class ForkModelRunner(GPUModelRunner):
    def _init_minimal_kv_cache_for_profiling(self, modality):
        cap = self.compilation_config.max_cudagraph_capture_size
        self.cache_config.num_gpu_blocks_override = cap or 1
        budget = self.scheduler_config.max_num_batched_tokens
        data = self.mm_registry.get_decoder_dummy_data(
            model_config=self.model_config, seq_len=budget, mm_counts={modality: 1}
        )
        self._decode_cudagraph_max_bs = self.max_num_reqs
        if self.max_num_reqs >= budget:
            self.processor.get_dummy_inputs(seq_len=budget, mm_counts={modality: 1})
        return data
"""

CONFIGURATIONS_ALONE = {
    "capture-size-blocks": {"CGG001", "CGG002"},
    "tokens-where-requests-belong": {"CGG003"},
}


def _walkers(monkeypatch) -> list[tuple[int, int]]:
    """(the first line walked, how many lanes) for every walk of a scope's statements."""
    walks: list[tuple[int, int]] = []
    real = controlflow.Walker.run

    def run(self, body):
        if body and not any(w[0] == body[0].span.line for w in walks):
            walks.append((body[0].span.line, len(self.lanes)))
        return real(self, body)

    monkeypatch.setattr(controlflow.Walker, "run", run)
    return walks


def _key(findings) -> list[tuple]:
    return sorted(
        (f.line, f.col, f.code, f.message, None if f.fix is None else repr(f.fix)) for f in findings
    )


def _alone(text: str, path: str, codes: set[str]) -> list:
    return check_source(text, path, context=RunContext(lambda code: code in codes))


def test_every_lane_walks_a_method_they_share_once(monkeypatch):
    passes: list[int] = []
    real = modulepass.once

    def once(lanes):
        passes.append(len(lanes))
        return real(lanes)

    monkeypatch.setattr(modulepass, "once", once)
    walks = _walkers(monkeypatch)
    found = check_source(EVERY_RULE, "/fork/runner.py")
    assert [(f.line, f.code) for f in found] == [(4, "CGG001"), (7, "CGG003"), (9, "CGG003")]
    assert passes == [3]  # one pass over the file, with a lane per configuration
    # The method's body (from line 3) is walked once, for the three lanes side by side.
    assert (3, 3) in walks


def test_a_lane_finds_the_same_beside_the_others_as_alone(monkeypatch):
    walks = _walkers(monkeypatch)
    path = "/fork/runner.py"
    joint = check_source(EVERY_RULE, path)
    assert walks and max(lanes for _, lanes in walks) == 3
    alone = [f for codes in CONFIGURATIONS_ALONE.values() for f in _alone(EVERY_RULE, path, codes)]
    assert _key(joint) == _key(alone)


def _combined_cases():
    """Each of CGG001's and CGG002's flagged cases of one file, followed by one of
    CGG003's (in turn): a file where two configurations' lanes run on one text."""
    rules = {rule.code: rule for rule in all_rules()}
    others = rules["CGG003"].cases("flagged")
    at = 0
    for code in ("CGG001", "CGG002"):
        for case in rules[code].cases("flagged"):
            other = others[at % len(others)]
            at += 1
            text = case.source() + "\n\n" + other.source()
            yield pytest.param(text, str(case.path), id=f"{case.id}+{other.path.stem}")


@pytest.mark.parametrize(("text", "path"), list(_combined_cases()))
def test_a_rule_case_with_another_rules_case_finds_each_alone(text: str, path: str):
    joint = check_source(text, path)
    alone = [f for codes in CONFIGURATIONS_ALONE.values() for f in _alone(text, path, codes)]
    assert _key(joint) == _key(alone)
    assert {f.code for f in joint} >= {"CGG003"}


def test_side_by_side_keeps_each_lanes_order_and_pairs_the_heads():
    queues = {0: ["a", "b", "c"], 1: ["b", "c"], 2: ["a", "c", "d"]}
    groups = list(modulepass.side_by_side(queues, lambda item: item))
    assert groups == [
        [(0, "a"), (2, "a")],
        [(0, "b"), (1, "b")],
        [(0, "c"), (1, "c"), (2, "c")],
        [(2, "d")],
    ]
    for lane, queue in queues.items():
        assert [item for group in groups for at, item in group if at == lane] == queue


def test_side_by_side_reads_a_queue_only_once_its_last_group_is_done():
    """A lane's first walk stops at its first hit, as it would alone: its queue is not read
    further (nor its functions' text asked) once a group it was in decided it."""
    read: list[tuple[int, str]] = []
    decided: set[int] = set()

    def lane(at: int, items: str):
        for item in items:
            if at in decided:
                return
            read.append((at, item))
            yield item

    for group in modulepass.side_by_side({0: lane(0, "abc"), 1: lane(1, "abc")}, str):
        if group[0][1] == "a":
            decided.add(0)
    assert read == [(0, "a"), (1, "a"), (1, "b"), (1, "c")]


def test_a_lane_that_follows_no_import_is_one_analysis_of_no_project(tmp_path):
    """CGG003's configurations read each file as outside any project: every project's
    program holds the same analysis as their lane, with no root; CGG001's lane is the
    project's own."""
    context = RunContext()
    first, second = (tmp_path / "a", tmp_path / "b")
    one, other = context.program(str(first)), context.program(str(second))
    for name in ("tokens-where-requests-belong", "requests-where-tokens-belong"):
        assert one.lane(name) is other.lane(name)
        assert one.lane(name).root is None
    assert one.lane("capture-size-blocks").root == str(first)
    assert other.lane("capture-size-blocks").root == str(second)
