"""The same rules through Fixit and libcst's codemod CLI.

The real ``fixit`` and ``python -m libcst.tool codemod`` run the adapters in
:mod:`cgguard.ecosystem` on every rule case and on the buggy vLLM runner the tests
make: they must report what ``cgguard check`` reports (line, column, code and
message) and fix files into exactly the bytes ``cgguard fix`` writes.

Each tool runs once over a folder of every case (the project cases: one root of every
project, ``root/<code>/<kind>/<name>/``) and each test reads its case's part: Fixit and the
codemod through their own command-line code in this interpreter
(:func:`tests.ecosystem.tools.fixit_in_process`), cgguard as its CLI; the docs' commands,
``fixit test`` and ``[tool.fixit]`` run as users type them.
"""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from cgguard.static.workflow.ruledocs import all_rules
from tests.conftest import PRE_FIX_RUNNER_EXPR, UPSTREAM_FIXED_RUNNER_EXPR, run_cgguard
from tests.ecosystem.tools import (
    FIXIT_RULES,
    Finding,
    FixitRun,
    case_file_name,
    cases_of_every_kind,
    cgguard_findings,
    codemod_in_process,
    files,
    files_part,
    fixit_in_process,
    parse_fixit_output,
    part,
    run_python,
)
from tests.workflow.conftest import readme_snippet

RUNNER_REL = Path("v1") / "worker" / "gpu_model_runner.py"


def _cgguard_findings(folder: Path) -> set[Finding]:
    return cgguard_findings(folder, "--isolated")


def _files(folder: Path) -> dict[str, bytes]:
    return files(folder)


@pytest.fixture(scope="module")
def cases(tmp_path_factory) -> Path:
    """Every rule case as a .py file of one folder."""
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


@pytest.fixture(scope="module")
def checked_by_cgguard(cases: Path) -> set[Finding]:
    return _cgguard_findings(cases)


@dataclass(frozen=True)
class Fixed:
    """A tool's run on a copy of a folder: what it said, and the folder's files after it."""

    said: FixitRun | str  # Fixit's findings, or the codemod command's output
    files: dict[str, bytes]


def _fixit(folder: Path, work: Path) -> Fixed:
    shutil.copytree(folder, work)
    return Fixed(fixit_in_process(work), _files(work))


def _codemod(folder: Path, work: Path) -> Fixed:
    shutil.copytree(folder, work)
    return Fixed(codemod_in_process(work), _files(work))


@pytest.fixture(scope="module")
def by_fixit(cases: Path, tmp_path_factory) -> Fixed:
    return _fixit(cases, tmp_path_factory.mktemp("fixit") / "cases")


@pytest.fixture(scope="module")
def by_codemod(cases: Path, tmp_path_factory) -> Fixed:
    return _codemod(cases, tmp_path_factory.mktemp("codemod") / "cases")


def test_fixit_lint_reports_what_cgguard_check_reports(checked_by_cgguard: set[Finding], by_fixit: Fixed) -> None:
    assert len(checked_by_cgguard) >= 25
    assert isinstance(by_fixit.said, FixitRun)
    assert by_fixit.said.findings == checked_by_cgguard


def test_fixit_fix_writes_what_cgguard_fix_writes(fixed_by_cgguard, by_fixit: Fixed) -> None:
    assert by_fixit.files == fixed_by_cgguard


def test_codemod_writes_what_cgguard_fix_writes(checked_by_cgguard: set[Finding], fixed_by_cgguard, by_codemod: Fixed) -> None:
    assert by_codemod.files == fixed_by_cgguard
    # Every finding is named as a warning (the fix is not the whole story: CGG002, no request count).
    assert isinstance(by_codemod.said, str)
    assert by_codemod.said.count("WARNING: ") == len(checked_by_cgguard)


def test_a_second_run_changes_nothing(fixed_by_cgguard, tmp_path: Path) -> None:
    for name, data in fixed_by_cgguard.items():
        (tmp_path / name).write_bytes(data)
    fixit_in_process(tmp_path)
    codemod_in_process(tmp_path)
    assert _files(tmp_path) == fixed_by_cgguard


# ---- the buggy vLLM runner the tests make ------------------------------------------


@pytest.fixture(scope="module")
def buggy_runner(vllm_dir: Path, tmp_path_factory) -> Path:
    text = (vllm_dir / RUNNER_REL).read_text(encoding="utf-8")
    assert text.count(UPSTREAM_FIXED_RUNNER_EXPR) == 1
    folder = tmp_path_factory.mktemp("runner") / "buggy"
    folder.mkdir()
    (folder / "gpu_model_runner.py").write_text(text.replace(UPSTREAM_FIXED_RUNNER_EXPR, PRE_FIX_RUNNER_EXPR), encoding="utf-8")
    return folder


def test_buggy_vllm_runner_same_finding_and_fix(vllm_dir: Path, buggy_runner: Path, tmp_path: Path) -> None:
    expected = _cgguard_findings(buggy_runner)
    assert [(name, code) for name, _, _, code, _ in expected] == [("gpu_model_runner.py", "CGG001")]
    fixit = _fixit(buggy_runner, tmp_path / "fixit")
    assert isinstance(fixit.said, FixitRun)
    assert fixit.said.findings == expected

    installed = (vllm_dir / RUNNER_REL).read_bytes()
    for tool, fixed in (("fixit", fixit), ("codemod", _codemod(buggy_runner, tmp_path / "codemod"))):
        # The planted line comes back as upstream wrote it: the installed file, byte for byte.
        assert fixed.files == {"gpu_model_runner.py": installed}, tool


