"""`cgguard estimate` on a Qwen3.6-35B-A3B-shaped config against the installed release's
own KV cache code (issue 38).

The release's model class for this architecture cannot be imported here (its
multimodal module needs torchvision, which these environments leave out), so the
reference takes the pieces the class hands to vLLM from the functions it calls:
``Qwen3_5ForConditionalGenerationConfig.verify_and_update_config`` (the state dtype
from ``mamba_ssm_dtype``), ``MambaStateShapeCalculator.gated_delta_net_state_shape`` and
``MambaStateDtypeCalculator.gated_delta_net_state_dtype`` over the Hugging Face config
the release's own config reader parses. Then the release's own ``get_kv_cache_groups`` and
``get_kv_cache_config_from_groups`` build the profiling cache of 512 blocks, with
the block size of the real log of this model (2096 tokens, fp8), the attention page
padding the state's as vLLM pads it, and FlashAttention's layout (NHD) standing in
for the GPU's. The ``VllmConfig`` around them is a tiny Llama's: only its cache
and scheduler settings are read.
"""

from __future__ import annotations

import json
import types

from click.testing import CliRunner

from cgguard.ops.estimate.cli import estimate
from tests.ops.test_estimate_grouping import QWEN3_6_35B_A3B

BLOCK_SIZE, BLOCKS = 2096, 512


def _release_profiling_cache_bytes(folder, tiny_llama) -> tuple[int, list[int]]:
    import torch
    from vllm.config import CacheConfig, ModelConfig, VllmConfig
    from vllm.model_executor.layers.mamba.mamba_utils import (
        MambaStateDtypeCalculator,
        MambaStateShapeCalculator,
    )
    from vllm.model_executor.models.config import MODELS_CONFIG_MAP
    from vllm.transformers_utils.config import get_config
    from vllm.v1.core.kv_cache_utils import get_kv_cache_config_from_groups, get_kv_cache_groups
    from vllm.v1.kv_cache_interface import FullAttentionSpec, MambaSpec

    # The release's own reader: 0.18.0's transformers (4.57) has no qwen3_5_moe, and
    # vLLM registers its own config class for it.
    hf = get_config(folder, trust_remote_code=False)
    text = hf.get_text_config()
    context = ModelConfig(
        model=str(tiny_llama), skip_tokenizer_init=True, dtype="bfloat16", max_model_len=128
    )
    vllm_config = VllmConfig(model_config=context, cache_config=CacheConfig(block_size=16))
    cache = vllm_config.cache_config
    # fp8 as the log's GPU ran it, set after the CPU platform's checks (0.18.0's refuses an
    # fp8 cache beside prefix caching): the attention spec below carries the dtype itself.
    cache.cache_dtype = "fp8"
    cache.mamba_ssm_cache_dtype = "auto"  # a GPU's default (the CPU platform may reset it)
    if hasattr(cache, "kv_cache_layout"):
        cache.kv_cache_layout = "NHD"
    MODELS_CONFIG_MAP[hf.architectures[0]].verify_and_update_config(
        types.SimpleNamespace(
            cache_config=cache, model_config=types.SimpleNamespace(hf_text_config=text)
        )
    )
    shapes = MambaStateShapeCalculator.gated_delta_net_state_shape(
        1,
        text.linear_num_key_heads,
        text.linear_num_value_heads,
        text.linear_key_head_dim,
        text.linear_value_head_dim,
        text.linear_conv_kernel_dim,
        0,
    )
    dtypes = MambaStateDtypeCalculator.gated_delta_net_state_dtype(
        torch.bfloat16, cache.mamba_cache_dtype, cache.mamba_ssm_cache_dtype
    )
    attention = FullAttentionSpec(
        block_size=BLOCK_SIZE,
        num_kv_heads=text.num_key_value_heads,
        head_size=text.head_dim,
        dtype=torch.float8_e4m3fn,
    )
    state = MambaSpec(
        shapes=shapes,
        dtypes=dtypes,
        block_size=BLOCK_SIZE,
        page_size_padded=attention.page_size_bytes,
    )
    specs = {
        f"model.layers.{i}.{'self_attn.attn' if kind == 'full_attention' else 'linear_attn'}": (
            attention if kind == "full_attention" else state
        )
        for i, kind in enumerate(text.layer_types)
    }
    groups = get_kv_cache_groups(vllm_config, specs)
    cache.num_gpu_blocks_override = BLOCKS  # what the affected releases' profiling call sets
    config = get_kv_cache_config_from_groups(vllm_config, groups, available_memory=0)
    assert config.num_blocks == BLOCKS
    # 0.32.0's tensors name their `layers` and alias one allocation from byte 0: the
    # allocation is the end of the furthest one. The affected releases' tensors (`shared_by`)
    # are one allocation each (0.25.0's `offset` stays 0 outside a packed layout).
    tensors = config.kv_cache_tensors
    total = (
        max(t.offset + t.size for t in tensors)
        if hasattr(tensors[0], "layers")
        else sum(t.size for t in tensors)
    )
    return total, [len(g.layer_names) for g in groups]


def test_estimate_agrees_with_the_releases_kv_cache_code(tmp_path, tiny_llama):
    folder = tmp_path / "qwen3.6-35b-a3b"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(QWEN3_6_35B_A3B))
    reference, group_layers = _release_profiling_cache_bytes(str(folder), tiny_llama)
    assert group_layers == [10, 10, 10, 10]  # 10 attention layers, 30 DeltaNet in 3 groups
    runner = CliRunner()
    for extra in ([], ["--block-size", str(BLOCK_SIZE)]):
        result = runner.invoke(
            estimate,
            [
                str(folder),
                "--kv-cache-dtype",
                "fp8",
                "--vllm-version",
                "0.25.0",
                *extra,
                "--format",
                "json",
            ],
        )
        assert result.exit_code == 0, result.output
        out = json.loads(result.output)
        assert out["settings"]["block_size"] == BLOCK_SIZE
        mine = out["per_token"]["bytes"]
        assert out["per_token"]["blocks"] == BLOCKS
        assert abs(mine - reference) <= 0.05 * reference, (extra, mine, reference)
