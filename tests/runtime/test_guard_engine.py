"""The guard against real vLLM (CPU build) with a tiny dummy Llama, in one process.

The CPU worker never profiles CUDA-graph memory, so each test calls the live
runner's own ``_init_minimal_kv_cache_for_profiling`` (upstream's, or a fork's
copy with the pre-fix line) after setting the capture size to 512, then puts
the real KV cache back (see ``profiling_cache``).
"""

from __future__ import annotations

import gc
from contextlib import contextmanager

import pytest

from cgguard.runtime import GuardViolation, hooked_targets, install, uninstall
from cgguard.runtime.state import STATE
from tests.runtime.conftest import (
    CAPTURE_SIZE,
    LLM_KWARGS,
    MAX_NUM_SEQS,
    allocated_kv,
    kv_tensors_exist,
    profiling_cache,
    read_report,
)
from tests.runtime.forks import make_fork_runner

BOUND = MAX_NUM_SEQS  # min(4, 512) or 1


@pytest.fixture(scope="module")
def engine(tiny_llama, tmp_path_factory):
    """One LLM for the module; the guard is enabled by vLLM loading our entry point."""
    report = tmp_path_factory.mktemp("report") / "guard.jsonl"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
        mp.setenv("HF_HUB_OFFLINE", "1")
        mp.setenv("CGGUARD_MODE", "warn")
        mp.setenv("CGGUARD_REPORT", str(report))
        mp.delenv("VLLM_PLUGINS", raising=False)
        from vllm import LLM

        llm = LLM(model=str(tiny_llama), **LLM_KWARGS)
        runner = llm.llm_engine.engine_core.engine_core.model_executor.driver_worker.worker.model_runner
        yield llm, runner, report
    uninstall()
    del llm, runner
    gc.collect()


@pytest.fixture
def guard(engine, tmp_path):
    """Set the guard's mode for one test, with a fresh report; back to warn afterwards."""
    report = tmp_path / "events.jsonl"

    def set_mode(mode: str):
        assert install(mode, report) is True
        STATE.logged_once.discard("warn")
        return report

    yield set_mode
    install("warn", None)


@contextmanager
def runner_class(runner, cls):
    original = runner.__class__
    runner.__class__ = cls
    try:
        yield
    finally:
        runner.__class__ = original


def upstream_profiling_kv(runner) -> tuple[int, int]:
    with profiling_cache(runner):
        runner._init_minimal_kv_cache_for_profiling()
        return allocated_kv(runner)


def generate(llm) -> list[int]:
    from vllm import SamplingParams

    out = llm.generate([{"prompt_token_ids": [1, 2, 3, 4, 5]}], SamplingParams(max_tokens=4, temperature=0))
    return list(out[0].outputs[0].token_ids)


def checks(report) -> list[dict]:
    return [e for e in read_report(report) if e["event"] == "profiling_kv_cache"]


def test_entry_point_enabled_the_guard_in_the_engine_process(engine):
    _, _, report = engine
    installed = [e for e in read_report(report) if e["event"] == "installed"]
    assert installed and installed[0]["active"] is True and installed[0]["mode"] == "warn"
    assert "vllm.v1.worker.gpu_model_runner.GPUModelRunner.initialize_kv_cache" in installed[0]["targets"]
    # The CPU runner was imported after the plugin loaded: wrapped via __init_subclass__.
    assert "vllm.v1.worker.cpu_model_runner.CPUModelRunner.initialize_kv_cache" in hooked_targets()


def test_upstream_method_passes_in_raise_mode(engine, guard):
    _, runner, _ = engine
    report = guard("raise")
    assert upstream_profiling_kv(runner) == (BOUND, BOUND * 131_072)
    [event] = checks(report)
    assert event["action"] == "ok"
    assert event["via"] == "vllm.v1.worker.gpu_model_runner.GPUModelRunner._init_minimal_kv_cache_for_profiling"
    assert (event["requested_blocks"], event["bound_blocks"]) == (BOUND, BOUND)
    assert (event["max_num_reqs"], event["max_cudagraph_capture_size"]) == (MAX_NUM_SEQS, CAPTURE_SIZE)


def test_model_runner_v2_module_twin_is_checked(engine, guard):
    _, runner, _ = engine
    report = guard("raise")
    from vllm.v1.worker.gpu import cudagraph_utils

    with profiling_cache(runner):
        cudagraph_utils._init_minimal_kv_cache_for_profiling(runner)
        assert allocated_kv(runner)[0] == BOUND
    [event] = checks(report)
    assert event["via"] == "vllm.v1.worker.gpu.cudagraph_utils._init_minimal_kv_cache_for_profiling"
    assert event["action"] == "ok"


def test_fork_with_per_token_formula_is_stopped_before_any_kv_tensor(engine, guard):
    _, runner, _ = engine
    report = guard("raise")
    fork = make_fork_runner()  # defined after install: covered through __init_subclass__
    with runner_class(runner, fork), profiling_cache(runner):
        with pytest.raises(GuardViolation) as info:
            runner._init_minimal_kv_cache_for_profiling()
        assert not kv_tensors_exist(runner)
    message = str(info.value)
    for fact in ("512 blocks", "4 blocks", "max_num_reqs=4", "max_cudagraph_capture_size=512",
                 "67,108,864 bytes", "524,288 bytes", "0.26.0", "cgguard fix", "CGGUARD_MODE=fix"):
        assert fact in message
    [event] = checks(report)
    assert event["action"] == "raised"
    assert event["via"] == "tests.runtime.forks.PerTokenForkRunner._init_minimal_kv_cache_for_profiling"
    assert (event["requested_blocks"], event["requested_bytes"]) == (512, 512 * 131_072)


