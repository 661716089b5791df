"""cgguard's reading of a hybrid model's config.json fields (``cgguard.ops.release.hybrid_fields``)
against the installed release's own code, for tiny configs of every family it covers.

The reference builds the release's ``VllmConfig`` from each config, takes the state's
shapes and dtypes from the model class's ``get_mamba_state_shape_from_config`` /
``get_mamba_state_dtype_from_config`` and, where the release aligns the block size
with ``Platform._align_hybrid_block_size``, runs it. Stand-ins, because these machines
have no GPU: FlashAttention's kernel block sizes (multiples of 16) for the GPU's
attention backend, and, for speculative decoding, an object holding only the method
and ``num_speculative_tokens`` in place of a ``SpeculativeConfig`` (a real one needs
the draft model's files).

The CPU platform, not the release, decides one input. vLLM 0.32.0's CPU platform
(``vllm/platforms/cpu.py``, ``check_and_update_config``) resets
``cache_config.mamba_ssm_cache_dtype`` to ``"float32"`` for its accelerated Mamba
backend only when ``torch.cpu._is_avx512_bf16_supported()``; otherwise ``"auto"``
stays, and the temporal (SSM) state takes the conv state's dtype, the model's. On a
CUDA GPU no such reset happens. So the reference fixes the probe's answer in its own
process (``AVX512_BF16``): the main comparison runs with the probe answering False (the
state follows the model's dtype, as on a GPU), and the Jamba row runs again with it
answering True, so both branches are checked on any CPU. Each row records the dtype
the release resolved, and the expected page is computed from it.

What each release shows:
- 0.25.0, the release the reading follows: block size, Mamba page, attention page
  per token and attention layers are equal, for tensor-parallel sizes 1 and 2, with
  and without speculative tokens.
- 0.18.0: the states are the same, but its ``HybridAttentionMambaModelConfig`` rounds
  the block size by another rule, so the block sizes differ; this is why estimate
  reads the fields only for 0.25.0. Its transformers does not know ``nemotron_h``.
- 0.32.0 (fixed): its attention page per token is the same, and its
  ``_align_hybrid_block_size`` asks the attention backend for more than the stand-in
  gives (``customize_spec``). The reading follows 0.25.0, which is the release
  estimate applies it to; here the test checks the attention page and, for Jamba,
  the state under both answers of the CPU platform's probe.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from cgguard.ops.release.hybrid_fields import FAMILIES, block_from_fields
from tests.runtime.conftest import VLLM_RELEASE, clean_env

BASE = {"vocab_size": 512, "max_position_embeddings": 256, "intermediate_size": 256,
        "torch_dtype": "bfloat16"}
CONFIGS = {
    "jamba": {**BASE, "architectures": ["JambaForCausalLM"], "model_type": "jamba", "hidden_size": 128,
              "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
              "num_experts": 1, "num_experts_per_tok": 1, "attn_layer_period": 2, "attn_layer_offset": 1,
              "expert_layer_period": 2, "expert_layer_offset": 1, "mamba_d_state": 16, "mamba_d_conv": 4,
              "mamba_expand": 2, "mamba_dt_rank": 8},
    "jamba-wide-state-fp16": {**BASE, "architectures": ["JambaForCausalLM"], "model_type": "jamba",
                              "hidden_size": 256, "num_hidden_layers": 8, "num_attention_heads": 4,
                              "num_key_value_heads": 2, "num_experts": 1, "num_experts_per_tok": 1,
                              "attn_layer_period": 4, "attn_layer_offset": 3, "expert_layer_period": 2,
                              "expert_layer_offset": 1, "mamba_d_state": 128, "mamba_d_conv": 4,
                              "mamba_expand": 2, "mamba_dt_rank": 16, "torch_dtype": "float16"},
    "falcon_h1": {**BASE, "architectures": ["FalconH1ForCausalLM"], "model_type": "falcon_h1",
                  "hidden_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4,
                  "num_key_value_heads": 2, "head_dim": 64, "mamba_d_ssm": 256, "mamba_n_heads": 8,
                  "mamba_d_head": 32, "mamba_n_groups": 1, "mamba_d_state": 16, "mamba_d_conv": 4,
                  "mamba_expand": 2},
    "granitemoehybrid": {**BASE, "architectures": ["GraniteMoeHybridForCausalLM"],
                         "model_type": "granitemoehybrid", "hidden_size": 128, "num_hidden_layers": 4,
                         "num_attention_heads": 4, "num_key_value_heads": 2,
                         "layer_types": ["mamba", "mamba", "mamba", "attention"], "mamba_n_heads": 8,
                         "mamba_d_head": 32, "mamba_n_groups": 1, "mamba_d_state": 64, "mamba_d_conv": 4,
                         "mamba_expand": 2, "num_local_experts": 4, "num_experts_per_tok": 2,
                         "shared_intermediate_size": 256},
    "nemotron_h": {**BASE, "architectures": ["NemotronHForCausalLM"], "model_type": "nemotron_h",
                   "hidden_size": 128, "num_hidden_layers": 4, "hybrid_override_pattern": "M-M*",
                   "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 32, "mamba_num_heads": 8,
                   "mamba_head_dim": 16, "n_groups": 2, "ssm_state_size": 32, "conv_kernel": 4},
    "zamba2": {**BASE, "architectures": ["Zamba2ForCausalLM"], "model_type": "zamba2", "hidden_size": 128,
               "num_hidden_layers": 4, "layers_block_type": ["mamba", "hybrid", "mamba", "hybrid"],
               "num_attention_heads": 4, "num_key_value_heads": 4, "n_mamba_heads": 8, "mamba_headdim": 32,
               "mamba_ngroups": 1, "mamba_d_state": 64, "mamba_d_conv": 4, "mamba_expand": 2},
    "qwen3_next": {**BASE, "architectures": ["Qwen3NextForCausalLM"], "model_type": "qwen3_next",
                   "hidden_size": 128, "num_hidden_layers": 4, "num_attention_heads": 4,
                   "num_key_value_heads": 2, "head_dim": 32, "linear_num_key_heads": 2,
                   "linear_num_value_heads": 4, "linear_key_head_dim": 32, "linear_value_head_dim": 32,
                   "linear_conv_kernel_dim": 4,
                   "layer_types": ["linear_attention", "linear_attention", "linear_attention", "full_attention"],
                   "num_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 64,
                   "shared_expert_intermediate_size": 64},
    "qwen3_next-no-layer-types": {**BASE, "architectures": ["Qwen3NextForCausalLM"], "model_type": "qwen3_next",
                                  "hidden_size": 128, "num_hidden_layers": 8, "num_attention_heads": 4,
                                  "num_key_value_heads": 2, "head_dim": 64, "linear_num_key_heads": 2,
                                  "linear_num_value_heads": 4, "linear_key_head_dim": 64,
                                  "linear_value_head_dim": 64, "linear_conv_kernel_dim": 4, "num_experts": 4,
                                  "num_experts_per_tok": 2, "moe_intermediate_size": 64,
                                  "shared_expert_intermediate_size": 64},
    "olmo_hybrid": {**BASE, "architectures": ["OlmoHybridForCausalLM"], "model_type": "olmo_hybrid",
                    "hidden_size": 128, "num_hidden_layers": 6, "num_attention_heads": 4,
                    "linear_num_key_heads": 4, "linear_num_value_heads": 4, "linear_key_head_dim": 24,
                    "linear_value_head_dim": 48, "linear_conv_kernel_dim": 4},
    "lfm2": {**BASE, "architectures": ["Lfm2ForCausalLM"], "model_type": "lfm2", "hidden_size": 128,
             "num_hidden_layers": 4, "num_attention_heads": 4, "num_key_value_heads": 2, "conv_dim": 128,
             "conv_L_cache": 3, "layer_types": ["conv", "conv", "full_attention", "conv"]},
    "lfm2_moe": {**BASE, "architectures": ["Lfm2MoeForCausalLM"], "model_type": "lfm2_moe", "hidden_size": 128,
                 "num_hidden_layers": 4, "num_attention_heads": 4, "num_key_value_heads": 2, "conv_L_cache": 4,
                 "layer_types": ["conv", "full_attention", "conv", "conv"], "num_experts": 4,
                 "num_experts_per_tok": 2, "moe_intermediate_size": 64, "num_dense_layers": 1},
}
CASES = [(tp, spec) for tp in (1, 2) for spec in (0, 2)]

# The answer the reference process gives to vLLM's CPU feature probe (module docstring).
AVX512_BF16 = {"no": "False", "yes": "True"}

REFERENCE = r"""
import copy, json, logging, sys, types
logging.disable(logging.CRITICAL)
import torch
# The CPU platform's decision on the SSM state dtype follows this probe (module docstring).
_answer = json.loads(sys.argv[3])
torch.cpu._is_avx512_bf16_supported = lambda: _answer
from vllm.config import CacheConfig, ModelConfig, VllmConfig
from vllm.model_executor.models import ModelRegistry
from vllm.v1.kv_cache_interface import FullAttentionSpec, MambaSpec
try:
    from vllm.platforms.interface import Platform
    align = Platform._align_hybrid_block_size
    from vllm.v1.attention.backend import MultipleOf

    class FlashAttentionKernelSizes:  # stand-in for the GPU's backend (module docstring)
        @staticmethod
        def get_supported_kernel_block_sizes():
            return [MultipleOf(16)]
