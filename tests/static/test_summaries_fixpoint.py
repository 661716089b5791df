"""Summaries read while they are computed (recursion) are followed to a fixpoint: the readers
of a guess that turned out wrong are computed again, and nothing else is."""

from __future__ import annotations

from cgguard.static.core.analysis import Analysis
from cgguard.static.rules.model import model

TEXT = '''\
class NPUModelRunner(GPUModelRunner):
    def setup(self):
        self.graph_tokens = self.compilation_config.max_cudagraph_capture_size
        self.graph_input_ids = self.make_input_ids()

    def make_input_ids(self):
        return torch.zeros(self.graph_tokens, dtype=torch.int32)

    def _init_minimal_kv_cache_for_profiling(self):
        self.cache_config.num_gpu_blocks_override = self.graph_tokens or 1

    def unrelated(self):
        self.capture_sizes = self.compilation_config.cudagraph_capture_sizes
        return self.capture_sizes
'''


class CountingAnalysis(Analysis):
    def __init__(self) -> None:
        super().__init__(model(), None)
        self.rounds_run = 0

    def _hits_once(self, module):
        self.rounds_run += 1
        return super()._hits_once(module)


def test_a_member_read_back_while_it_is_set_is_found_in_a_second_round() -> None:
    program = CountingAnalysis()
    module = program.add("/fork/runner.py", TEXT)
    hits = program.hits(module)
    assert [h.node.span.line for h in hits] == [10]
    assert program.rounds_run == 2


def test_summaries_no_wrong_guess_reached_are_kept() -> None:
    program = CountingAnalysis()
    module = program.add("/fork/runner.py", TEXT)
    unrelated = module.classes["NPUModelRunner"].methods["unrelated"]
    make = module.classes["NPUModelRunner"].methods["make_input_ids"]
    first_round: dict[str, object] = {}
    once = program._hits_once

    def remember(m):
        found = once(m)
        if not first_round:
            first_round["unrelated"] = program.facts[id(unrelated.node)].flow
            first_round["make"] = program.facts[id(make.node)].flow
        return found

    program._hits_once = remember  # type: ignore[method-assign]
    program.hits(module)
    assert program.facts[id(unrelated.node)].flow is first_round["unrelated"]
    assert program.facts[id(make.node)].flow is not first_round["make"]


def test_a_module_without_recursion_takes_one_round() -> None:
    program = CountingAnalysis()
    text = TEXT.replace("        self.graph_input_ids = self.make_input_ids()\n", "")
    # The sink takes a helper's return: its summary reads nothing being computed.
    text = text.replace("self.graph_tokens or 1", "self.graph_size() or 1") + (
        "\n    def graph_size(self):\n"
        "        return self.compilation_config.max_cudagraph_capture_size\n"
    )
    module = program.add("/fork/runner.py", text)
    assert [h.node.span.line for h in program.hits(module)] == [16]  # at the return
    assert program.rounds_run == 1


def test_a_member_summarised_inside_its_readers_walk_takes_at_most_a_second_round() -> None:
    """Walked from its sinks first (ModuleHits._may_hit), the scope that reads a member is
    walked before the one that sets it: the setter is summarised inside the reader's walk,
    reads the member's summary while it is computed, and the module takes a second round,
    never more, with the same hits."""
    program = CountingAnalysis()
    text = TEXT.replace("        self.graph_input_ids = self.make_input_ids()\n", "")
    module = program.add("/fork/runner.py", text)
    assert [h.node.span.line for h in program.hits(module)] == [9]
    assert program.rounds_run <= 2