@pytest.mark.parametrize("snippet", ["fixit", "codemod"])
def test_readme_commands_as_users_type_them(snippet: str, cases: Path, checked_by_cgguard, fixed_by_cgguard, tmp_path: Path) -> None:
    """docs/integrations.md's commands, run as written (``src/`` is the folder they name) on
    a case of every kind of finding: `fixit lint` prints what `cgguard check` reports, and
    the fixes are `cgguard fix`'s (on every case: the shared runs above)."""
    names = {case_file_name(code, case) for picked in cases_of_every_kind(1).values() for code, case in picked}
    (tmp_path / "src").mkdir()
    for name in names:
        shutil.copy(cases / name, tmp_path / "src" / name)
    for line in readme_snippet(snippet, "docs/integrations.md").splitlines():
        argv = shlex.split(line)
        program = {"fixit": [sys.executable, "-m", "fixit"], "python": [sys.executable]}[argv[0]]
        result = subprocess.run([*program, *argv[1:]], cwd=tmp_path, capture_output=True, text=True, timeout=600)
        assert result.returncode in (0, 1), line + "\n" + result.stdout + result.stderr
        if "lint" in argv:
            said = {f for f, _ in parse_fixit_output(result.stdout, result.stderr)}
            assert part(said, "src") == {f for f in checked_by_cgguard if f[0] in names}, line
            assert said, line
    assert _files(tmp_path / "src") == {name: data for name, data in fixed_by_cgguard.items() if name in names}


def test_fixit_config_enables_the_rules(tmp_path: Path) -> None:
    """`[tool.fixit] enable = [...]` in a project's pyproject.toml, as docs/integrations.md shows."""
    (tmp_path / "pyproject.toml").write_text(readme_snippet("fixit-config", "docs/integrations.md").replace("[tool.fixit]\n", "[tool.fixit]\nroot = true\n"))
    case = next(c for r in all_rules() for c in r.cases("flagged") if r.code == "CGG001" and c.fixed_path)
    (tmp_path / "runner.py").write_text(case.source(), encoding="utf-8")
    result = run_python("-m", "fixit", "lint", "runner.py", cwd=tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "CGG001: " in result.stdout


def test_fixit_test_runs_the_rules_own_cases(tmp_path: Path) -> None:
    """`fixit test` on the module: VALID/INVALID come from rules/ (silent and flagged cases),
    and only the two rules are collected (their shared code is no rule of its own)."""
    result = run_python("-m", "fixit", "test", FIXIT_RULES, cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    ran = re.search(r"Ran (\d+) tests", result.stderr)
    cases = sum(len(rule.cases()) for rule in all_rules())
    assert ran and int(ran.group(1)) == cases, result.stderr[-2000:]
    assert {m for m in re.findall(r"fixit\.testing\.(\w+)\.test_", result.stderr)} == {"CGG001", "CGG002", "CGG003"}


# ---- project cases: flows across modules, through every front end --------------------

_PROJECT_CASES = [case for rule in all_rules() for case in rule.project_cases()]


@dataclass(frozen=True)
class Projects:
    """Each tool's run over one root of every project case, ``root/<code>/<kind>/<name>/``."""

    checked: set[Finding]  # `cgguard check --isolated .` from the root
    by_cgguard: dict[str, bytes]  # the root's files after `cgguard fix --isolated .` there
    by_fixit: Fixed
    by_codemod: Fixed


@pytest.fixture(scope="module")
def projects(tmp_path_factory) -> Projects:
    root = tmp_path_factory.mktemp("projects") / "original"
    for case in _PROJECT_CASES:
        case.write(root / case.code / case.kind)
    fixed = root.parent / "cgguard"
    shutil.copytree(root, fixed)
    result = run_cgguard("fix", "--isolated", ".", cwd=fixed)
    assert result.returncode in (0, 1), result.stderr
    return Projects(
        _cgguard_findings(root),
        _files(fixed),
        _fixit(root, root.parent / "fixit"),
        _codemod(root, root.parent / "codemod"),
    )


@pytest.mark.parametrize("case", _PROJECT_CASES, ids=lambda c: f"{c.kind}/{c.name}")
def test_project_cases_agree_across_front_ends(case, projects: Projects) -> None:
    """A helper in another module of the project (its return, or a parameter it hands to
    its return): Fixit reports what `cgguard check` reports, at the same places with the
    same messages, and Fixit's fix and the codemod write what `cgguard fix` writes."""
    where = f"{case.code}/{case.kind}/{case.name}"
    expected = part(projects.checked, where)
    assert bool(expected) == (case.kind == "flagged"), expected
    # Each project found its own root under the shared one: its findings are the lines it marks.
    marked = set(case.expected_findings())
    assert {(f[0], f[1], f[3]) for f in expected} == marked
    assert isinstance(projects.by_fixit.said, FixitRun)
    assert part(projects.by_fixit.said.findings, where) == expected

    after_cgguard = files_part(projects.by_cgguard, where)
    assert after_cgguard == {m.rel: m.expected_fix().encode("utf-8") for m in case.modules()}
    for tool, fixed in (("fixit", projects.by_fixit), ("codemod", projects.by_codemod)):
        assert files_part(fixed.files, where) == after_cgguard, tool