except (AttributeError, ImportError):
    align = None
out = {}
for name, folder in json.loads(sys.argv[1]).items():
    # One VllmConfig per config (building one is most of the cost); each case starts from a
    # copy of the cache settings it built, since the alignment step below rewrites them.
    try:
        mc = ModelConfig(model=folder, skip_tokenizer_init=True, dtype="auto", max_model_len=256)
        vc = VllmConfig(model_config=mc, cache_config=CacheConfig(block_size=16))
        built_cache = copy.deepcopy(vc.cache_config)
    except Exception as exc:
        for tp, spec in json.loads(sys.argv[2]):
            out[f"{name}/{tp}/{spec}"] = {"error": f"{type(exc).__name__}: {exc}"}
        continue
    for tp, spec in json.loads(sys.argv[2]):
        key = f"{name}/{tp}/{spec}"
        object.__setattr__(vc, "cache_config", copy.deepcopy(built_cache))
        vc.parallel_config.tensor_parallel_size = tp
        # stand-in for a SpeculativeConfig (module docstring)
        object.__setattr__(vc, "speculative_config",
                           types.SimpleNamespace(method="mtp", num_speculative_tokens=spec) if spec else None)
        cache = vc.cache_config
        cache.block_size = 16
        cache.mamba_cache_mode = "none"
        cache.mamba_page_size_padded = None
        cls, _ = ModelRegistry.resolve_model_cls(mc.architecture, model_config=mc)
        mamba = MambaSpec(shapes=cls.get_mamba_state_shape_from_config(vc),
                          dtypes=cls.get_mamba_state_dtype_from_config(vc), block_size=-1).page_size_bytes
        text = mc.hf_text_config
        kinds = getattr(text, "layers_block_type", None) or getattr(text, "layer_types", None) or []
        row = {"mamba": mamba,
               "attention_token": FullAttentionSpec(block_size=1, num_kv_heads=mc.get_num_kv_heads(vc.parallel_config),
                                                    head_size=mc.get_head_size(), dtype=mc.dtype).page_size_bytes,
               "layers_vllm": mc.get_num_layers_by_block_type(vc.parallel_config, "attention"),
               "layers_kinds": sum(k in ("attention", "full_attention", "hybrid") for k in kinds),
               "dtype": str(mc.dtype).removeprefix("torch."),
               "ssm_cache_dtype": cache.mamba_ssm_cache_dtype}
        if align is not None:
            try:
                align(vc, FlashAttentionKernelSizes)
                row["block"] = cache.block_size
            except AttributeError as exc:
                row["block_error"] = str(exc)
        else:
            from vllm.model_executor.models.config import HybridAttentionMambaModelConfig
            HybridAttentionMambaModelConfig.verify_and_update_config(vc)
            row["block"] = cache.block_size
        out[key] = row
