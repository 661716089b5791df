"""CGG003 is a configuration of the same engine: its sinks are named by its sink words, and
the three rules run in one check. The released pairs it was made from are rule cases (vLLM
0.10.1/0.11.0's runner, 0.18.0/0.25.0's compilation config, flagged before and silent after;
vLLM Ascend 0.13.0 and 0.23.0's drafters, flagged, with 0.23.0's bounded on every path
silent: no release of it is fixed yet); the installed release's whole tree has no finding
(tests/static/test_vllm_source.py)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from cgguard.static.driver.check import check_source
from cgguard.static.driver.context import RunContext
from cgguard.static.rules import cgg003
from cgguard.static.rules import model as capture_model
from cgguard.static.rules.configs import CONFIGURATIONS, TOKENS_WHERE_REQUESTS_BELONG

mentions_sink_word = TOKENS_WHERE_REQUESTS_BELONG.mentions_sink_word


def test_every_sink_names_a_sink_word():
    names = [c for c, _, _ in cgg003.PARAM_SINKS] + sorted(cgg003.COMPARE_SINKS)
    assert names and all(mentions_sink_word(n) for n in names), names
    assert all(mentions_sink_word(n.encode()) for n in names)
    assert not mentions_sink_word("run_attention(seq_len=n)")
    # A model defining its own builder holds no call of one.
    assert not mentions_sink_word("    def get_dummy_mm_data(\n        self, seq_len, mm_counts")
    assert mentions_sink_word(b"x = builder.get_dummy_mm_data(n, counts)")


def test_the_configurations_needles_are_derived_from_their_sources():
    for c in CONFIGURATIONS:
        model = c.model()
        assert c.needles == model.needles(), c.name
        assert c.source_names == model.source_names(), c.name


ALL_THREE = """\
class ForkModelRunner(GPUModelRunner):
    def _init_minimal_kv_cache_for_profiling(self) -> None:
        self.cache_config.num_gpu_blocks_override = self.compilation_config.max_cudagraph_capture_size
        rows = max(self.compilation_config.max_cudagraph_capture_size, self.max_num_reqs)
        self.cache_config.num_gpu_blocks_override = rows

    def profile_mm(self, modality):
        return self.mm_registry.get_decoder_dummy_data(seq_len=self.max_num_tokens)
