"""Running the real tools on a folder: cgguard, Fixit and libcst's codemod CLI.

Each runs in a fresh interpreter of the test environment, as a user would type it;
findings come back as ``(path, line, column, code, message)`` with 1-based columns
and paths relative to the folder.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from tests.conftest import run_cgguard

FIXIT_RULES = "cgguard.ecosystem.fixit"
CODEMOD = "cgguard.ecosystem.codemod.BoundProfilingBlocks"
# `path@LINE:COL RULE: message` with Fixit's 0-based column, then maybe ` (has autofix)`.
FIXIT_LINE = re.compile(
    r"^(?P<path>.+)@(?P<line>\d+):(?P<col>\d+) (?P<code>CGG\d{3}): (?P<msg>.*?)(?P<fix> \(has autofix\))?$"
)

Finding = tuple[str, int, int, str, str]


def run_python(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], cwd=cwd, capture_output=True, text=True, timeout=600)


def cgguard_findings(folder: Path, *options: str) -> set[Finding]:
    result = run_cgguard("check", *options, "--format", "json", ".", cwd=folder)
    assert result.returncode in (0, 1), result.stderr
    return {(Path(f["path"]).as_posix(), f["line"], f["column"], f["code"], f["message"]) for f in json.loads(result.stdout)}


def fixit_lint(folder: Path) -> subprocess.CompletedProcess:
    result = run_python("-m", "fixit", "--rules", FIXIT_RULES, "lint", ".", cwd=folder)
    assert result.returncode in (0, 1), result.stdout + result.stderr
    return result


def fixit_findings(folder: Path) -> set[Finding]:
    return {f for f, _ in fixit_findings_and_autofix(folder)}


def fixit_findings_and_autofix(folder: Path) -> set[tuple[Finding, bool]]:
    """Each finding Fixit prints, and whether it says ``(has autofix)``."""
    result = fixit_lint(folder)
    found = set()
    for line in result.stdout.splitlines():
        m = FIXIT_LINE.match(line)
        assert m, f"unexpected Fixit output line: {line!r}\n{result.stderr}"
        found.add(((Path(m["path"]).as_posix(), int(m["line"]), int(m["col"]) + 1, m["code"], m["msg"]), bool(m["fix"])))
    return found


def fixit_fix(folder: Path) -> subprocess.CompletedProcess:
    result = run_python("-m", "fixit", "--rules", FIXIT_RULES, "fix", "--automatic", ".", cwd=folder)
    assert result.returncode in (0, 1), result.stdout + result.stderr
    return result


def codemod(folder: Path) -> subprocess.CompletedProcess:
    result = run_python("-m", "libcst.tool", "codemod", "-x", "--no-format", CODEMOD, ".", cwd=folder)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Failed to codemod 0 files" in result.stderr
    return result


def files(folder: Path) -> dict[str, bytes]:
    """Every Python file under ``folder`` by relative path, with its bytes."""
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*.py"))}