print(json.dumps(out))
"""


def _reference(root, configs: dict, cases: list, avx512_bf16: bool) -> dict:
    folders = {}
    for name, config in configs.items():
        (root / name).mkdir()
        (root / name / "config.json").write_text(json.dumps(config))
        folders[name] = str(root / name)
    proc = subprocess.run([sys.executable, "-c", REFERENCE, json.dumps(folders), json.dumps(cases),
                           json.dumps(avx512_bf16)],
                          capture_output=True, text=True, env=clean_env(), timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return {"folders": folders, "rows": json.loads(proc.stdout.splitlines()[-1])}


@pytest.fixture(scope="module")
def release(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """Every family and case, the CPU feature probe answering False (as without AVX-512 BF16)."""
    return _reference(tmp_path_factory.mktemp("hybrid-fields"), CONFIGS, CASES, avx512_bf16=False)


@pytest.fixture(scope="module")
def release_avx512_bf16(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """Jamba alone, the probe answering True (as on a CPU with AVX-512 BF16)."""
    return _reference(tmp_path_factory.mktemp("hybrid-fields-bf16"), {"jamba": CONFIGS["jamba"]},
                      [(1, 0)], avx512_bf16=True)


def test_every_covered_family_has_a_tiny_config():
    """The Qwen3.5/3.6 classes are checked in tests/runtime/test_hybrid_grouping.py: their
    model module needs torchvision, which these environments leave out, so the reference
    here cannot resolve their class."""
    qwen3_5 = {f for f in FAMILIES if f.startswith("Qwen3_5")}
    assert qwen3_5, "the Qwen3.5/3.6 classes are covered"
    assert {c["architectures"][0] for c in CONFIGS.values()} == set(FAMILIES) - qwen3_5


@pytest.mark.parametrize("tp, spec", CASES, ids=lambda v: str(v))
@pytest.mark.parametrize("name", CONFIGS)
def test_config_fields_give_the_release_numbers(release, name, tp, spec):
    row = release["rows"][f"{name}/{tp}/{spec}"]
    if "error" in row:  # the release cannot load this family at all
        assert VLLM_RELEASE == "0.18.0" and name == "nemotron_h", row["error"]
        assert "does not recognize this architecture" in row["error"]
        return
    dtype = CONFIGS[name]["torch_dtype"]
    assert row["dtype"] == dtype  # the Mamba state follows the model's dtype
    mine = block_from_fields(release["folders"][name], dtype, 2, tp, spec)
    if VLLM_RELEASE == "0.32.0":  # another state layout (module docstring)
        assert mine.attention_bytes_per_token == row["attention_token"]
        assert "customize_spec" in row["block_error"]
        return
    assert mine.mamba_page_bytes == row["mamba"]
    assert mine.attention_bytes_per_token == row["attention_token"]
    # The attention layers the config's layer kinds name; vLLM's own count agrees where
    # this transformers keeps the kind names it tests for (elsewhere it counts none).
    assert mine.attention_layers == row["layers_kinds"] > 0
    if row["layers_vllm"]:
        assert mine.attention_layers == row["layers_vllm"]
    if VLLM_RELEASE == "0.25.0":
        assert mine.block_size == row["block"]
    else:
        assert row["block"] >= mine.block_size  # 0.18.0's own rule, never smaller here


def test_release_block_rounding(release):
    """0.25.0 enlarges the block for most families; 0.18.0's other rule gives other sizes,
    which is why estimate reads the fields only for 0.25.0."""
    rows = {name: release["rows"][f"{name}/1/0"] for name in CONFIGS}
    mine = {name: block_from_fields(release["folders"][name], CONFIGS[name]["torch_dtype"], 2).block_size
            for name in CONFIGS}
    assert mine["jamba"] == 48 and mine["lfm2"] == 16  # enlarged, and left at 16
    if VLLM_RELEASE == "0.18.0":
        assert any(rows[n]["block"] != mine[n] for n in CONFIGS if "block" in rows[n])
    elif VLLM_RELEASE == "0.25.0":
        assert {n: rows[n]["block"] for n in CONFIGS} == mine


# What each release's CPU platform does with the SSM state dtype for each answer of the probe
# (its vllm/platforms/cpu.py): 0.32.0 resets "auto" to float32 only where AVX-512 BF16 is found.
SSM_DTYPE_ON_CPU = {
    "0.32.0": {False: "auto", True: "float32"},
    "0.25.0": {False: "auto", True: "auto"},
    "0.18.0": {False: "auto", True: "auto"},
}


@pytest.mark.parametrize("avx512_bf16", [False, True], ids=["without-avx512-bf16", "with-avx512-bf16"])
def test_cpu_platform_ssm_state_dtype(release, release_avx512_bf16, avx512_bf16):
    """Both branches of the CPU platform's decision, whatever this machine's CPU: Jamba's
    temporal state (256 x 16) takes float32 where the platform reset the dtype, the model's
    bfloat16 otherwise; its conv state (3 x 256) stays bfloat16. The reading from the fields
    follows the model's dtype, as the release does on a GPU."""
    row = (release_avx512_bf16 if avx512_bf16 else release)["rows"]["jamba/1/0"]
    assert row["ssm_cache_dtype"] == SSM_DTYPE_ON_CPU[VLLM_RELEASE][avx512_bf16]
    temporal_bytes = 4 if row["ssm_cache_dtype"] == "float32" else 2
    assert row["mamba"] == 3 * 256 * 2 + 256 * 16 * temporal_bytes
    mine = block_from_fields(release["folders"]["jamba"], "bfloat16", 2)
    assert mine.mamba_page_bytes == (3 * 256 + 256 * 16) * 2
    assert (row["mamba"] == mine.mamba_page_bytes) == (row["ssm_cache_dtype"] == "auto")


def test_estimate_in_this_environment_takes_a_stated_path(release):
    """Here estimate runs the installed affected release's own code, or, where the installed
    release is not affected (0.32.0), reads the fields for 0.25.0: each says which."""
    folder = release["folders"]["jamba"]
    proc = subprocess.run([sys.executable, "-m", "cgguard", "estimate", folder, "--format", "json"],
                          capture_output=True, text=True, env=clean_env(), timeout=600)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    source = out["hybrid"]["block_size_source"]
    assert source == ("config-fields" if VLLM_RELEASE == "0.32.0" else "installed-release")
    if VLLM_RELEASE != "0.18.0":
        assert out["settings"]["block_size"] == 48
    assert out["bytes_per_block"] == 1 * out["settings"]["block_size"] * 256
