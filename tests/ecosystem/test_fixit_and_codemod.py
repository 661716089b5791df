"""The same rules through Fixit and libcst's codemod CLI.

The real ``fixit`` and ``python -m libcst.tool codemod`` run the adapters in
:mod:`cgguard.ecosystem` on every rule case and on the buggy vLLM runner the tests
make: they must report what ``cgguard check`` reports (line, column, code and
message) and fix files into exactly the bytes ``cgguard fix`` writes.
"""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from cgguard.static.workflow.ruledocs import all_rules
from tests.conftest import PRE_FIX_RUNNER_EXPR, UPSTREAM_FIXED_RUNNER_EXPR, run_cgguard
from tests.ecosystem.tools import CODEMOD, FIXIT_RULES, Finding, cgguard_findings, files, fixit_findings, run_python
from tests.workflow.conftest import readme_snippet

RUNNER_REL = Path("v1") / "worker" / "gpu_model_runner.py"


def _run(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return run_python(*args, cwd=cwd)


def _cgguard_findings(folder: Path) -> set[Finding]:
    return cgguard_findings(folder, "--isolated")


def _fixit_findings(folder: Path) -> set[Finding]:
    return fixit_findings(folder)


def _files(folder: Path) -> dict[str, bytes]:
    return files(folder)


@pytest.fixture(scope="module")
def cases(tmp_path_factory) -> Path:
    """Every rule case as a .py file of one folder, plus a README of what each must become."""
    folder = tmp_path_factory.mktemp("cases")
    for rule in all_rules():
        for case in rule.cases():
            (folder / f"{rule.code}_{case.kind}_{case.name}.py").write_text(case.source(), encoding="utf-8")
    return folder


@pytest.fixture(scope="module")
def fixed_by_cgguard(cases: Path, tmp_path_factory) -> dict[str, bytes]:
    folder = tmp_path_factory.mktemp("cgguard-fix")
    shutil.copytree(cases, folder, dirs_exist_ok=True)
    result = run_cgguard("fix", "--isolated", ".", cwd=folder)
    assert result.returncode in (0, 1), result.stderr
    return _files(folder)


def test_cases_cover_both_rules_and_some_fixes(cases: Path, fixed_by_cgguard: dict[str, bytes]) -> None:
    names = {p.name for p in cases.glob("*.py")}
    assert any(n.startswith("CGG001_flagged") for n in names) and any(n.startswith("CGG002_flagged") for n in names)
    changed = [n for n, data in fixed_by_cgguard.items() if data != (cases / n).read_bytes()]
    assert len(changed) >= 10, changed
    # cgguard's own fixes are the documented ones (the rule-case tests say so too).
    for rule in all_rules():
        for case in rule.cases():
            name = f"{rule.code}_{case.kind}_{case.name}.py"
            assert fixed_by_cgguard[name].decode("utf-8") == case.expected_fix(), name


def test_fixit_lint_reports_what_cgguard_check_reports(cases: Path) -> None:
    expected = _cgguard_findings(cases)
    assert len(expected) >= 25
    assert _fixit_findings(cases) == expected


def test_fixit_fix_writes_what_cgguard_fix_writes(cases: Path, fixed_by_cgguard, tmp_path: Path) -> None:
    shutil.copytree(cases, tmp_path, dirs_exist_ok=True)
    result = _run("-m", "fixit", "--rules", FIXIT_RULES, "fix", "--automatic", ".", cwd=tmp_path)
    assert result.returncode in (0, 1), result.stdout + result.stderr
    assert _files(tmp_path) == fixed_by_cgguard


def test_codemod_writes_what_cgguard_fix_writes(cases: Path, fixed_by_cgguard, tmp_path: Path) -> None:
    shutil.copytree(cases, tmp_path, dirs_exist_ok=True)
    result = _run("-m", "libcst.tool", "codemod", "-x", "--no-format", CODEMOD, ".", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Failed to codemod 0 files" in result.stderr
    assert _files(tmp_path) == fixed_by_cgguard
    # Every finding is named as a warning (the fix is not the whole story: CGG002, no request count).
    assert result.stderr.count("WARNING: ") == len(_cgguard_findings(cases))


def test_a_second_run_changes_nothing(fixed_by_cgguard, tmp_path: Path) -> None:
    for name, data in fixed_by_cgguard.items():
        (tmp_path / name).write_bytes(data)
    _run("-m", "fixit", "--rules", FIXIT_RULES, "fix", "--automatic", ".", cwd=tmp_path)
    _run("-m", "libcst.tool", "codemod", "-x", "--no-format", CODEMOD, ".", cwd=tmp_path)
    assert _files(tmp_path) == fixed_by_cgguard


# ---- the buggy vLLM runner the tests make ------------------------------------------


@pytest.fixture(scope="module")
def buggy_runner(vllm_dir: Path, tmp_path_factory) -> Path:
    text = (vllm_dir / RUNNER_REL).read_text(encoding="utf-8")
    assert text.count(UPSTREAM_FIXED_RUNNER_EXPR) == 1
    folder = tmp_path_factory.mktemp("runner")
    (folder / "gpu_model_runner.py").write_text(text.replace(UPSTREAM_FIXED_RUNNER_EXPR, PRE_FIX_RUNNER_EXPR), encoding="utf-8")
    (folder / "installed.txt").write_text(text, encoding="utf-8")
    return folder


def test_buggy_vllm_runner_same_finding_and_fix(buggy_runner: Path, tmp_path: Path) -> None:
    expected = _cgguard_findings(buggy_runner)
    assert [(name, code) for name, _, _, code, _ in expected] == [("gpu_model_runner.py", "CGG001")]
    assert _fixit_findings(buggy_runner) == expected

    installed = (buggy_runner / "installed.txt").read_bytes()
    for tool in ("fixit", "codemod"):
        work = tmp_path / tool
        work.mkdir()
        shutil.copy(buggy_runner / "gpu_model_runner.py", work)
        if tool == "fixit":
            result = _run("-m", "fixit", "--rules", FIXIT_RULES, "fix", "--automatic", ".", cwd=work)
        else:
            result = _run("-m", "libcst.tool", "codemod", "-x", "--no-format", CODEMOD, ".", cwd=work)
        assert result.returncode in (0, 1), result.stdout + result.stderr
        # The planted line comes back as upstream wrote it: the installed file, byte for byte.
        assert (work / "gpu_model_runner.py").read_bytes() == installed, tool


@pytest.mark.parametrize("snippet", ["fixit", "codemod"])
def test_readme_commands_as_users_type_them(snippet: str, cases: Path, fixed_by_cgguard, tmp_path: Path) -> None:
    """docs/integrations.md's commands, run as written (``src/`` is the folder they name)."""
    shutil.copytree(cases, tmp_path / "src")
    for line in readme_snippet(snippet, "docs/integrations.md").splitlines():
        argv = shlex.split(line)
        program = {"fixit": [sys.executable, "-m", "fixit"], "python": [sys.executable]}[argv[0]]
        result = subprocess.run([*program, *argv[1:]], cwd=tmp_path, capture_output=True, text=True, timeout=600)
        assert result.returncode in (0, 1), line + "\n" + result.stdout + result.stderr
    assert _files(tmp_path / "src") == fixed_by_cgguard


def test_fixit_config_enables_the_rules(tmp_path: Path) -> None:
    """`[tool.fixit] enable = [...]` in a project's pyproject.toml, as docs/integrations.md shows."""
    (tmp_path / "pyproject.toml").write_text(readme_snippet("fixit-config", "docs/integrations.md").replace("[tool.fixit]\n", "[tool.fixit]\nroot = true\n"))
    case = next(c for r in all_rules() for c in r.cases("flagged") if r.code == "CGG001" and c.fixed_path)
    (tmp_path / "runner.py").write_text(case.source(), encoding="utf-8")
    result = _run("-m", "fixit", "lint", "runner.py", cwd=tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "CGG001: " in result.stdout


def test_fixit_test_runs_the_rules_own_cases(tmp_path: Path) -> None:
    """`fixit test` on the module: VALID/INVALID come from rules/ (silent and flagged cases),
    and only the two rules are collected (their shared code is no rule of its own)."""
    result = _run("-m", "fixit", "test", FIXIT_RULES, cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    ran = re.search(r"Ran (\d+) tests", result.stderr)
    cases = sum(len(rule.cases()) for rule in all_rules())
    assert ran and int(ran.group(1)) == cases, result.stderr[-2000:]
    assert {m for m in re.findall(r"fixit\.testing\.(\w+)\.test_", result.stderr)} == {"CGG001", "CGG002"}


# ---- project cases: flows across modules, through every front end --------------------

_PROJECT_CASES = [case for rule in all_rules() for case in rule.project_cases()]


@pytest.mark.parametrize("case", _PROJECT_CASES, ids=lambda c: f"{c.kind}/{c.name}")
def test_project_cases_agree_across_front_ends(case, tmp_path: Path) -> None:
    """A helper in another module of the project (its return, or a parameter it hands to
    its return): Fixit reports what `cgguard check` reports, at the same places with the
    same messages, and Fixit's fix and the codemod write what `cgguard fix` writes."""
    from tests.ecosystem.tools import codemod, fixit_fix

    original = case.write(tmp_path / "original")
    expected = cgguard_findings(original, "--isolated")
    assert bool(expected) == (case.kind == "flagged"), expected
    assert fixit_findings(original) == expected

    fixed = tmp_path / "cgguard"
    shutil.copytree(original, fixed)
    result = run_cgguard("fix", "--isolated", ".", cwd=fixed)
    assert result.returncode in (0, 1), result.stderr
    for tool, run in (("fixit", fixit_fix), ("codemod", codemod)):
        work = tmp_path / tool
        shutil.copytree(original, work)
        run(work)
        assert files(work) == files(fixed), tool
