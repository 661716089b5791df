"""benchmarks/scaledprojects.py scales the rules' project cases to a fork's size and says
whether each keeps its findings within the memory targets.

A small folder stands in for the installed vLLM package (``--corpus``). No time and no memory
figure is asserted: the files each checkout holds, the findings and fixes it checks, and the
verdicts and exit codes it gives.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from benchmarks import scaledprojects
from tests.conftest import BUGGY_RUNNER, REPO

SCRIPT = REPO / "benchmarks" / "scaledprojects.py"
CASE = "CGG001/flagged/imports_project_helper/"

BOUNDED = """def profiling_blocks(self):
    return min(self.max_num_reqs, self.compilation_config.max_cudagraph_capture_size) or 1
"""


def _corpus(tmp_path: Path, files: dict[str, str]) -> Path:
    corpus = tmp_path / "vllm-corpus"
    for rel, text in files.items():
        (corpus / rel).parent.mkdir(parents=True, exist_ok=True)
        (corpus / rel).write_text(text)
    return corpus


def _run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=300,
        env=env,
    )


def test_a_case_scaled_with_a_fixed_tree_keeps_its_findings_and_passes(tmp_path):
    files = {"__init__.py": "", **{f"pkg/m{i}.py": BOUNDED for i in range(20)}}
    corpus = _corpus(tmp_path, files)
    result = _run("--files", "30", "--only", CASE, "--corpus", str(corpus), "--strict")
    assert result.returncode == 0, result.stdout + result.stderr
    rows = [line for line in result.stdout.splitlines() if line.startswith(f"| {CASE}")]
    assert len(rows) == 1
    assert rows[0].endswith("| yes | yes | pass |")
    assert "scaled to 30 files" in result.stdout
    assert "1 of 1 cases pass." in result.stdout


def test_the_checkout_holds_the_files_asked_for(tmp_path):
    (case,) = scaledprojects.project_cases(CASE)
    corpus_dir = _corpus(tmp_path, {f"m{i}.py": "x = 1\n" for i in range(10)})
    corpus = [(p, p.name) for p in sorted(corpus_dir.iterdir())]
    root = scaledprojects.build_checkout(case, tmp_path / "out", corpus, 15)
    python = [p for p in root.rglob("*.py") if ".git" not in p.parts]
    assert len(python) == 15
    assert (root / ".git").is_dir() and (root / "pyproject.toml").is_file()
    # vLLM's files fill ``vllm/`` first, then ``vllm_more/``.
    assert len(list((root / "vllm").glob("*.py"))) == 10
    assert len(list((root / "vllm_more").glob("*.py"))) == 15 - 10 - len(case.modules())
    # Copies: a fix written in place could not reach the corpus (the installed vLLM).
    assert all(p.stat().st_nlink == 1 for p in (root / "vllm").glob("*.py"))


def test_a_finding_outside_the_case_is_reported_and_fails_strict(tmp_path):
    # A filler file with the bug: check finds more than the case marks, and fix changes
    # one of vLLM's files. Both are said, and --strict exits 1.
    corpus = _corpus(tmp_path, {"__init__.py": "", "worker/runner.py": BUGGY_RUNNER})
    result = _run("--files", "6", "--only", CASE, "--corpus", str(corpus), "--strict")
    assert result.returncode == 1, result.stdout + result.stderr
    row = next(line for line in result.stdout.splitlines() if line.startswith(f"| {CASE}"))
    assert row.endswith("| NO | NO | **FAIL** |")
    assert "0 of 1 cases pass." in result.stdout
    assert "fix changed vLLM's vllm/worker/runner.py" in result.stdout
    assert "vllm/worker/runner.py" in result.stdout.split("check found", 1)[1]


def test_no_case_matched_is_one_error_line():
    result = _run("--only", "no such case")
    assert result.returncode == 2
    assert result.stdout == ""
    assert (
        result.stderr
        == "benchmarks/scaledprojects.py: error: no project case's id holds 'no such case'\n"
    )


def test_a_corpus_that_is_no_folder_is_one_error_line(tmp_path):
    result = _run("--corpus", str(tmp_path / "missing"), "--only", CASE)
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr == (
        f"benchmarks/scaledprojects.py: error: {tmp_path / 'missing'}: no such folder (--corpus)\n"
    )


def test_cgguard_runs_with_the_default_jobs_whatever_the_shell_set(tmp_path):
    # CGGUARD_JOBS is left out of cgguard's environment: a value the shell set (here one
    # cgguard refuses) neither changes what is measured nor fails the case.
    corpus = _corpus(tmp_path, {"__init__.py": "", "m.py": BOUNDED})
    env = dict(os.environ, CGGUARD_JOBS="not a number")
    result = _run("--files", "6", "--only", CASE, "--corpus", str(corpus), "--strict", env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 of 1 cases pass." in result.stdout