"""


def test_all_three_rules_run_in_one_check():
    found = check_source(ALL_THREE, "runner.py", context=RunContext())
    assert [(f.line, f.code) for f in found] == [(3, "CGG001"), (5, "CGG002"), (8, "CGG003")]
    # A run that selects CGG001 alone runs its configuration alone.
    alone = RunContext(lambda code: code == "CGG001")
    assert [c.name for c in alone.configurations] == ["capture-size-blocks"]
    assert [f.code for f in check_source(ALL_THREE, "runner.py", context=alone)] == [
        "CGG001",
        "CGG002",
    ]
    only3 = RunContext(lambda code: code == "CGG003")
    assert [f.code for f in check_source(ALL_THREE, "runner.py", context=only3)] == ["CGG003"]


def test_the_newest_release_compares_requests_with_the_mamba_blocks(vllm_dir):
    # vLLM 0.18.0 compared the capture size (rules/CGG003/cases/flagged/
    # vllm_0_18_0_mamba_capture_cap); 0.25.0 and the installed release compare max_num_reqs.
    fixed = vllm_dir / "config/compilation.py"
    assert "max_num_reqs > kv_cache_config.num_blocks" in fixed.read_text()
    assert check_source(fixed.read_text(), str(fixed), context=RunContext()) == []


def test_a_token_count_from_another_modules_helper_is_not_followed(tmp_path):
    """What the rule page says of its reach: a helper in the same file is followed, one in
    another module of the project is not (CGG001 follows those)."""
    import subprocess
    import sys

    (tmp_path / ".git").mkdir()
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "fork"\n')
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    helper = "def token_budget(scheduler_config):\n    return scheduler_config.max_num_batched_tokens\n"
    call = (
        "class Runner:\n"
        "    def dummy(self, registry, scheduler_config):\n"
        "        return registry.get_decoder_dummy_data(seq_len=token_budget(scheduler_config))\n"
    )
    (pkg / "budget.py").write_text(helper)
    (pkg / "runner.py").write_text("from pkg.budget import token_budget\n\n\n" + call)
    (pkg / "same_file.py").write_text(helper + "\n\n" + call)
    proc = subprocess.run(
        [sys.executable, "-m", "cgguard", "check", "--select", "CGG003", "."],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )
    flagged = sorted(line.split(":")[0] for line in proc.stdout.splitlines() if ": CGG003 " in line)
    assert flagged == ["pkg/same_file.py"], proc.stdout + proc.stderr


# ---- a drafter's number of requests taken from its token count (vLLM Ascend's proposers) ---

CASES = Path(__file__).resolve().parents[2] / "rules" / "CGG003" / "cases"
DRAFTER_0_23_0 = CASES / "flagged" / "vllm_ascend_0_23_0_drafter_dummy_run.pycase"
PROFILE_ONLY_BOUND = (
    "        # TODO: temporarily hack here, we should find out batch_size for profile_run\n"
    "        if is_profile:\n"
    "            batch_size = min(batch_size, self.runner.max_num_reqs)\n"
)


def _cgg003(text: str, path: str = "llm_base_proposer.py") -> list[tuple[int, str]]:
    only3 = RunContext(lambda code: code == "CGG003")
    return [(f.line, f.message) for f in check_source(text, path, context=only3)]


def test_a_drafters_release_is_flagged_and_silent_once_bounded_on_every_path():
    """vLLM Ascend 0.18.0 to 0.23.0.post1 (the newest release) bound the drafter's request
    count by max_num_reqs under ``if is_profile:`` only; the same code with the bound taken
    on every path (rules/CGG003/cases/silent/vllm_ascend_0_23_0_drafter_bounded) is silent."""
    released = DRAFTER_0_23_0.read_text()
    assert PROFILE_ONLY_BOUND in released
    line = released.splitlines().index("                batch_size=batch_size,  # expect: CGG003")
    assert _cgg003(released) == [
        (
            line + 1,
            "`batch_size=` takes requests, `num_tokens` tokens: bound it by `max_num_reqs` on "
            "every path",
        )
    ]
    bounded = released.replace(
        PROFILE_ONLY_BOUND, "        batch_size = min(batch_size, self.runner.max_num_reqs)\n"
    )
    assert _cgg003(bounded) == []
    # The silent case holds that code (its header aside).
    twin = (CASES / "silent" / "vllm_ascend_0_23_0_drafter_bounded.pycase").read_text()
    body = bounded.replace("  # expect: CGG003", "")
    assert twin[twin.index("class ") :] == body[body.index("class ") :]


def test_the_drafters_count_is_followed_through_the_data_parallel_sync():
    """The release's dummy run reassigns its token count from the data-parallel sync
    (``(num_tokens, across, _) = self.runner._sync_metadata_across_dp(num_tokens, ...)``): the
    sync's first element carries the count (``tuple_passthrough_calls``), and the dummy
    run's parameter is where it enters (``source_params``). Without either row, no finding."""
    from cgguard.static.core.analysis import Analysis

    released = DRAFTER_0_23_0.read_text()
    model = cgg003.model()

    def lines(m) -> list[int]:
        program = Analysis(m)
        return sorted(h.node.span.line for h in program.hits(program.add("p.py", released)))

    assert lines(model) == [69]
    assert lines(dataclasses.replace(model, tuple_passthrough_calls=frozenset())) == []
    assert lines(dataclasses.replace(model, source_params=frozenset())) == []
    # CGG001's model has neither row: the same file is nothing to it.
    assert lines(capture_model.model()) == []