def test_legacy_signature_without_is_profiling_is_detected(engine, guard):
    _, runner, _ = engine
    guard("raise")
    fork = make_fork_runner(legacy=True)
    with runner_class(runner, fork), profiling_cache(runner):
        with pytest.raises(GuardViolation, match="512 blocks"):
            runner._init_minimal_kv_cache_for_profiling()
        assert not kv_tensors_exist(runner)


def test_fix_builds_the_upstream_cache_and_the_engine_still_generates(engine, guard):
    llm, runner, _ = engine
    guard("off")
    upstream = upstream_profiling_kv(runner)
    report = guard("fix")
    fork = make_fork_runner()
    with runner_class(runner, fork), profiling_cache(runner):
        runner._init_minimal_kv_cache_for_profiling()
        assert allocated_kv(runner) == upstream == (BOUND, BOUND * 131_072)
        # vLLM records the count it asked for; the guard corrects it to the one built.
        assert runner.cache_config.num_gpu_blocks == BOUND
        assert runner.cache_config.num_gpu_blocks_override is None
    [event] = checks(report)
    assert event["action"] == "fixed"
    assert (event["requested_blocks"], event["bound_blocks"]) == (512, BOUND)
    assert event["bound_bytes"] == upstream[1]
    assert len(generate(llm)) == 4


def test_fix_with_the_legacy_signature(engine, guard):
    _, runner, _ = engine
    guard("fix")
    with runner_class(runner, make_fork_runner(legacy=True)), profiling_cache(runner):
        runner._init_minimal_kv_cache_for_profiling()
        assert allocated_kv(runner) == (BOUND, BOUND * 131_072)


def test_warn_logs_once_and_changes_nothing(engine, guard, guard_log):
    _, runner, _ = engine
    report = guard("warn")
    fork = make_fork_runner()
    for _ in range(2):
        with runner_class(runner, fork), profiling_cache(runner):
            runner._init_minimal_kv_cache_for_profiling()
            assert allocated_kv(runner) == (512, 512 * 131_072)
    warnings = guard_log
    assert len(warnings) == 1
    assert "512 blocks" in warnings[0] and "4 blocks" in warnings[0]
    assert [e["action"] for e in checks(report)] == ["warned", "warned"]


def test_off_checks_nothing(engine, guard):
    _, runner, _ = engine
    report = guard("off")
    with runner_class(runner, make_fork_runner()), profiling_cache(runner):
        runner._init_minimal_kv_cache_for_profiling()
        assert allocated_kv(runner)[0] == 512
    assert checks(report) == []


def test_real_kv_cache_allocation_is_not_judged(engine, guard):
    """The full-size cache vLLM allocates for serving is far above the bound and must pass."""
    llm, runner, _ = engine
    report = guard("raise")
    with profiling_cache(runner):
        pass  # re-initialises the real cache (thousands of blocks) on exit
    assert runner.kv_cache_config.num_blocks > 512
    assert checks(report) == []
    assert len(generate(llm)) == 4


def test_subclass_defined_before_install_is_wrapped_at_install(engine, guard):
    _, runner, _ = engine
    uninstall()
    fork = make_fork_runner()
    assert "_init_minimal_kv_cache_for_profiling" in vars(fork)
    guard("raise")
    assert f"{fork.__module__}.{fork.__qualname__}._init_minimal_kv_cache_for_profiling" in hooked_targets()
    with runner_class(runner, fork), profiling_cache(runner):
        with pytest.raises(GuardViolation):
            runner._init_minimal_kv_cache_for_profiling()


def test_fix_that_cannot_build_continues_like_warn(engine, guard, monkeypatch, guard_log):
    """A vLLM whose configuration builder takes other arguments: the guard steps aside."""
    _, runner, _ = engine
    report = guard("fix")
    from cgguard.runtime import kvcache

    def builder_with_other_arguments(*args, **kwargs):  # simulates an unknown release's API
        raise TypeError("get_kv_cache_config_from_groups() got an unexpected keyword argument")

    monkeypatch.setattr(kvcache, "build_config_for_blocks", builder_with_other_arguments)
    with runner_class(runner, make_fork_runner()), profiling_cache(runner):
        runner._init_minimal_kv_cache_for_profiling()
        assert allocated_kv(runner)[0] == 512
    assert any("could not build the bounded cache" in m for m in guard_log)
    assert [e["action"] for e in checks(report)] == ["fix_failed"]


def test_internal_error_in_the_guard_never_stops_vllm(engine, guard, monkeypatch):
    _, runner, _ = engine
    guard("raise")
    from cgguard.runtime import hooks

    def broken_check(*args, **kwargs):
        raise KeyError("simulated bug in cgguard")

    monkeypatch.setattr(hooks, "check_profiling_allocation", broken_check)
    STATE.logged_once.discard("internal-error")
    with runner_class(runner, make_fork_runner()), profiling_cache(runner):
        runner._init_minimal_kv_cache_for_profiling()
        assert allocated_kv(runner)[0] == 512
    assert "internal-error" in STATE.logged_once

