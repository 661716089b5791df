"""KV cache arithmetic for the profiling cache (docs/vllm.md, "Memory arithmetic").

Bytes per block = layers x block_size x bytes per token per layer, where a token
costs per layer:

- standard / grouped-query attention: 2 (K and V) x KV heads per rank x head_dim x
  dtype bytes, KV heads per rank = max(1, num_key_value_heads // tensor_parallel);
- MLA: (kv_lora_rank + qk_rope_head_dim) x dtype bytes: one latent vector, no K/V
  pair, replicated on every rank rather than split.

Sliding-window layers are counted like full ones (the profiling cache gives every
layer the same number of blocks). The profiling cache takes
``per_token_block_count(capture)`` blocks in vLLM 0.18.0-0.25.x and
``profiling_block_bound(max_num_seqs, capture)`` from 0.26.0 on.
"""

from __future__ import annotations

from dataclasses import dataclass

from cgguard.ops.release.model_config import DTYPE_NAMES, ModelShape
from cgguard.shared.bound import per_token_block_count, profiling_block_bound

DTYPE_BYTES = {"bfloat16": 2, "float16": 2, "float32": 4}
FP8_KV_CACHE_DTYPES = ("fp8", "fp8_e4m3", "fp8_e5m2", "fp8_inc")
# MLA-only packed layouts, bytes per token per layer as vLLM lays them out
# (vllm/model_executor/layers/attention/mla_attention.py: fp8 latent + scales + bf16 rope).
MLA_PACKED_KV_BYTES = {"fp8_ds_mla": 656, "nvfp4_ds_mla": 352}
KV_CACHE_DTYPES = ("auto", "bfloat16", "float16", *FP8_KV_CACHE_DTYPES, *MLA_PACKED_KV_BYTES)
MODEL_DTYPES = ("auto", "bfloat16", "float16", "half", "float32", "float")

# vLLM's default KV cache block size, in tokens (its CacheConfig.DEFAULT_BLOCK_SIZE).
DEFAULT_BLOCK_SIZE = 16


class EstimateError(Exception):
    """Options that do not fit the model: one line for the user."""


@dataclass(frozen=True)
class KvDtype:
    name: str
    token_layer_bytes: int | None  # fixed bytes per token per layer (packed MLA layouts)
    element_bytes: int  # bytes per cached element otherwise
    source: str  # why this dtype, for the output


def resolve_kv_dtype(kv_cache_dtype: str, model_dtype: str, shape: ModelShape) -> KvDtype:
    """The KV cache element size: ``auto`` follows the model dtype as vLLM resolves it."""
    if kv_cache_dtype in FP8_KV_CACHE_DTYPES:
        return KvDtype(kv_cache_dtype, None, 1, "set by --kv-cache-dtype")
    if kv_cache_dtype in MLA_PACKED_KV_BYTES:
        if not shape.mla:
            raise EstimateError(
                f"--kv-cache-dtype {kv_cache_dtype} needs an MLA model (config has no kv_lora_rank)"
            )
        return KvDtype(
            kv_cache_dtype, MLA_PACKED_KV_BYTES[kv_cache_dtype], 1, "set by --kv-cache-dtype"
        )
    if kv_cache_dtype != "auto":
        return KvDtype(kv_cache_dtype, None, DTYPE_BYTES[kv_cache_dtype], "set by --kv-cache-dtype")
    if model_dtype != "auto":
        name = DTYPE_NAMES[model_dtype]
        return KvDtype(name, None, DTYPE_BYTES[name], "follows --dtype")
    if shape.dtype is None:
        # Hugging Face reads a missing dtype as float32, which vLLM runs in 16 bits.
        return KvDtype("bfloat16", None, 2, "config.json names no dtype; vLLM runs it in 16 bits")
    if shape.dtype == "float32":
        # vLLM's --dtype auto downcasts float32 checkpoints (vllm/config/model.py).
        return KvDtype(
            "bfloat16", None, 2, "float32 checkpoint, which vLLM's --dtype auto runs in 16 bits"
        )
    return KvDtype(
        shape.dtype, None, DTYPE_BYTES[shape.dtype], f"from the model's {shape.dtype_field}"
    )


def kv_heads_per_rank(shape: ModelShape, tensor_parallel_size: int) -> int | None:
    if shape.mla or shape.num_kv_heads is None:
        return None
    return max(1, shape.num_kv_heads // tensor_parallel_size)


def token_layer_bytes(shape: ModelShape, kv: KvDtype, tensor_parallel_size: int) -> int:
    """Bytes one token takes in one layer's KV cache on one rank."""
    if kv.token_layer_bytes is not None:
        return kv.token_layer_bytes
    if shape.mla:
        assert shape.kv_lora_rank is not None and shape.qk_rope_head_dim is not None
        return (shape.kv_lora_rank + shape.qk_rope_head_dim) * kv.element_bytes
    heads = kv_heads_per_rank(shape, tensor_parallel_size)
    assert heads is not None and shape.head_dim is not None
    return 2 * heads * shape.head_dim * kv.element_bytes


def bytes_per_block(
    shape: ModelShape, kv: KvDtype, block_size: int, tensor_parallel_size: int
) -> int:
    return shape.num_layers * block_size * token_layer_bytes(shape, kv, tensor_parallel_size)


@dataclass(frozen=True)
class CacheSize:
    blocks: int
    bytes: int


@dataclass(frozen=True)
class ProfilingEstimate:
    bytes_per_block: int
    max_num_seqs: int
    capture_size: int
    per_token: CacheSize  # vLLM 0.18.0-0.25.x
    per_sequence: CacheSize  # vLLM 0.26.0+ (upstream's bound)

    @property
    def ratio(self) -> float:
        return self.per_token.bytes / self.per_sequence.bytes


def profiling_estimate(block_bytes: int, max_num_seqs: int, capture_size: int) -> ProfilingEstimate:
    per_token = per_token_block_count(capture_size)
    per_sequence = profiling_block_bound(max_num_seqs, capture_size)
    return ProfilingEstimate(
        bytes_per_block=block_bytes,
        max_num_seqs=max_num_seqs,
        capture_size=capture_size,
        per_token=CacheSize(per_token, per_token * block_bytes),
        per_sequence=CacheSize(per_sequence, per_sequence * block_bytes),
    )
