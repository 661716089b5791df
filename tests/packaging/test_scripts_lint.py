"""``scripts/lint``: every step runs, each says passed or FAILED in one line, and any failure
fails the run.

It runs on a small tree of its own (a copy of the script, a settings file, a package with
a lint error and a type error), with the test environment's ruff and mypy; the package's
``python -m cgguard`` stands in for cgguard's check there, so that only the script is tested.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO


def _lint(repo: Path) -> tuple[int, list[str]]:
    result = subprocess.run(
        ["bash", "scripts/lint"], cwd=repo, env=dict(os.environ, LINT_PYTHON=sys.executable),
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=600,
    )
    return result.returncode, [line for line in result.stdout.splitlines() if line.startswith("scripts/lint: ")]


def test_each_step_says_passed_or_failed_and_a_failure_fails_the_run(tmp_path):
    repo = tmp_path / "repo"
    (repo / "scripts").mkdir(parents=True)
    shutil.copy(REPO / "scripts" / "lint", repo / "scripts" / "lint")
    (repo / "pyproject.toml").write_text('[tool.ruff]\nline-length = 100\n\n[tool.mypy]\nfiles = ["cgguard"]\n')
    package = repo / "cgguard"
    package.mkdir()
    (package / "__main__.py").write_text('import sys\n\nprint("No findings in 1 file checked.")\nsys.exit(0)\n')
    (package / "__init__.py").write_text('import os\n\nCOUNT: int = "one"\n')  # unused import, wrong type
    code, lines = _lint(repo)
    assert (code, lines) == (1, [
        "scripts/lint: ruff check cgguard: FAILED (exit 1, its output above)",
        "scripts/lint: ruff format --check cgguard: passed",
        "scripts/lint: mypy: FAILED (exit 1, its output above)",
        "scripts/lint: cgguard check .: passed",
    ])
    (package / "__init__.py").write_text("COUNT: int = 1\n")
    (package / "__main__.py").write_text('import sys\n\nprint("Found 1 finding.")\nsys.exit(1)\n')
    code, lines = _lint(repo)
    assert (code, lines) == (1, [
        "scripts/lint: ruff check cgguard: passed",
        "scripts/lint: ruff format --check cgguard: passed",
        "scripts/lint: mypy: passed",
        "scripts/lint: cgguard check .: FAILED (exit 1, its output above)",
    ])
    (package / "__main__.py").write_text('print("No findings in 1 file checked.")\n')
    assert _lint(repo) == (0, [
        "scripts/lint: ruff check cgguard: passed",
        "scripts/lint: ruff format --check cgguard: passed",
        "scripts/lint: mypy: passed",
        "scripts/lint: cgguard check .: passed",
    ])


def test_without_the_tools_python_it_says_so(tmp_path):
    result = subprocess.run(["bash", str(REPO / "scripts" / "lint")], cwd=tmp_path, text=True,
                            env=dict(os.environ, LINT_PYTHON=str(tmp_path / "no-python")),
                            capture_output=True, timeout=60)
    assert result.returncode == 2
    assert result.stderr == f"scripts/lint: FAILED (no {tmp_path / 'no-python'}; run scripts/test first, or set LINT_PYTHON)\n"
