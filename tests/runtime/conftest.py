"""Fixtures for the runtime guard tests: a tiny dummy Llama on real vLLM (CPU build).

No weights are needed: vLLM builds the model from ``config.json`` with
``load_format="dummy"`` (field notes, section 5). One engine is shared per test
module because start-up takes 15-40 s on these machines.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import pytest

# hidden 128, 2 layers, 2 KV heads of 32 dims, float32: 131,072 bytes per 128-token block.
TINY_LLAMA = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_size": 128,
    "intermediate_size": 256,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 32,
    "vocab_size": 512,
    "max_position_embeddings": 256,
    "rms_norm_eps": 1e-6,
    "torch_dtype": "float32",
    "bos_token_id": 1,
    "eos_token_id": 2,
    "tie_word_embeddings": False,
}
MAX_NUM_SEQS = 4
CAPTURE_SIZE = 512  # vLLM's default max_cudagraph_capture_size, in tokens
LLM_KWARGS = dict(
    load_format="dummy",
    skip_tokenizer_init=True,
    max_model_len=128,
    max_num_seqs=MAX_NUM_SEQS,
    dtype="float32",
    enforce_eager=True,
    gpu_memory_utilization=0.2,
)
GUARD_ENV = ("CGGUARD_MODE", "CGGUARD_REPORT", "VLLM_PLUGINS")


def write_tiny_llama(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(TINY_LLAMA))
    return folder


@pytest.fixture(scope="session")
def tiny_llama(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_tiny_llama(tmp_path_factory.mktemp("tiny-llama"))


def read_report(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines()]


def clean_env(**extra: str) -> dict[str, str]:
    """The environment for a vLLM subprocess: offline, no inherited guard settings."""
    env = {k: v for k, v in os.environ.items() if k not in GUARD_ENV}
    env["HF_HUB_OFFLINE"] = "1"
    env.update(extra)
    return env


def run_python(code: str, env: dict[str, str], timeout: int = 600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=timeout)


@contextmanager
def profiling_cache(runner, capture_size: int = CAPTURE_SIZE) -> Iterator[None]:
    """Make room for a profiling KV cache on a live runner, then put the real one back.

    The CPU worker never profiles CUDA-graph memory itself, so the tests call the
    runner's own profiling method inside this block (field notes, section 5).
    """
    real_config = runner.kv_cache_config
    real_blocks = runner.cache_config.num_gpu_blocks
    saved_capture = runner.compilation_config.max_cudagraph_capture_size
    runner.compilation_config.max_cudagraph_capture_size = capture_size
    runner._cleanup_profiling_kv_cache()
    try:
        yield
    finally:
        runner._cleanup_profiling_kv_cache()
        runner.compilation_config.max_cudagraph_capture_size = saved_capture
        runner.initialize_kv_cache(real_config)
        runner.cache_config.num_gpu_blocks = real_blocks


def allocated_kv(runner) -> tuple[int, int]:
    """(blocks, bytes) of the KV cache the runner holds now, bytes read from the tensors."""
    storages = {t.untyped_storage().data_ptr(): t.untyped_storage().nbytes() for t in runner.kv_caches}
    return runner.kv_cache_config.num_blocks, sum(storages.values())


def kv_tensors_exist(runner) -> bool:
    if runner.kv_caches:
        return True
    for layer in runner.compilation_config.static_forward_context.values():
        cache = getattr(layer, "kv_cache", None)
        if cache is not None and getattr(cache, "numel", lambda: len(cache))() > 0:
            return True
    return False


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


@pytest.fixture
def guard_log() -> Iterator[list[str]]:
    """Messages the guard logs during a test (WARNING and up).

    Attached to the guard's own logger: it is a child of vLLM's logger, which does
    not propagate to the root logger where pytest's caplog listens.
    """
    from cgguard.runtime.state import LOGGER_NAME

    logger = logging.getLogger(LOGGER_NAME)
    handler = _Records()
    handler.setLevel(logging.WARNING)
    logger.addHandler(handler)
    try:
        yield handler.messages
    finally:
        logger.removeHandler(handler)
