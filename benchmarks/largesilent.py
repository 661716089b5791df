"""A large attention-backend module with nothing to report, written for the benchmark.

``module_text()`` returns a module of about 270 KB shaped like a fork's attention
backend: many backend, metadata-builder and implementation classes whose CUDA-graph
capture size sizes token buffers (query start locations, sequence lengths, slot
mappings) and a ``max()`` token capacity, beside KV-cache shapes and block tables, and a
profiling hook that sets the profiling KV cache's block count as upstream's fix does (one
block per sequence). It names the capture size and a sink (``num_gpu_blocks_override``),
so no byte screen can settle it; no per-token count reaches the sink, so a checker must
read it and report nothing.

The text is generated (the same every time), not copied from any project.
"""

from __future__ import annotations

# The size the benchmark asks for: inside 250-300 KB, like the fork's file it stands for.
TARGET_BYTES = 270_000

_HEADER = '''"""Attention backends for the fork's CUDA-graph-captured decode path (generated)."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from vllm.config import VllmConfig
from vllm.utils.math_utils import cdiv

BLOCK_M = 64
NUM_SPLITS = 4


def reserve_profiling_blocks(vllm_config: VllmConfig) -> None:
    """The fork's profiling hook: one block per sequence, as upstream bounds it."""
    capture_size = vllm_config.compilation_config.max_cudagraph_capture_size
    max_num_seqs = vllm_config.scheduler_config.max_num_seqs
    vllm_config.cache_config.num_gpu_blocks_override = min(max_num_seqs, capture_size) or 1

'''

_VARIANT = '''

@dataclass
class GraphAttentionMetadata{i}:
    num_actual_tokens: int
    max_query_len: int
    query_start_loc: torch.Tensor
    seq_lens: torch.Tensor
    block_table: torch.Tensor
    slot_mapping: torch.Tensor


class GraphAttentionBackend{i}:
    accept_output_buffer: bool = True

    @staticmethod
    def get_name() -> str:
        return "GRAPH_ATTN_{i}"

    @staticmethod
    def get_kv_cache_shape(num_blocks, block_size, num_kv_heads, head_size):
        if block_size % 16 != 0:
            raise ValueError("Block size must be a multiple of 16.")
        return (2, num_blocks, block_size, num_kv_heads, head_size)

    @staticmethod
    def get_supported_head_sizes() -> list[int]:
        return [64, 80, 96, 112, 128, 160, 192, 224, 256]


class GraphAttentionMetadataBuilder{i}:
    def __init__(self, kv_cache_spec, layer_names, vllm_config: VllmConfig, device):
        self.kv_cache_spec = kv_cache_spec
        self.layer_names = layer_names
        self.device = device
        self.block_size = kv_cache_spec.block_size
        self.max_num_seqs = vllm_config.scheduler_config.max_num_seqs
        self.max_model_len = vllm_config.model_config.max_model_len
        compilation_config = vllm_config.compilation_config
        capture_size = compilation_config.max_cudagraph_capture_size or 1
        self.max_graph_tokens = capture_size
        self.max_blocks_per_seq = cdiv(self.max_model_len, self.block_size)
        self.query_start_loc = torch.zeros(capture_size + 1, dtype=torch.int32, device=device)
        self.seq_lens = torch.zeros(
            max(capture_size, self.max_num_seqs), dtype=torch.int32, device=device
        )
        self.slot_mapping = torch.zeros(capture_size, dtype=torch.int64, device=device)
        self.block_table = torch.zeros(
            (self.max_num_seqs, self.max_blocks_per_seq), dtype=torch.int32, device=device
        )

    def token_capacity(self, vllm_config: VllmConfig) -> int:
        capture_size = vllm_config.compilation_config.max_cudagraph_capture_size
        return max(capture_size or 0, vllm_config.scheduler_config.max_num_batched_tokens)

    def build(self, common_prefix_len, common_attn_metadata, fast_build=False):
        num_reqs = common_attn_metadata.num_reqs
        num_actual_tokens = common_attn_metadata.num_actual_tokens
        if num_actual_tokens > self.max_graph_tokens:
            raise ValueError(f"{{num_actual_tokens}} tokens do not fit the captured graphs")
        self.query_start_loc[: num_reqs + 1].copy_(common_attn_metadata.query_start_loc)
        self.seq_lens[:num_reqs].copy_(common_attn_metadata.seq_lens)
        self.slot_mapping[:num_actual_tokens].copy_(common_attn_metadata.slot_mapping)
        num_blocks = common_attn_metadata.block_table_tensor.shape[1]
        self.block_table[:num_reqs, :num_blocks].copy_(common_attn_metadata.block_table_tensor)
        return GraphAttentionMetadata{i}(
            num_actual_tokens=num_actual_tokens,
            max_query_len=common_attn_metadata.max_query_len,
            query_start_loc=self.query_start_loc[: num_reqs + 1],
            seq_lens=self.seq_lens[:num_reqs],
            block_table=self.block_table[:num_reqs, :num_blocks],
            slot_mapping=self.slot_mapping[:num_actual_tokens],
        )


class GraphAttentionImpl{i}:
    def __init__(self, num_heads, head_size, scale, num_kv_heads, vllm_config: VllmConfig):
        self.num_heads = num_heads
        self.head_size = head_size
        self.scale = float(scale)
        self.num_kv_heads = num_kv_heads
        self.num_queries_per_kv = self.num_heads // self.num_kv_heads
        capture_size = vllm_config.compilation_config.max_cudagraph_capture_size or 1
        self.max_split_tokens = cdiv(capture_size, BLOCK_M) * BLOCK_M
        self.split_output = torch.empty(
            (NUM_SPLITS, self.max_split_tokens, num_heads, head_size), dtype=torch.float32
        )
        self.split_lse = torch.empty((NUM_SPLITS, self.max_split_tokens, num_heads))

    def forward(self, layer, query, key, value, kv_cache, attn_metadata, output):
        if attn_metadata is None:
            return output.fill_(0)
        num_tokens = attn_metadata.num_actual_tokens
        key_cache, value_cache = kv_cache.unbind(0)
        key_cache[attn_metadata.slot_mapping // key_cache.shape[1]] = key[:num_tokens, None]
        value_cache[attn_metadata.slot_mapping // value_cache.shape[1]] = value[:num_tokens, None]
        for split in range(NUM_SPLITS):
            part = self.split_output[split, :num_tokens]
            part.copy_(query[:num_tokens].float() * self.scale)
            self.split_lse[split, :num_tokens].fill_(float(split))
        merged = self.split_output[:, :num_tokens].sum(dim=0)
        output[:num_tokens].copy_(merged.to(output.dtype))
        return output
'''


def module_text(target_bytes: int = TARGET_BYTES) -> str:
    """The module: the header, then numbered copies of the backend until ``target_bytes``."""
    parts = [_HEADER]
    size = len(_HEADER)
    i = 0
    while size < target_bytes:
        part = _VARIANT.format(i=i)
        parts.append(part)
        size += len(part)
        i += 1
    return "".join(parts)
