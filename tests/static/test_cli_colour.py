"""Colour on a terminal, with ruff's switches (`NO_COLOR`, `FORCE_COLOR`), through the real
command line: a pseudo-terminal for standard output, a pipe, and a file."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.workflow.conftest import CGG001_SOURCE

CGGUARD = str(Path(sys.executable).with_name("cgguard"))
PATH_BOLD = "\x1b[1mrunner.py\x1b[0m:3:22: "
CODE_RED = "\x1b[1m\x1b[31mCGG001\x1b[0m "


def _env(**switches: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")}
    env.update(switches)
    return env


def _on_a_terminal(args: list[str], cwd: Path, **switches: str) -> str:
    """What the command writes to standard output when that is a terminal."""
    leader, follower = os.openpty()
    proc = subprocess.Popen([CGGUARD, *args], cwd=cwd, stdout=follower, stderr=subprocess.DEVNULL,
                            env=_env(**switches))
    os.close(follower)  # the child holds it: reading ends when the child is done
    chunks = []
    try:
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # EIO: the terminal's other end is closed and drained
                break
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(leader)
    assert proc.wait(timeout=300) == 1
    return b"".join(chunks).decode().replace("\r\n", "\n")


def _piped(args: list[str], cwd: Path, **switches: str) -> str:
    proc = subprocess.run([CGGUARD, *args], cwd=cwd, capture_output=True, text=True,
                          env=_env(**switches), timeout=300)
    assert proc.returncode == 1, proc.stderr
    return proc.stdout


def test_colour_on_a_terminal_and_the_switches(tmp_path):
    (tmp_path / "runner.py").write_text(CGG001_SOURCE)
    args = ["check", "--isolated", "runner.py"]
    shown = _on_a_terminal(args, tmp_path)
    assert shown.startswith(PATH_BOLD + CODE_RED + "`min_blocks` counts"), repr(shown)
    plain = _piped(args, tmp_path)
    assert "\x1b" not in plain and plain.startswith("runner.py:3:22: CGG001 `min_blocks`")
    # Colour adds codes around the path and the code, nothing else.
    assert shown.replace("\x1b[1m", "").replace("\x1b[31m", "").replace("\x1b[0m", "") == plain
    assert "\x1b" not in _on_a_terminal(args, tmp_path, NO_COLOR="1")
    assert _on_a_terminal(args, tmp_path, NO_COLOR="") == shown  # empty: not set
    assert _piped(args, tmp_path, FORCE_COLOR="1") == shown
    assert _piped(args, tmp_path, FORCE_COLOR="1", NO_COLOR="1") == shown  # FORCE_COLOR wins
    # --format full and --statistics colour the same parts.
    assert _piped([*args, "--format", "full"], tmp_path, FORCE_COLOR="1").startswith(PATH_BOLD + CODE_RED)
    stats = _piped([*args, "--statistics"], tmp_path, FORCE_COLOR="1")
    assert stats.startswith("1\t" + CODE_RED.rstrip() + "\t[*] per-token-profiling-blocks\n")


def test_no_colour_in_a_file_or_a_machine_format(tmp_path):
    (tmp_path / "runner.py").write_text(CGG001_SOURCE)
    args = ["check", "--isolated", "runner.py"]
    assert "\x1b" not in _on_a_terminal([*args, "-o", "report.txt"], tmp_path, FORCE_COLOR="1")
    assert "\x1b" not in (tmp_path / "report.txt").read_text()
    for fmt in ("json", "sarif", "github"):
        assert "\x1b" not in _on_a_terminal([*args, "--format", fmt], tmp_path, FORCE_COLOR="1")
