"""The attention block size vLLM uses for a hybrid (Mamba / linear-attention) model.

vLLM raises the attention block size until one attention page holds a Mamba state
(the log line "Setting attention block size to N tokens to ensure that attention
page size is >= mamba page size."). The state's shape comes from the model class's
``get_mamba_state_shape_from_config``, so the size is computed by the installed
vLLM's own code, in a child process (importing vLLM takes seconds and must not
happen in cgguard's): ``Platform._align_hybrid_block_size`` from 0.22.0 on, with
FlashAttention's kernel block sizes (multiples of 16) standing in for the GPU's
backend; ``HybridAttentionMambaModelConfig.verify_and_update_config`` before. Prefix
caching stays off, vLLM's default for hybrid models, so the Mamba cache mode is none.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass

from cgguard.ops.release.installed import vllm_importable
from cgguard.ops.release.model_config import TEXT_SECTIONS, ConfigError, config_path, load_json

TIMEOUT_S = 300

PROBE = r"""
import json, logging, os, sys
logging.disable(logging.CRITICAL)
os.environ.setdefault("HF_HUB_OFFLINE", "1")
from vllm.config import CacheConfig, ModelConfig, VllmConfig
from vllm.model_executor.models import ModelRegistry
from vllm.v1.kv_cache_interface import FullAttentionSpec, MambaSpec, MLAAttentionSpec
from vllm.utils.torch_utils import STR_DTYPE_TO_TORCH_DTYPE

folder, dtype, cache_dtype = sys.argv[1], sys.argv[2], sys.argv[3]
model_config = ModelConfig(model=folder, skip_tokenizer_init=True, dtype=dtype, max_model_len=256)
vllm_config = VllmConfig(model_config=model_config,
                         cache_config=CacheConfig(block_size=16, cache_dtype=cache_dtype))
cache = vllm_config.cache_config
cache.block_size = 16
cache.mamba_cache_mode = "none"
cache.mamba_page_size_padded = None
try:
    from vllm.platforms.interface import Platform
    align = Platform._align_hybrid_block_size
except AttributeError:
    align = None
if align is not None:
    from vllm.v1.attention.backend import MultipleOf

    class FlashAttentionKernelSizes:  # the GPU backend's answer (FlashAttention's)
        @staticmethod
        def get_supported_kernel_block_sizes():
            return [MultipleOf(16)]

    align(vllm_config, FlashAttentionKernelSizes)
    how = "vllm/platforms/interface.py: Platform._align_hybrid_block_size"
else:
    from vllm.model_executor.models.config import HybridAttentionMambaModelConfig
    HybridAttentionMambaModelConfig.verify_and_update_config(vllm_config)
    how = "vllm/model_executor/models/config.py: HybridAttentionMambaModelConfig"
model_cls, _ = ModelRegistry.resolve_model_cls(model_config.architecture, model_config=model_config)
mamba = MambaSpec(shapes=model_cls.get_mamba_state_shape_from_config(vllm_config),
                  dtypes=model_cls.get_mamba_state_dtype_from_config(vllm_config),
                  block_size=-1).page_size_bytes
kv_dtype = model_config.dtype if cache.cache_dtype == "auto" else STR_DTYPE_TO_TORCH_DTYPE[cache.cache_dtype]
spec = MLAAttentionSpec if model_config.use_mla else FullAttentionSpec
attn = spec(block_size=1, num_kv_heads=model_config.get_num_kv_heads(vllm_config.parallel_config),
            head_size=model_config.get_head_size(), dtype=kv_dtype).page_size_bytes
print(json.dumps({"block_size": cache.block_size, "mamba_page_bytes": mamba,
                  "attention_bytes_per_token": attn, "how": how,
                  "attention_layers": model_config.get_num_layers_by_block_type(
                      vllm_config.parallel_config, "attention")}))
"""


@dataclass(frozen=True)
class HybridBlock:
    block_size: int
    mamba_page_bytes: int  # one Mamba state, per layer
    attention_bytes_per_token: int  # one token of one attention layer
    attention_layers: int
    how: str  # which of the release's functions computed it


class ProbeError(Exception):
    """The installed vLLM could not compute it; the message says why, in one line."""


def hybrid_block_size(model_dir: str, dtype: str, cache_dtype: str) -> HybridBlock | None:
    """The block size the installed vLLM picks for this model; None without a vLLM
    this Python imports."""
    if not vllm_importable():
        return None
    folder = model_dir if os.path.isdir(model_dir) else os.path.dirname(model_dir) or "."
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    try:
        proc = subprocess.run(
            [sys.executable, "-c", PROBE, folder, dtype, cache_dtype],
            capture_output=True,
            text=True,
            env=env,
            timeout=TIMEOUT_S,
        )
    except subprocess.TimeoutExpired:
        raise ProbeError(f"the installed vLLM took over {TIMEOUT_S} s to compute it") from None
    if proc.returncode != 0:
        lines = [line for line in proc.stderr.strip().splitlines() if line.strip()]
        raise ProbeError(
            f"the installed vLLM could not compute it: {lines[-1] if lines else 'no output'}"
        )
    try:
        out = json.loads(proc.stdout.strip().splitlines()[-1])
        return HybridBlock(
            int(out["block_size"]),
            int(out["mamba_page_bytes"]),
            int(out["attention_bytes_per_token"]),
            int(out["attention_layers"]),
            str(out["how"]),
        )
    except (ValueError, KeyError, IndexError, TypeError):
        raise ProbeError("the installed vLLM's answer could not be read") from None


def count_attention_layers(model_dir: str) -> int | None:
    """Attention layers a hybrid config lists (``layer_types``, ``layers_block_type``,
    ``attn_layer_indices``, or the ``*`` of ``hybrid_override_pattern``); None when
    it lists none."""
    try:
        top = load_json(config_path(model_dir))
    except ConfigError:
        return None
    section = next((k for k in TEXT_SECTIONS if isinstance(top.get(k), dict)), None)
    if section is not None:  # vLLM's hf_text_config: the text model's fields first
        top = {**top, **top[section]}
    for key in ("layer_types", "layers_block_type"):
        kinds = top.get(key)
        if isinstance(kinds, list) and kinds:
            return sum(1 for k in kinds if isinstance(k, str) and "attention" in k)
    indices = top.get("attn_layer_indices")
    if isinstance(indices, list):
        return len(indices)
    pattern = top.get("hybrid_override_pattern")
    if isinstance(pattern, str):
        return pattern.count("*")
    return None


def count_state_layers(model_dir: str) -> int | None:
    """Layers a hybrid config lists as keeping a state (Mamba, linear attention, short
    convolution): the ``M`` of ``hybrid_override_pattern``, or the kinds of
    ``layer_types`` / ``layers_block_type``; None when it lists none."""
    try:
        top = load_json(config_path(model_dir))
    except ConfigError:
        return None
    section = next((k for k in TEXT_SECTIONS if isinstance(top.get(k), dict)), None)
    if section is not None:
        top = {**top, **top[section]}
    pattern = top.get("hybrid_override_pattern")
    if isinstance(pattern, str):
        return pattern.count("M")
    for key in ("layer_types", "layers_block_type"):
        kinds = top.get(key)
        if isinstance(kinds, list) and kinds:
            return sum(
                1
                for k in kinds
                if isinstance(k, str) and any(w in k for w in ("mamba", "linear", "conv", "ssm"))
            )
    return None
