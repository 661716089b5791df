"""The scheduler and CUDA-graph values an affected vLLM (0.18.0-0.25.x) resolves at start-up.

From ``EngineArgs.get_batch_defaults`` and
``_set_default_max_num_seqs_and_batched_tokens_args`` (``vllm/engine/arg_utils.py``):
a GPU with at least 70 GiB that is not an A100 gets ``max_num_seqs`` 1024 and
``max_num_batched_tokens`` 16384 for ``LLM`` / 8192 for the API server; other GPUs 256
and 8192 / 2048. A defaulted ``max_num_batched_tokens`` is capped at
``max_num_seqs x max_model_len`` (and raised to ``max_model_len`` without chunked
prefill); a defaulted ``max_num_seqs`` at ``max_num_batched_tokens``.

From ``VllmConfig._set_cudagraph_sizes`` (``vllm/config/vllm.py``): the capture size
is ``min(max_num_seqs x (1 + num_speculative_tokens) x 2, 512)`` unless given, then
at most ``max_num_batched_tokens``; the sizes captured are 1, 2, 4, multiples of 8
below 256 and of 16 from 256, up to it (0.22.0 and later also ``max_num_batched_tokens``
itself when it fits); the largest is the capture size the profiling cache follows.
Without CUDA graphs (``enforce_eager``, ``cudagraph_mode`` NONE) it is 0.
"""

from __future__ import annotations

from dataclasses import dataclass, field

GiB = 1 << 30
LARGE_GPU_GIB = 70
ENTRY_POINTS = ("serve", "LLM")
CAPTURE_CEILING = 512
# Total memory as torch reports it (decimal GB on the box is less in GiB), and the
# name vLLM reads (its lower case tested for "a100").
GPUS = {
    "A10G": (22.0, "NVIDIA A10G"),
    "L4": (22.0, "NVIDIA L4"),
    "RTX4090": (23.6, "NVIDIA GeForce RTX 4090"),
    "A100-40GB": (39.4, "NVIDIA A100-SXM4-40GB"),
    "L40S": (44.4, "NVIDIA L40S"),
    "A6000": (47.5, "NVIDIA RTX A6000"),
    "A100": (79.2, "NVIDIA A100-SXM4-80GB"),
    "A100-80GB": (79.2, "NVIDIA A100-SXM4-80GB"),
    "H100": (79.2, "NVIDIA H100 80GB HBM3"),
    "H200": (139.8, "NVIDIA H200"),
    "B200": (178.4, "NVIDIA B200"),
    "MI300X": (191.5, "AMD Instinct MI300X"),
}
BATCHED_TOKENS = {  # (large GPU, entry point) -> default max_num_batched_tokens
    (True, "LLM"): 16384,
    (True, "serve"): 8192,
    (False, "LLM"): 8192,
    (False, "serve"): 2048,
}
SOURCE_ARGS = "vllm/engine/arg_utils.py"
SOURCE_CONFIG = "vllm/config/vllm.py"


@dataclass(frozen=True)
class Request:
    """What the operator gives; None: vLLM's default."""

    release: tuple[int, int, int]
    gpu_memory_gib: float
    gpu_name: str
    entry_point: str  # "serve" or "LLM"
    max_num_seqs: int | None = None
    max_num_batched_tokens: int | None = None
    max_cudagraph_capture_size: int | None = None
    cudagraph_capture_sizes: tuple[int, ...] | None = None
    num_speculative_tokens: int = 0
    max_model_len: int | None = None
    chunked_prefill: bool = True
    cuda_graphs: bool = True  # False under enforce_eager or cudagraph_mode NONE


@dataclass
class Resolved:
    max_num_seqs: int
    max_num_batched_tokens: int
    capture_size: int  # 0 without CUDA graphs
    assumed: list[str] = field(default_factory=list)  # defaults taken, with their source


def is_large_gpu(memory_gib: float, name: str) -> bool:
    return memory_gib >= LARGE_GPU_GIB and "a100" not in name.lower()


def capture_sizes(ceiling: int, max_num_tokens: int, release: tuple[int, int, int]) -> list[int]:
    """The capture sizes vLLM builds when none are given, for a capped ceiling."""
    sizes = [i for i in (1, 2, 4) if i <= ceiling]
    if ceiling >= 8:
        sizes += list(range(8, min(ceiling + 1, 256), 8))
    if ceiling >= 256:
        sizes += list(range(256, ceiling + 1, 16))
    if release >= (0, 22, 0) and max_num_tokens <= ceiling and max_num_tokens not in sizes:
        sizes.append(max_num_tokens)
    return sorted(set(sizes))


def resolve(req: Request) -> Resolved:
    large = is_large_gpu(req.gpu_memory_gib, req.gpu_name)
    gpu = f"{req.gpu_name} with {req.gpu_memory_gib:g} GiB"
    size_rule = (
        f">= {LARGE_GPU_GIB} GiB and not an A100"
        if large
        else f"under {LARGE_GPU_GIB} GiB or an A100"
    )
    assumed: list[str] = []
    seqs = req.max_num_seqs
    default_seqs = 1024 if large else 256
    tokens = req.max_num_batched_tokens
    if tokens is None:
        tokens = BATCHED_TOKENS[(large, req.entry_point)]
        why = f"vLLM's default for `{req.entry_point}` on a GPU {size_rule} ({gpu}), {SOURCE_ARGS}"
        if req.max_model_len is not None:
            if not req.chunked_prefill:
                tokens = max(req.max_model_len, tokens)
            tokens = min((seqs or default_seqs) * req.max_model_len, tokens)
        assumed.append(f"max_num_batched_tokens {tokens} ({why})")
    if seqs is None:
        seqs = min(default_seqs, tokens)
        assumed.append(
            f"max_num_seqs {seqs} (vLLM's default on a GPU {size_rule}, at most "
            f"max_num_batched_tokens; {SOURCE_ARGS})"
        )
    if not req.cuda_graphs:
        return Resolved(seqs, tokens, 0, assumed)
    if req.cudagraph_capture_sizes is not None:
        kept = sorted({s for s in req.cudagraph_capture_sizes if s <= tokens})
        capture = kept[-1] if kept else 0
        if capture != max(req.cudagraph_capture_sizes):
            assumed.append(
                f"capture size {capture}: the largest listed size within max_num_batched_tokens "
                f"{tokens} ({SOURCE_CONFIG})"
            )
        return Resolved(seqs, tokens, capture, assumed)
    query_len = 1 + req.num_speculative_tokens
    if req.max_cudagraph_capture_size is None:
        ceiling = min(seqs * query_len * 2, CAPTURE_CEILING)
        formula = f"min(max_num_seqs {seqs} x {query_len} x 2, {CAPTURE_CEILING})"
    else:
        ceiling = req.max_cudagraph_capture_size
        formula = f"--max-cudagraph-capture-size {ceiling}"
    capped = min(tokens, ceiling)
    capture = capture_sizes(capped, tokens, req.release)[-1]
    if req.max_cudagraph_capture_size is None or capture != req.max_cudagraph_capture_size:
        steps = f"{formula}, at most max_num_batched_tokens {tokens}"
        if capture != capped:
            steps += f", then the largest capture size vLLM builds up to {capped}"
        assumed.append(f"capture size {capture} tokens ({steps}; {SOURCE_CONFIG})")
    return Resolved(seqs, tokens, capture, assumed)
