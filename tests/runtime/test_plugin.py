"""The entry point: vLLM itself enables the guard in its engine-core process."""

from __future__ import annotations

import importlib.metadata
import textwrap

from tests.runtime.conftest import LLM_KWARGS, clean_env, read_report, run_python


def test_entry_point_is_registered_for_vllm():
    [ep] = [ep for ep in importlib.metadata.entry_points(group="vllm.general_plugins") if ep.name == "cgguard"]
    assert ep.value == "cgguard.runtime.plugin:register"
    from cgguard.runtime.plugin import register

    assert ep.load() is register


def test_engine_core_process_installs_the_guard(tiny_llama, tmp_path):
    report = tmp_path / "guard.jsonl"
    code = textwrap.dedent(f"""
        import os
        from vllm import LLM, SamplingParams
        llm = LLM(model={str(tiny_llama)!r}, **{LLM_KWARGS!r})
        out = llm.generate([{{"prompt_token_ids": [1, 2, 3]}}], SamplingParams(max_tokens=3, temperature=0))
        print("TOKENS", len(out[0].outputs[0].token_ids))
        print("PID", os.getpid())
    """)
    env = clean_env(VLLM_ENABLE_V1_MULTIPROCESSING="1", CGGUARD_MODE="raise", CGGUARD_REPORT=str(report))
    result = run_python(code, env)
    assert result.returncode == 0, result.stderr[-4000:]
    assert "TOKENS 3" in result.stdout
    test_pid = int(result.stdout.split("PID")[-1].split()[0])
    installed = [e for e in read_report(report) if e["event"] == "installed"]
    engine_lines = [e for e in installed if e["pid"] != test_pid]
    assert engine_lines, installed
    assert all(e["active"] is True and e["mode"] == "raise" for e in engine_lines)
    assert any("vllm.v1.worker.gpu_model_runner.GPUModelRunner.initialize_kv_cache" in e["targets"]
               for e in engine_lines)
    # Loaded possibly several times per process, installed once per process.
    pids = [e["pid"] for e in installed]
    assert len(pids) == len(set(pids))


def test_mode_off_touches_nothing(tmp_path):
    report = tmp_path / "guard.jsonl"
    code = textwrap.dedent("""
        from cgguard.runtime.plugin import register
        from cgguard.runtime import hooked_targets
        register(); register()
        print("TARGETS", hooked_targets())
    """)
    result = run_python(code, clean_env(CGGUARD_MODE="off", CGGUARD_REPORT=str(report)))
    assert result.returncode == 0, result.stderr
    assert "TARGETS []" in result.stdout
    assert not report.exists()


def test_unknown_mode_falls_back_to_warn_with_one_line(tmp_path):
    report = tmp_path / "guard.jsonl"
    code = textwrap.dedent("""
        from cgguard.runtime.plugin import register
        register(); register()
    """)
    result = run_python(code, clean_env(CGGUARD_MODE="clamp", CGGUARD_REPORT=str(report)))
    assert result.returncode == 0, result.stderr
    assert (result.stdout + result.stderr).count("CGGUARD_MODE='clamp' is not one of") == 1
    [installed] = [e for e in read_report(report) if e["event"] == "installed"]
    assert installed["mode"] == "warn" and installed["active"] is True