def test_the_drafters_sinks_count_requests_and_name_a_sink_word():
    assert mentions_sink_word("            self._runnable(\n")
    assert mentions_sink_word(b"self._run_merged_draft(num_tokens, batch_size)")
    assert not mentions_sink_word("    def _run_merged_draft(\n        self, n, batch_size")
    # A batch_size= of any other call is nothing; a request count handed in is silent.
    text = (
        "class P:\n"
        "    def dummy_run(self, num_tokens, num_reqs=0):\n"
        "        self.sampler.warm_up(batch_size=num_tokens)\n"
        "        self._runnable(num_input_tokens=num_tokens, batch_size=num_reqs)\n"
        "        self._runnable(num_input_tokens=num_tokens, batch_size=num_tokens)\n"
    )
    assert [line for line, _ in _cgg003(text)] == [5]


# ---- the reverse: a request count as FlashInfer's decode CUDA-graph bound (in tokens) ------


def test_flashinfers_release_is_flagged_before_its_bound_counts_tokens_and_silent_after():
    """vLLM 0.11.0 bounded FlashInfer's decode CUDA graphs by min(max_num_seqs, capture size);
    0.11.1 multiplied by the tokens each decode carries (both rule cases, from the wheels);
    the installed release keeps the product."""
    released = (CASES / "flagged" / "vllm_0_11_0_flashinfer_decode_bound.pycase").read_text()
    line = 1 + next(i for i, t in enumerate(released.splitlines()) if "# expect: CGG003" in t)
    assert _cgg003(released, "flashinfer.py") == [
        (
            line,
            "`self._decode_cudagraph_max_bs` counts tokens; `max_num_seqs` counts requests: "
            "multiply it by `1 + num_spec_tokens`",
        )
    ]
    fixed = (CASES / "silent" / "vllm_0_11_1_flashinfer_decode_bound.pycase").read_text()
    assert "(1 + num_spec_tokens) * max_num_reqs" in fixed
    assert _cgg003(fixed, "flashinfer.py") == []
    # The product alone is what makes it silent: without the model's converting factors
    # the fixed release is flagged too.
    from cgguard.static.core.analysis import Analysis

    def lines(m) -> list[int]:
        program = Analysis(m)
        return sorted(h.node.span.line for h in program.hits(program.add("f.py", fixed)))

    assert lines(cgg003.requests_model()) == []
    assert lines(dataclasses.replace(cgg003.requests_model(), converting_factors=frozenset()))


def test_the_installed_flashinfer_builder_multiplies_its_bound(vllm_dir):
    builder = vllm_dir / "v1/attention/backends/flashinfer.py"
    text = builder.read_text()
    assert "_decode_cudagraph_max_bs = (1 + num_spec_tokens) * max_num_reqs" in text
    assert _cgg003(text, str(builder)) == []


def test_the_reverse_is_a_configuration_of_the_same_rule():
    from cgguard.static.rules.configs import REQUESTS_WHERE_TOKENS_BELONG as reverse

    only3 = RunContext(lambda code: code == "CGG003")
    assert reverse in only3.configurations and reverse.codes == ("CGG003",)
    assert all(reverse.mentions_sink_word(n) for n in cgg003.TOKEN_BOUND_STORES)
    # A Mamba builder's bound counts requests: not its sink word.
    assert not reverse.mentions_sink_word("self.decode_cudagraph_max_bs = max_num_seqs")


def test_each_message_is_one_short_line_naming_what_belongs():
    # Every flagged case's message: at most 120 characters (the why is on the rule's page),
    # naming the count that belongs there or what to multiply by.
    from cgguard.static.workflow.ruledocs import all_rules

    (rule,) = [r for r in all_rules() if r.code == cgg003.CODE]
    messages = {
        f.message
        for case in rule.cases("flagged")
        for f in check_source(case.source(), str(case.path))
        if f.code == cgg003.CODE
    }
    assert len(messages) >= 8
    for message in messages:
        assert len(message) <= 120 and "\n" not in message, message
        assert any(
            word in message for word in ("`max_num_reqs`", "`max_model_len`", "`1 + num_spec_tokens`", "requests or")
        ), message
