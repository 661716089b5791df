"""Helpers for the robustness tests: buggy sources, the real CLI, byte snapshots."""

from __future__ import annotations

import ctypes
import os
import subprocess
from pathlib import Path

from tests.conftest import run_cgguard

# A method carrying the pre-fix line of vLLM 0.18.0-0.25.x, and the exact text
# `cgguard fix` turns that line into (upstream's multi-line layout, vLLM 0.26.0).
BUGGY = '''\
class MyForkModelRunner(GPUModelRunner):
    def _init_minimal_kv_cache_for_profiling(self) -> None:
        kv_cache_spec = self.get_kv_cache_spec()
        min_blocks = self.compilation_config.max_cudagraph_capture_size or 1
        saved_override = self.cache_config.num_gpu_blocks_override
        self.cache_config.num_gpu_blocks_override = min_blocks
        try:
            minimal_config = get_kv_cache_config_from_groups(self.vllm_config, groups, available_memory=0)
        finally:
            self.cache_config.num_gpu_blocks_override = saved_override
'''
BUGGY_LINE = "        min_blocks = self.compilation_config.max_cudagraph_capture_size or 1\n"
FIXED_LINES = (
    "        min_blocks = (\n"
    "            min(self.max_num_reqs, self.compilation_config.max_cudagraph_capture_size)\n"
    "            or 1\n"
    "        )\n"
)
FIXED = BUGGY.replace(BUGGY_LINE, FIXED_LINES)
assert FIXED != BUGGY

CLEAN = '''\
def capture_sizes(config):
    # Per-token buffers sized by the capture size are fine: they count tokens.
    max_size = config.compilation_config.max_cudagraph_capture_size
    return [0] * (max_size + 1)
'''


def cgguard(*args: str, cwd: Path | str | None = None, env: dict | None = None,
            unprivileged: bool = False, timeout: float = 300) -> subprocess.CompletedProcess:
    """Run the real CLI in a fresh interpreter; ``unprivileged`` makes file permissions bite."""
    return run_cgguard(
        *args, cwd=cwd, env=env, timeout=timeout,
        preexec_fn=_drop_file_override if unprivileged and os.geteuid() == 0 else None,
    )


def _drop_file_override() -> None:
    """Run as root without the power to bypass file permissions.

    Tests here run as root in CI containers, where chmod 000 stops nobody. Dropping
    CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH from the bounding set makes the child's
    permission checks real, while it keeps reading root's own (0700) interpreter.
    """
    libc = ctypes.CDLL(None, use_errno=True)
    for cap in (1, 2):  # CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH
        if libc.prctl(24, cap, 0, 0, 0) != 0:  # PR_CAPBSET_DROP
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP) failed")


def assert_no_traceback(result: subprocess.CompletedProcess) -> None:
    for stream in (result.stdout, result.stderr):
        assert "Traceback" not in stream, stream
        assert 'File "' not in stream, stream


def snapshot(root: Path) -> dict[str, bytes]:
    """Every regular file under root (links not followed), by relative path."""
    out = {}
    for path in sorted(root.rglob("*")):
        if path.is_file() and not path.is_symlink():
            out[str(path.relative_to(root))] = path.read_bytes()
    return out


def error_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if ": error: " in line]
