"""A fix run killed midway (SIGKILL, no chance to clean up) leaves every file either
exactly its old bytes or exactly its new bytes, never a mix; leftover temporary
files are `.cgguard-*.tmp` (never taken for source), and running `fix` again
finishes the job.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.robustness.conftest import BUGGY, CLEAN, FIXED, assert_no_traceback, cgguard

N_FILES = 1500
# Padding makes each file several kilobytes, so a kill has a real chance of landing
# in the middle of a write if writes were not atomic.
PADDING = "".join(f"def pad_{i}(a, b):\n    return a * {i} + b\n\n" for i in range(150))
VARIANTS = {
    "lf": (BUGGY + PADDING).encode(),
    "crlf": (BUGGY + PADDING).replace("\n", "\r\n").encode(),
    "bom-tabs": b"\xef\xbb\xbf" + (BUGGY + PADDING).replace("    ", "\t").encode(),
    "latin1": ("# -*- coding: latin-1 -*-\n# d\u00e9j\u00e0 vu\n" + BUGGY + PADDING).encode("latin-1"),
    "clean": (CLEAN + PADDING).encode(),
}


def _expected_new_bytes(tmp_path: Path) -> dict[str, bytes]:
    """Each variant fixed by a separate, uninterrupted `cgguard fix` on a copy."""
    folder = tmp_path / "expected"
    folder.mkdir()
    for name, data in VARIANTS.items():
        (folder / f"{name}.py").write_bytes(data)
    result = cgguard("fix", str(folder))
    assert result.returncode == 0, result.stdout + result.stderr
    new = {name: (folder / f"{name}.py").read_bytes() for name in VARIANTS}
    assert new["clean"] == VARIANTS["clean"]
    assert all(new[name] != VARIANTS[name] for name in VARIANTS if name != "clean")
    return new


def _build_tree(root: Path) -> dict[Path, str]:
    variant_of = {}
    names = sorted(VARIANTS)
    for i in range(N_FILES):
        path = root / f"pkg{i // 100:02d}" / f"mod{i:04d}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        name = names[i % len(names)]
        path.write_bytes(VARIANTS[name])
        variant_of[path] = name
    return variant_of


def _state(root: Path, variant_of: dict[Path, str], new: dict[str, bytes]):
    """(files still old, files now new, temp files); fails on any other content."""
    old_count = new_count = 0
    for path, name in variant_of.items():
        data = path.read_bytes()
        if data == VARIANTS[name] and data == new[name]:
            continue  # a clean file: old and new are the same bytes
        if data == VARIANTS[name]:
            old_count += 1
        elif data == new[name]:
            new_count += 1
        else:
            raise AssertionError(f"{path} is neither its old nor its new bytes ({len(data)} bytes)")
    temps = []
    for folder, _, files in os.walk(root):
        for name in files:
            path = Path(folder, name)
            if path not in variant_of:
                assert name.startswith(".cgguard-") and name.endswith(".tmp"), f"unexpected file {path}"
                temps.append(path)
    return old_count, new_count, temps


def test_killed_fix_run_leaves_only_old_or_new_files(tmp_path):
    new = _expected_new_bytes(tmp_path)
    root = tmp_path / "tree"
    variant_of = _build_tree(root)
    n_buggy = sum(1 for name in variant_of.values() if name != "clean")

    kills_midway = 0
    delays = [0.8, 1.5, 1.0, 2.0, 3.0]
    for attempt in range(len(delays) + 1):
        # Its own session, so the kill reaches every process of the run (a forked
        # helper included), as when a terminal or CI job is killed.
        proc = subprocess.Popen([sys.executable, "-m", "cgguard", "fix", str(root)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                start_new_session=True)
        if attempt < len(delays):
            try:
                out, err = proc.communicate(timeout=delays[attempt])
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.communicate()
                time.sleep(0.2)  # let the kernel reap every process of the group
                old_count, new_count, temps = _state(root, variant_of, new)
                assert len(temps) <= 2 * (attempt + 1)  # at most one per process killed
                if old_count and new_count:
                    kills_midway += 1
                continue
        else:
            out, err = proc.communicate(timeout=300)
        # The run finished: everything is fixed.
        assert "Traceback" not in out + err
        assert proc.returncode == 0, out + err
        assert f"in {N_FILES} files checked" in out  # temp files were not taken for source
        break
    else:
        raise AssertionError("the fix never finished")

    assert kills_midway >= 1, "no kill landed in the middle of the run; make the tree bigger"
    old_count, new_count, temps = _state(root, variant_of, new)
    assert (old_count, new_count) == (0, n_buggy)
    for temp in temps:  # leftovers from killed runs hold at most one file's bytes
        assert temp.read_bytes() in set(new.values()) or len(temp.read_bytes()) <= max(map(len, new.values()))

    again = cgguard("fix", str(root))
    assert_no_traceback(again)
    assert again.returncode == 0 and "Fixed 0 findings." in again.stdout


def test_ctrl_c_stops_cleanly_with_exit_2_says_how_many_files_were_rewritten_and_leaves_no_temp_file(tmp_path):
    new = _expected_new_bytes(tmp_path)
    root = tmp_path / "tree"
    variant_of = _build_tree(root)
    # SIGINT's default action restored in the child: a test run started in the background
    # by a non-interactive shell inherits SIGINT ignored, and Python then never raises
    # KeyboardInterrupt (the run would finish and this test would say nothing about Ctrl-C).
    proc = subprocess.Popen([sys.executable, "-m", "cgguard", "fix", str(root)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    # Interrupt once some files are fixed (the first files in walk order change first).
    first = min(p for p, name in variant_of.items() if name != "clean")
    deadline = time.monotonic() + 60
    while first.read_bytes() != new[variant_of[first]]:
        assert proc.poll() is None and time.monotonic() < deadline, "the run ended before any fix"
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 2, out + err
    assert "Traceback" not in out + err
    old_count, new_count, temps = _state(root, variant_of, new)
    assert new_count >= 1 and old_count >= 1
    # The one line says how many files the run rewrote before it stopped: those on disk.
    assert err.strip().splitlines() == [
        f"cgguard: interrupted: {new_count} file{'s' if new_count != 1 else ''} already rewritten "
        "(each one whole); the others are untouched"
    ], err
    assert temps == []  # an interrupted write removes its temporary file


# ---- Ctrl-C while a fix is worked out ------------------------------------------------

BIG_FINDINGS = 3000  # each one costs the fix milliseconds: seconds of work in one file


def _big_buggy_module() -> str:
    """One class with BIG_FINDINGS methods, each with the pre-fix line."""
    head, body = BUGGY.split("\n", 1)
    return head + "\n" + "".join(
        body.replace("_init_minimal_kv_cache_for_profiling", f"_profile_{i}") for i in range(BIG_FINDINGS)
    )


def _cpu_seconds(pid: int) -> float:
    """CPU time the process has used (Linux /proc): the run's own progress, whatever the load."""
    with open(f"/proc/{pid}/stat") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _fix_in_background(root: Path) -> subprocess.Popen:
    # SIGINT's default action restored in the child (see the test above).
    return subprocess.Popen([sys.executable, "-m", "cgguard", "fix", str(root)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


def test_ctrl_c_while_a_fix_is_worked_out_writes_nothing(tmp_path):
    big = tmp_path / "big.py"
    big.write_text(_big_buggy_module())
    before = big.stat()
    proc = _fix_in_background(tmp_path)
    # Start-up and discovery take a fraction of a second of CPU; the fixes of this file,
    # seconds. Ctrl-C after one second of the run's CPU lands while they are worked out.
    deadline = time.monotonic() + 120
    while _cpu_seconds(proc.pid) < 1.0:
        assert proc.poll() is None and time.monotonic() < deadline, "the run ended before Ctrl-C"
        time.sleep(0.02)
    os.killpg(proc.pid, signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert (proc.returncode, err) == (2, "cgguard: interrupted: no file was rewritten\n"), out + err
    after = big.stat()
    assert big.read_text() == _big_buggy_module()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["big.py"]  # no temporary file


def test_ctrl_c_after_one_file_leaves_the_one_being_worked_out_as_it_was(tmp_path):
    (tmp_path / "a_small.py").write_text(BUGGY)  # fixed first (names come in sorted order)
    big = tmp_path / "b_big.py"
    big.write_text(_big_buggy_module())
    before = big.stat()
    proc = _fix_in_background(tmp_path)
    deadline = time.monotonic() + 120
    while (tmp_path / "a_small.py").read_text() != FIXED:
        assert proc.poll() is None and time.monotonic() < deadline, "the run ended before any fix"
        time.sleep(0.02)
    os.killpg(proc.pid, signal.SIGINT)  # the big file's fixes take seconds: they are being worked out
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 2, out + err
    assert err == ("cgguard: interrupted: 1 file already rewritten (each one whole); "
                   "the others are untouched\n")
    assert big.stat().st_ino == before.st_ino and big.read_text() == _big_buggy_module()
