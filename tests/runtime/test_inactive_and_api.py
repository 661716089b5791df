"""install()/uninstall() contracts, the report file, and a vLLM without hook points."""

from __future__ import annotations

import json
import multiprocessing
import textwrap

import pytest

from tests.runtime.conftest import clean_env, read_report, run_python


def test_importing_the_guard_is_light():
    code = "import sys, cgguard.runtime; print(sorted(m for m in ('libcst', 'click', 'vllm', 'torch') if m in sys.modules))"
    result = run_python(code, clean_env())
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_vllm_without_hook_points_leaves_the_guard_inactive(tmp_path):
    # A legitimate fake: a vLLM release whose runner has none of the hook points
    # cannot be installed beside the real one, so a module tree shadows it.
    fake = tmp_path / "fake"
    worker = fake / "vllm" / "v1" / "worker"
    worker.mkdir(parents=True)
    (fake / "vllm" / "__init__.py").write_text('__version__ = "0.17.0+fake"\n')
    (fake / "vllm" / "v1" / "__init__.py").write_text("")
    (worker / "__init__.py").write_text("")
    (worker / "gpu_model_runner.py").write_text("class GPUModelRunner:\n    def execute_model(self):\n        pass\n")
    report = tmp_path / "guard.jsonl"
    code = textwrap.dedent(f"""
        import vllm
        assert vllm.__version__ == "0.17.0+fake", vllm.__file__
        from cgguard.runtime import install, hooked_targets
        from cgguard.runtime.plugin import register
        print("RESULTS", install("raise", {str(report)!r}), install("warn"), hooked_targets())
        register()
        from vllm.v1.worker.gpu_model_runner import GPUModelRunner
        print("UNTOUCHED", sorted(k for k in vars(GPUModelRunner) if not k.startswith("__")))
    """)
    env = clean_env(PYTHONPATH=str(fake), CGGUARD_MODE="warn")
    result = run_python(code, env)
    assert result.returncode == 0, result.stderr
    assert "RESULTS False False []" in result.stdout
    assert "UNTOUCHED ['execute_model']" in result.stdout
    output = result.stdout + result.stderr
    assert output.count("the runtime guard is inactive") == 1, output
    assert "0.17.0+fake" in output
    assert "Traceback" not in output
    [event] = read_report(report)
    assert (event["event"], event["active"], event["targets"]) == ("installed", False, [])


def test_vllm_not_importable_leaves_the_guard_inactive_and_says_so_in_the_report(tmp_path):
    # The real vLLM is installed here; a `vllm` package whose import fails (as a broken
    # install's does) shadows it.
    shadow = tmp_path / "shadow"
    (shadow / "vllm").mkdir(parents=True)
    (shadow / "vllm" / "__init__.py").write_text(
        'raise ImportError("libcuda.so.1: cannot open shared object file")\n'
    )
    report = tmp_path / "guard.jsonl"
    code = textwrap.dedent(f"""
        from cgguard.runtime import install, hooked_targets
        print("RESULTS", install("warn", {str(report)!r}), hooked_targets())
    """)
    result = run_python(code, clean_env(PYTHONPATH=str(shadow)))
    assert result.returncode == 0, result.stderr
    assert "RESULTS False []" in result.stdout
    output = result.stdout + result.stderr
    assert output.count("vLLM is not importable in this process; the runtime guard is inactive") == 1
    assert "Traceback" not in output
    [event] = read_report(report)
    assert (event["event"], event["active"], event["mode"], event["targets"]) == (
        "installed", False, "warn", [])


def test_install_is_idempotent_and_uninstall_restores():
    code = textwrap.dedent("""
        from vllm.v1.worker.gpu_model_runner import GPUModelRunner
        from vllm.v1.worker.gpu import cudagraph_utils
        # Model runner v2's module-level twin exists from 0.32 on (None before).
        twin = lambda: getattr(cudagraph_utils, "_init_minimal_kv_cache_for_profiling", None)
        before = (vars(GPUModelRunner)["initialize_kv_cache"], twin())
        from cgguard.runtime import install, uninstall, hooked_targets
        assert install("warn") and install("fix") and install("raise")
        wrapped = vars(GPUModelRunner)["initialize_kv_cache"]
        assert wrapped is not before[0] and wrapped.__cgguard_original__ is before[0]
        assert len(hooked_targets()) == len(set(hooked_targets()))
        uninstall()
        after = (vars(GPUModelRunner)["initialize_kv_cache"], twin())
        assert after == before and hooked_targets() == []
        assert "__init_subclass__" not in vars(GPUModelRunner)
        assert install("warn") and vars(GPUModelRunner)["initialize_kv_cache"].__cgguard_original__ is before[0]
        print("OK")
    """)
    result = run_python(code, clean_env())
    assert result.returncode == 0, result.stderr[-3000:]
    assert "OK" in result.stdout


def test_bad_mode_is_refused():
    from cgguard.runtime import install

    with pytest.raises(ValueError, match="one of off, warn, raise, fix"):
        install("clamp")


def _writer(path: str, tag: int) -> None:
    from cgguard.runtime.report import append_event

    for i in range(200):
        append_event(path, "profiling_kv_cache", tag=tag, i=i, padding="x" * 3000)


def test_concurrent_report_lines_never_interleave(tmp_path):
    report = tmp_path / "guard.jsonl"
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(str(report), tag)) for tag in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    lines = report.read_text().splitlines()
    assert len(lines) == 800
    events = [json.loads(line) for line in lines]
    assert sorted((e["tag"], e["i"]) for e in events) == [(t, i) for t in range(4) for i in range(200)]


def test_unwritable_report_is_one_warning_not_a_failure(tmp_path, guard_log):
    from cgguard.runtime.report import append_event

    missing = tmp_path / "no-such-dir" / "guard.jsonl"
    append_event(str(missing), "installed")
    append_event(str(missing), "installed")
    assert guard_log.count(
        f"cgguard: cannot write the report {missing} ([Errno 2] No such file or directory: '{missing}'); continuing without it"
    ) == 1
    assert read_report(missing) == []


def test_forked_child_announces_itself(tmp_path):
    """vLLM may fork its engine core from a process that already installed the guard."""
    report = tmp_path / "guard.jsonl"
    code = textwrap.dedent(f"""
        import os
        from cgguard.runtime.plugin import register
        register()
        pid = os.fork()
        if pid == 0:
            register(); register()  # the child loads the plugins again
            os._exit(0)
        os.waitpid(pid, 0)
        print("CHILD", pid)
    """)
    result = run_python(code, clean_env(CGGUARD_MODE="fix", CGGUARD_REPORT=str(report)))
    assert result.returncode == 0, result.stderr[-3000:]
    child = int(result.stdout.split("CHILD")[-1].split()[0])
    pids = [e["pid"] for e in read_report(report) if e["event"] == "installed"]
    assert len(pids) == 2 and child in pids and len(set(pids)) == 2
