"""A hybrid model's attention block size in `cgguard estimate`, against the number the
installed release logs when it computes it for tiny hybrid configs.

The reference runs the release's own alignment step (``Platform._align_hybrid_block_size``
from 0.22.0, ``HybridAttentionMambaModelConfig.verify_and_update_config`` in 0.18.0)
on a ``VllmConfig`` built from the config, and reads its "Setting attention block size
to N tokens" log line. The GPU's attention backend is stood in for by FlashAttention's
kernel block sizes (multiples of 16): these machines have no GPU. In the fixed
release's environment estimate estimates 0.25.0, which is not installed there: it reads
the block size from config.json's fields, and says so; the sizes it must find are the
ones 0.25.0's own code gives (tests/runtime/test_hybrid_fields.py compares the two in
that release's environment).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from tests.runtime.conftest import RELEASE, VLLM_RELEASE, clean_env

HYBRIDS = {
    "jamba": {"architectures": ["JambaForCausalLM"], "model_type": "jamba", "hidden_size": 128,
              "intermediate_size": 256, "num_hidden_layers": 2, "num_attention_heads": 4,
              "num_key_value_heads": 2, "vocab_size": 512, "max_position_embeddings": 256,
              "num_experts": 1, "num_experts_per_tok": 1, "attn_layer_period": 2, "attn_layer_offset": 1,
              "expert_layer_period": 2, "expert_layer_offset": 1, "mamba_d_state": 16, "mamba_d_conv": 4,
              "mamba_expand": 2, "mamba_dt_rank": 8, "torch_dtype": "bfloat16"},
    "jamba-wide-state": {"architectures": ["JambaForCausalLM"], "model_type": "jamba", "hidden_size": 256,
                         "intermediate_size": 256, "num_hidden_layers": 4, "num_attention_heads": 4,
                         "num_key_value_heads": 1, "vocab_size": 512, "max_position_embeddings": 256,
                         "num_experts": 1, "num_experts_per_tok": 1, "attn_layer_period": 4,
                         "attn_layer_offset": 3, "expert_layer_period": 2, "expert_layer_offset": 1,
                         "mamba_d_state": 128, "mamba_d_conv": 4, "mamba_expand": 2, "mamba_dt_rank": 16,
                         "torch_dtype": "bfloat16"},
}

# What vLLM 0.25.0's own code gives these configs.
VLLM_0_25_BLOCK = {"jamba": 48, "jamba-wide-state": 528}

REFERENCE = r"""
import io, logging, re, sys
from vllm.config import CacheConfig, ModelConfig, VllmConfig
folder = sys.argv[1]
model_config = ModelConfig(model=folder, skip_tokenizer_init=True, dtype="bfloat16", max_model_len=256)
vllm_config = VllmConfig(model_config=model_config, cache_config=CacheConfig(block_size=16))
vllm_config.cache_config.block_size = 16
vllm_config.cache_config.mamba_cache_mode = "none"
stream = io.StringIO()
handler = logging.StreamHandler(stream)
logging.getLogger("vllm").addHandler(handler)
try:
    from vllm.platforms.interface import Platform
    from vllm.v1.attention.backend import MultipleOf

    class FlashAttentionKernelSizes:
        @staticmethod
        def get_supported_kernel_block_sizes():
            return [MultipleOf(16)]

    Platform._align_hybrid_block_size(vllm_config, FlashAttentionKernelSizes)
except AttributeError:
    from vllm.model_executor.models.config import HybridAttentionMambaModelConfig
    HybridAttentionMambaModelConfig.verify_and_update_config(vllm_config)
[n] = re.findall(r"Setting attention block size to (\d+) tokens", stream.getvalue())
print(n)
"""


@pytest.mark.parametrize("name", HYBRIDS)
def test_hybrid_block_size_is_the_one_the_release_logs(tmp_path, name):
    (tmp_path / "config.json").write_text(json.dumps(HYBRIDS[name]))
    proc = subprocess.run([sys.executable, "-m", "cgguard", "estimate", str(tmp_path), "--format", "json"],
                          capture_output=True, text=True, env=clean_env(), timeout=600)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    if not RELEASE.affected:
        assert out["hybrid"]["block_size_source"] == "config-fields"
        assert out["settings"]["block_size"] == VLLM_0_25_BLOCK[name]
        assert any(a.startswith(f"block size {VLLM_0_25_BLOCK[name]}: cgguard's reading of config.json's fields")
                   for a in out["assumed"])
        return
    ref = subprocess.run([sys.executable, "-c", REFERENCE, str(tmp_path)], capture_output=True, text=True,
                         env=clean_env(), timeout=600)
    assert ref.returncode == 0, ref.stderr[-3000:]
    logged = int(ref.stdout.strip().splitlines()[-1])
    assert logged > 16  # the release did enlarge it
    assert out["settings"]["block_size"] == logged
    assert out["hybrid"]["block_size_computed"] is True
    assert out["hybrid"]["block_size_source"] == "installed-release"
    if VLLM_RELEASE == "0.25.0":
        assert logged == VLLM_0_25_BLOCK[name]
    # The bytes at stake follow it: attention layers x block size x bytes per token.
    layers = out["hybrid"]["attention_layers"]
    assert layers == sum(1 for i in range(HYBRIDS[name]["num_hidden_layers"])
                         if i % HYBRIDS[name]["attn_layer_period"] == HYBRIDS[name]["attn_layer_offset"])
    assert out["bytes_per_block"] == layers * logged * out["bytes_per_token_per_layer"]
    assert out["per_token"]["bytes"] == out["per_token"]["blocks"] * out["bytes_per_block"]
    assert any(re.match(rf"block size {logged}: computed by the installed vLLM", a) for a in out["assumed"])
