"""`cgguard estimate` for a hybrid model as vLLM allocates it: layers grouped, one pool
per layer of a group (issue 38).

The model is Qwen3.6-35B-A3B's shape, built from its published fields (40 layers in
10 x (3 Gated DeltaNet + 1 gated attention); DeltaNet 16 QK / 32 V heads of 128, conv
kernel 4; attention 2 KV heads of 256; the recurrent state in float32 as its
``mamba_ssm_dtype`` says), nested under ``text_config`` as the
``Qwen3_5MoeForConditionalGeneration`` checkpoint has it. The figures are the
release's arithmetic written out; tests/runtime/test_hybrid_grouping.py runs the
release's own code on the same config. The runs use an interpreter without vLLM
(``test_estimate_hybrid``), so they show the reading of config.json's fields.
"""

from __future__ import annotations

import json

import pytest

from cgguard.ops.release.hybrid_groups import group_size, page_bytes
from tests.ops.test_estimate_hybrid import estimate, model, no_vllm_path  # noqa: F401

LAYER_TYPES = (["linear_attention"] * 3 + ["full_attention"]) * 10
QWEN3_6_35B_A3B = {
    "architectures": ["Qwen3_5MoeForConditionalGeneration"],
    "model_type": "qwen3_5_moe",
    "text_config": {
        "model_type": "qwen3_5_moe_text",
        "dtype": "bfloat16",
        "hidden_size": 2048,
        "num_hidden_layers": 40,
        "num_attention_heads": 16,
        "num_key_value_heads": 2,
        "head_dim": 256,
        "layer_types": LAYER_TYPES,
        "full_attention_interval": 4,
        "linear_conv_kernel_dim": 4,
        "linear_key_head_dim": 128,
        "linear_num_key_heads": 16,
        "linear_num_value_heads": 32,
        "linear_value_head_dim": 128,
        "mamba_ssm_dtype": "float32",
        "max_position_embeddings": 262144,
        "moe_intermediate_size": 512,
        "shared_expert_intermediate_size": 512,
        "num_experts": 256,
        "num_experts_per_tok": 8,
        "vocab_size": 248320,
    },
    "tie_word_embeddings": False,
}
# One state: conv (4 - 1) x (128 x 16 x 2 + 128 x 32) in bfloat16, and the recurrent
# state 32 x 128 x 128 in float32.
STATE = 3 * 8192 * 2 + 32 * 128 * 128 * 4
assert STATE == 2_146_304


def test_vllms_grouping_rule():
    # The fewest layers of a kind, or the most where that is under 1.5 times the fewest.
    assert group_size(10, 30) == 10
    assert group_size(12, 13) == 13
    assert group_size(4, 28) == 4
    assert group_size(20, 30) == 20
    assert page_bytes(2096, 1024, STATE) == STATE
    assert page_bytes(16, 1024, STATE) == STATE  # a block too small for the state


@pytest.mark.parametrize("with_block_size", [False, True], ids=["fields", "--block-size"])
def test_qwen3_6_fp8_profiling_cache(tmp_path, no_vllm_path, with_block_size):  # noqa: F811
    """The block size of the real log of this model (fp8 KV cache): 2096 tokens, which is
    one state over one token's fp8 attention page (2 x 2 x 256 bytes). 10 attention and 30
    DeltaNet layers make groups of 10: a block is 10 pages, 512 blocks about 10.2 GiB."""
    folder = model(tmp_path, QWEN3_6_35B_A3B)
    extra = ["--block-size", "2096"] if with_block_size else []
    proc = estimate(no_vllm_path, folder, "--kv-cache-dtype", "fp8", *extra, "--format", "json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["settings"]["block_size"] == 2096 == STATE // (2 * 2 * 256)
    assert out["hybrid"]["attention_layers"] == 10
    assert out["hybrid"]["state_layers"] == 30
    assert out["hybrid"]["group_size"] == 10
    assert out["bytes_per_block"] == 10 * 2096 * 1024
    assert out["per_token"] == {"blocks": 512, "bytes": 512 * 10 * 2096 * 1024}
    assert round(out["per_token"]["bytes"] / 2**30, 2) == 10.23


def test_qwen3_6_bf16_block_size_from_the_fields(tmp_path, no_vllm_path):  # noqa: F811
    out = json.loads(
        estimate(no_vllm_path, model(tmp_path, QWEN3_6_35B_A3B), "--format", "json").stdout
    )
    # A bf16 token of attention is 2048 bytes: 16 x ceil(2146304 / (16 x 2048)) = 1056.
    assert out["settings"]["block_size"] == 1056
    assert out["hybrid"]["block_size_source"] == "config-fields"
    assert out["bytes_per_block"] == 10 * 1056 * 2048
    text = estimate(no_vllm_path, model(tmp_path, QWEN3_6_35B_A3B, "again")).stdout
    assert "(21,626,880 bytes = 10 layers per group x 1056 tokens x 2,048 bytes)" in text
    assert "vLLM puts the 10 attention and 30 state layers in groups of 10" in text


def test_a_state_dtype_the_config_does_not_name_follows_the_model(tmp_path, no_vllm_path):  # noqa: F811
    text = {k: v for k, v in QWEN3_6_35B_A3B["text_config"].items() if k != "mamba_ssm_dtype"}
    config = {**QWEN3_6_35B_A3B, "text_config": text}
    out = json.loads(estimate(no_vllm_path, model(tmp_path, config), "--format", "json").stdout)
    assert out["hybrid"]["mamba_page_bytes"] == (3 * 8192 + 32 * 128 * 128) * 2
