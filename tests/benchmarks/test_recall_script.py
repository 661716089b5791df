"""benchmarks/recall.py runs on the rules' cases and prints its recall tables.

Only cgguard runs here (semgrep and Fixit would need their own install), on cases
whose expected findings the engine of every branch agrees on; what is asserted is the
counting and the tables, never a time.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO

SCRIPT = REPO / "benchmarks" / "recall.py"
CASES = "v025_runner,CGG001/silent/per_token_buffers,imports_project_helpers"


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=600)


def test_counts_cases_caught_and_false_positives_for_cgguard(tmp_path: Path) -> None:
    proc = _run("--tools", "cgguard", "--cases", CASES, "--work", str(tmp_path / "work"))
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert out.startswith("## Recall on the rules' example cases\n")
    assert "cgguard at commit `" in out
    assert "`rules/<CODE>/cases/`: 1 flagged cases, 2 silent cases (of all 3, 1 are projects of several modules)." in out
    assert "| tool | flagged cases caught (recall) | silent cases with a report (false positives) |" in out
    assert "| cgguard | 1/1 (100%) | 0/2 |" in out
    assert "cgguard's findings are exactly the lines the case marks `# expect:` in 3/3 cases" in out
    assert "| names through imports (aliases, other modules) | 0 | 1 | 0/0 caught, 0/1 noisy |" in out
    assert "| other cases (no family prefix) | 1 | 1 | 1/1 caught, 0/1 noisy |" in out
    assert "| case | kind | expected | cgguard |" in out
    assert "| CGG001/flagged/v025_runner | flagged | 1 | 1 |" in out
    assert "| CGG001/silent/per_token_buffers | silent | 0 | 0 |" in out
    assert "| CGG001/silent/imports_project_helpers/ (project) | silent | 0 | 0 |" in out
    # Tools not asked for do not appear, and nothing was installed for them.
    assert "semgrep" not in out.split("Per case:")[0].replace("semgrep and Fixit report", "")
    assert not (tmp_path / "work" / "venv-tools").exists()
    # The cases were written as the tools see them: a single file, a project with its root marker.
    recall = tmp_path / "work" / "recall"
    assert (recall / "files" / "CGG001_flagged_v025_runner.py").is_file()
    assert (recall / "projects" / "CGG001_silent" / "imports_project_helpers" / "pyproject.toml").is_file()


def _recall_module():
    spec = importlib.util.spec_from_file_location("cgguard_benchmarks_recall", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_a_missed_case_and_a_false_positive_are_counted_and_marked() -> None:
    """The tables from reports that miss a flagged case and flag a silent one."""
    recall = _recall_module()
    at = lambda name, *lines: frozenset((f"files/{name}.py", n) for n in lines)  # noqa: E731
    units = [
        recall.Unit("CGG001_flagged_a", "CGG001", "flagged", "precision_a", 1, at("CGG001_flagged_a", 3),
                    reports={"cgguard": 1, "semgrep": 0}, cgguard_at={("files/CGG001_flagged_a.py", 3)}),
        recall.Unit("CGG001_flagged_b", "CGG001", "flagged", "members_b", 1, at("CGG001_flagged_b", 5, 9),
                    reports={"cgguard": 1, "semgrep": 2}, cgguard_at={("files/CGG001_flagged_b.py", 7)}),
        recall.Unit("CGG001_silent_c", "CGG001", "silent", "precision_c", 1, frozenset(),
                    reports={"semgrep": 2}),
    ]
    out = recall.report(units, ["cgguard", "semgrep"], ["semgrep 1.0"])
    assert "| cgguard | 2/2 (100%) | 0/1 |" in out
    assert "| semgrep (taint rule) | 1/2 (50%) | 1/1 |" in out
    assert "exactly the lines the case marks `# expect:` in 2/3 cases" in out
    assert "| precision (bounded on every path?) | 1 | 1 | 1/1 caught, 0/1 noisy | 0/1 caught, 1/1 noisy |" in out
    assert "| CGG001/flagged/precision_a | flagged | 1 | 1 | **0** |" in out
    assert "| CGG001/flagged/members_b | flagged | 2 | 1 (not exactly the expected lines) | 2 |" in out
    assert "| CGG001/silent/precision_c | silent | 0 | 0 | **2** |" in out


def test_no_matching_case_is_one_clear_error(tmp_path: Path) -> None:
    proc = _run("--tools", "cgguard", "--cases", "no_such_case", "--work", str(tmp_path / "work"))
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert proc.stderr.strip().splitlines() == [
        "benchmarks/recall.py: error: no rule case matches --cases no_such_case"
    ]


def test_unknown_tool_is_refused(tmp_path: Path) -> None:
    proc = _run("--tools", "cgguard,ruff", "--work", str(tmp_path / "work"))
    assert proc.returncode == 2
    assert "unknown tool(s): ruff" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "work").exists()
