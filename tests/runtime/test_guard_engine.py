"""The guard against real vLLM (CPU build) with a tiny dummy Llama, in one process.

The CPU worker never profiles CUDA-graph memory, so each test calls the live
runner's own ``_init_minimal_kv_cache_for_profiling`` (the installed release's,
or a fork's copy with the pre-fix line) after setting the capture size to 512,
then puts the real KV cache back (see ``profiling_cache``).

The suite runs on each release in ``conftest.RELEASES``: on the affected ones
(0.18.0, 0.25.0) the release's own method, not overridden, asks for 512 blocks
and the guard must act on it; on a fixed one (0.32.0) it asks for the bound.
"""

from __future__ import annotations

import gc
from contextlib import contextmanager

import pytest

from cgguard.runtime import GuardViolation, hooked_targets, install, uninstall
from cgguard.runtime.state import STATE
from tests.runtime.conftest import (
    BOUND,
    CAPTURE_SIZE,
    KV_CACHE_SPACE_ENV,
    LLM_KWARGS,
    MAX_NUM_SEQS,
    RELEASE,
    VLLM_RELEASE,
    allocated_kv,
    block_bytes,
    kv_tensors_exist,
    profiling_cache,
    read_report,
)
from tests.runtime.forks import make_fork_runner, release_is_per_token

RELEASE_METHOD = "vllm.v1.worker.gpu_model_runner.GPUModelRunner._init_minimal_kv_cache_for_profiling"


@pytest.fixture(scope="module")
def engine(tiny_llama, tmp_path_factory):
    """One LLM for the module; the guard is enabled by vLLM loading our entry point."""
    report = tmp_path_factory.mktemp("report") / "guard.jsonl"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
        mp.setenv("HF_HUB_OFFLINE", "1")
        for key, value in KV_CACHE_SPACE_ENV.items():
            mp.setenv(key, value)
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
    _, runner, report = engine
    installed = [e for e in read_report(report) if e["event"] == "installed"]
    assert installed and installed[0]["active"] is True and installed[0]["mode"] == "warn"
    assert installed[0]["vllm_version"] == VLLM_RELEASE
    assert "vllm.v1.worker.gpu_model_runner.GPUModelRunner.initialize_kv_cache" in installed[0]["targets"]
    assert RELEASE_METHOD in installed[0]["targets"]
    # The CPU runner was imported after the plugin loaded: the hook methods it
    # defines itself (0.25.0+: initialize_kv_cache; 0.18.0: none) are wrapped via
    # __init_subclass__.
    from vllm.v1.worker.cpu_model_runner import CPUModelRunner

    assert type(runner) is CPUModelRunner
    own = [n for n in ("initialize_kv_cache", "_init_minimal_kv_cache_for_profiling", "profile_cudagraph_memory")
           if n in vars(CPUModelRunner)]
    assert ("initialize_kv_cache" in own) is RELEASE.is_profiling_keyword
    cpu_targets = sorted(t for t in hooked_targets() if t.startswith("vllm.v1.worker.cpu_model_runner."))
    assert cpu_targets == sorted(f"vllm.v1.worker.cpu_model_runner.CPUModelRunner.{n}" for n in own)


def test_release_signature_is_the_one_the_tests_expect(engine):
    """0.18.0's initialize_kv_cache has no is_profiling; the guard must not need it."""
    import inspect

    from vllm.v1.worker.gpu_model_runner import GPUModelRunner

    original = vars(GPUModelRunner)["initialize_kv_cache"].__cgguard_original__
    assert ("is_profiling" in inspect.signature(original).parameters) is RELEASE.is_profiling_keyword
    assert release_is_per_token() is RELEASE.affected


def test_release_own_method_in_raise_mode(engine, guard):
    """The release's own _init_minimal_kv_cache_for_profiling, not overridden."""
    _, runner, _ = engine
    report = guard("raise")
    with profiling_cache(runner):
        if RELEASE.affected:
            with pytest.raises(GuardViolation) as info:
                runner._init_minimal_kv_cache_for_profiling()
            # Stopped before the release's initialize_kv_cache ran at all: it
            # sets kv_cache_config first and allocates the tensors after.
            assert not kv_tensors_exist(runner)
            assert not hasattr(runner, "kv_cache_config")
            message = str(info.value)
            for fact in (f"{CAPTURE_SIZE} blocks", f"{BOUND} blocks", f"(vLLM {VLLM_RELEASE})",
                         f"{CAPTURE_SIZE * block_bytes(runner):,} bytes", f"{BOUND * block_bytes(runner):,} bytes"):
                assert fact in message
        else:
            runner._init_minimal_kv_cache_for_profiling()
            assert allocated_kv(runner) == (BOUND, BOUND * block_bytes(runner))
    [event] = checks(report)
    assert event["action"] == ("raised" if RELEASE.affected else "ok")
    assert event["vllm_version"] == VLLM_RELEASE
    assert event["via"] == RELEASE_METHOD
    assert event["requested_blocks"] == (CAPTURE_SIZE if RELEASE.affected else BOUND)
    assert event["requested_bytes"] == event["requested_blocks"] * block_bytes(runner)
    assert (event["bound_blocks"], event["bound_bytes"]) == (BOUND, BOUND * block_bytes(runner))
    assert (event["max_num_reqs"], event["max_cudagraph_capture_size"]) == (MAX_NUM_SEQS, CAPTURE_SIZE)


