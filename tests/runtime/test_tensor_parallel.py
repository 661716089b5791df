"""The guard across workers: tensor parallelism 2 with vLLM's mp executor, on the CPU.

vLLM loads the plugin in every process it starts (API process, engine core, one
worker per rank). Each worker runs a profiling allocation (``collective_rpc``):
on an affected release the release's own method, on a fixed one a fork runner
with the per-token line. In ``fix`` mode every worker must build the bound, and
the report file must hold one well-formed line per worker event.

Ray's executor is not tested: vLLM refuses it on the CPU ("current platform cpu
does not support ray"); see docs/runtime.md for what the guard does under Ray.
"""

from __future__ import annotations

import json
import textwrap

from tests.conftest import REPO
from tests.runtime.conftest import (
    BOUND,
    CAPTURE_SIZE,
    LLM_KWARGS,
    MAX_NUM_SEQS,
    RELEASE,
    TINY_LLAMA,
    VLLM_RELEASE,
    clean_env,
    run_python,
)

TP = 2


def tp_block_bytes(block_size: int) -> int:
    """One KV block of the tiny Llama on one rank: the KV heads are split across ranks."""
    kv_heads_per_rank = max(1, TINY_LLAMA["num_key_value_heads"] // TP)
    return TINY_LLAMA["num_hidden_layers"] * block_size * 2 * kv_heads_per_rank * TINY_LLAMA["head_dim"] * 4


def test_fix_in_every_worker_with_tensor_parallelism(tiny_llama, tmp_path):
    report = tmp_path / "guard.jsonl"
    use_fork = not RELEASE.affected
    code = textwrap.dedent(f"""
        import json, os
        from vllm import LLM, SamplingParams
        from tests.runtime.workers import profile_in_worker
        llm = LLM(model={str(tiny_llama)!r}, tensor_parallel_size={TP}, distributed_executor_backend="mp",
                  **{LLM_KWARGS!r})
        results = llm.collective_rpc(profile_in_worker, args=({use_fork!r},))
        print("WORKERS", json.dumps(results))
        out = llm.generate([{{"prompt_token_ids": [1, 2, 3]}}], SamplingParams(max_tokens=3, temperature=0))
        print("TOKENS", len(out[0].outputs[0].token_ids))
        print("PID", os.getpid())
    """)
    env = clean_env(
        VLLM_ENABLE_V1_MULTIPROCESSING="1",
        VLLM_CPU_OMP_THREADS_BIND="0|1",
        VLLM_ALLOW_INSECURE_SERIALIZATION="1",
        PYTHONPATH=str(REPO),
        CGGUARD_MODE="fix",
        CGGUARD_REPORT=str(report),
    )
    result = run_python(code, env, timeout=900)
    assert result.returncode == 0, result.stderr[-6000:]
    assert "TOKENS 3" in result.stdout
    workers = json.loads(result.stdout.split("WORKERS", 1)[1].splitlines()[0])
    api_pid = int(result.stdout.split("PID")[-1].split()[0])

    # One result per worker, each its own process, the plugin active in each.
    assert len(workers) == TP
    worker_pids = {w["pid"] for w in workers}
    assert len(worker_pids) == TP and api_pid not in worker_pids
    assert sorted(w["rank"] for w in workers) == list(range(TP))
    for w in workers:
        assert w["active"] is True and w["mode"] == "fix"
        assert "vllm.v1.worker.gpu_model_runner.GPUModelRunner.initialize_kv_cache" in w["targets"]
        assert w["runner"] == "vllm.v1.worker.cpu_model_runner.CPUModelRunner"
        # Each worker built the bound, through vLLM's own configuration code.
        assert (w["blocks"], w["bytes"]) == (BOUND, BOUND * tp_block_bytes(w["block_size"]))
        assert w["recorded_blocks"] == BOUND

    # The report: every line well-formed JSON with the common fields.
    lines = report.read_text().splitlines()
    events = [json.loads(line) for line in lines]
    assert all({"event", "pid", "time"} <= e.keys() for e in events)
    installed = [e for e in events if e["event"] == "installed"]
    assert worker_pids <= {e["pid"] for e in installed}  # every worker installed the guard
    assert len([e["pid"] for e in installed]) == len({e["pid"] for e in installed})  # once per process
    assert all(e["active"] is True and e["mode"] == "fix" and e["vllm_version"] == VLLM_RELEASE for e in installed)
    checks = [e for e in events if e["event"] == "profiling_kv_cache"]
    assert sorted(e["pid"] for e in checks) == sorted(worker_pids)  # one line per worker
    for e in checks:
        assert e["action"] == "fixed" and e["mode"] == "fix"
        assert (e["requested_blocks"], e["bound_blocks"]) == (CAPTURE_SIZE, BOUND)
        assert (e["max_num_reqs"], e["max_cudagraph_capture_size"]) == (MAX_NUM_SEQS, CAPTURE_SIZE)
        assert e["vllm_version"] == VLLM_RELEASE
        w = next(w for w in workers if w["pid"] == e["pid"])
        assert e["bound_bytes"] == w["bytes"]
        assert e["requested_bytes"] == CAPTURE_SIZE * tp_block_bytes(w["block_size"])