def test_release_own_method_in_fix_mode_builds_the_bound_and_generates(engine, guard, monkeypatch, guard_log):
    llm, runner, _ = engine
    report = guard("fix")
    from vllm.v1.core import kv_cache_utils

    # A spy on vLLM's configuration builder (it still builds): which block
    # override each configuration was built with, and how many blocks it got.
    builds: list[tuple[int | None, int]] = []
    real_builder = kv_cache_utils.get_kv_cache_config_from_groups

    def recording_builder(vllm_config, *args, **kwargs):
        built = real_builder(vllm_config, *args, **kwargs)
        builds.append((vllm_config.cache_config.num_gpu_blocks_override, built.num_blocks))
        return built

    monkeypatch.setattr(kv_cache_utils, "get_kv_cache_config_from_groups", recording_builder)
    with profiling_cache(runner):
        runner._init_minimal_kv_cache_for_profiling()
        assert allocated_kv(runner) == (BOUND, BOUND * block_bytes(runner))
        assert runner.cache_config.num_gpu_blocks == BOUND
        assert runner.cache_config.num_gpu_blocks_override is None
    if RELEASE.affected:
        # The release built its per-token configuration, then the guard had the
        # same builder build the bounded one, which is what was allocated.
        assert builds == [(CAPTURE_SIZE, CAPTURE_SIZE), (BOUND, BOUND)]
        [event] = checks(report)
        assert event["action"] == "fixed"
        assert (event["requested_blocks"], event["bound_blocks"]) == (CAPTURE_SIZE, BOUND)
        assert event["bound_bytes"] == BOUND * block_bytes(runner)
        [message] = guard_log
        assert f"(vLLM {VLLM_RELEASE})" in message and f"{BOUND} blocks" in message
    else:
        assert builds == [(BOUND, BOUND)]
        assert [e["action"] for e in checks(report)] == ["ok"]
        assert guard_log == []
    assert checks(report)[0]["vllm_version"] == VLLM_RELEASE
    monkeypatch.undo()
    assert len(generate(llm)) == 4


def test_release_own_method_in_warn_mode_logs_once(engine, guard, guard_log):
    _, runner, _ = engine
    report = guard("warn")
    requested = CAPTURE_SIZE if RELEASE.affected else BOUND
    for _ in range(2):
        with profiling_cache(runner):
            runner._init_minimal_kv_cache_for_profiling()
            assert allocated_kv(runner) == (requested, requested * block_bytes(runner))
    events = checks(report)
    assert [e["vllm_version"] for e in events] == [VLLM_RELEASE] * 2
    if RELEASE.affected:
        assert [e["action"] for e in events] == ["warned", "warned"]
        [warning] = guard_log
        assert f"asks for {CAPTURE_SIZE} blocks" in warning and f"(vLLM {VLLM_RELEASE})" in warning
    else:
        assert [e["action"] for e in events] == ["ok", "ok"]
        assert guard_log == []


def test_model_runner_v2_module_twin_is_checked(engine, guard):
    _, runner, _ = engine
    from vllm.v1.worker.gpu import cudagraph_utils

    twin = "vllm.v1.worker.gpu.cudagraph_utils._init_minimal_kv_cache_for_profiling"
    if not hasattr(cudagraph_utils, "_init_minimal_kv_cache_for_profiling"):
        # Releases before the twin existed (0.18.0, 0.25.0): nothing to hook there.
        assert not any(t.startswith("vllm.v1.worker.gpu.cudagraph_utils.") for t in hooked_targets())
        return
    assert twin in hooked_targets()
    report = guard("raise")
    with profiling_cache(runner):
        cudagraph_utils._init_minimal_kv_cache_for_profiling(runner)
        assert allocated_kv(runner)[0] == BOUND
    [event] = checks(report)
    assert event["via"] == twin
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
                 f"{512 * block_bytes(runner):,} bytes", f"{4 * block_bytes(runner):,} bytes",
                 "0.26.0", "cgguard fix", "CGGUARD_MODE=fix"):
        assert fact in message
    [event] = checks(report)
    assert event["action"] == "raised"
    assert event["via"] == "tests.runtime.forks.PerTokenForkRunner._init_minimal_kv_cache_for_profiling"
    assert (event["requested_blocks"], event["requested_bytes"]) == (512, 512 * block_bytes(runner))


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
    expected = (BOUND, BOUND * block_bytes(runner))
    if not RELEASE.affected:  # the release's own fixed method, unguarded, allocates the same
        guard("off")
        assert upstream_profiling_kv(runner) == expected
    report = guard("fix")
    fork = make_fork_runner()
    with runner_class(runner, fork), profiling_cache(runner):
        runner._init_minimal_kv_cache_for_profiling()
        assert allocated_kv(runner) == expected
        # vLLM records the count it asked for; the guard corrects it to the one built.
        assert runner.cache_config.num_gpu_blocks == BOUND
        assert runner.cache_config.num_gpu_blocks_override is None
    [event] = checks(report)
    assert event["action"] == "fixed"
    assert (event["requested_blocks"], event["bound_blocks"]) == (512, BOUND)
    assert event["bound_bytes"] == expected[1]
    assert len(generate(llm)) == 4


def test_fix_with_the_legacy_signature(engine, guard):
    _, runner, _ = engine
    guard("fix")
    with runner_class(runner, make_fork_runner(legacy=True)), profiling_cache(runner):
        runner._init_minimal_kv_cache_for_profiling()
        assert allocated_kv(runner) == (BOUND, BOUND * block_bytes(runner))


def test_warn_logs_once_and_changes_nothing(engine, guard, guard_log):
    _, runner, _ = engine
    report = guard("warn")
    fork = make_fork_runner()
    for _ in range(2):
        with runner_class(runner, fork), profiling_cache(runner):
            runner._init_minimal_kv_cache_for_profiling()
            assert allocated_kv(runner) == (512, 512 * block_bytes(runner))
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

