"""Every example case in rules/ is a test: flagged lines, expected fixes, silent files."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest

from cgguard.static.driver.check import check_source
from cgguard.static.driver.run import fix_source_text
from cgguard.static.source.findings import SAFE
from cgguard.static.workflow.ruledocs import ProjectCase, RuleCase, all_rules, expected_findings
from tests.conftest import run_cgguard


def _cases(kind: str):
    for rule in all_rules():
        for case in rule.cases(kind):
            yield pytest.param(case, id=case.id)


def _project_cases(kind: str):
    for rule in all_rules():
        for case in rule.project_cases(kind):
            yield pytest.param(case, id=case.id)


def test_every_rule_has_cases_and_docs():
    rules = all_rules()
    assert [r.code for r in rules] == ["CGG001", "CGG002", "CGG003"]
    for rule in rules:
        for heading in ("## What it does", "## Why is this bad?", "## Example", "## Fix safety"):
            assert heading in rule.body, (rule.code, heading)
        assert rule.cases("flagged"), rule.code
        assert rule.cases("silent"), rule.code


@pytest.mark.parametrize("case", list(_cases("flagged")))
def test_flagged_case(case: RuleCase):
    code, path, text = case.code, case.path, case.source()
    expected = expected_findings(text)
    assert expected, f"{path} marks no line with '# expect: {code}'"
    found = check_source(text, str(path))
    assert [(f.line, f.code) for f in found] == expected
    # The optimised path and the full parse agree.
    assert check_source(text, str(path), fast=False) == found

    result = fix_source_text(text, str(path))
    assert result.error is None
    if case.fixed_path is not None:
        assert result.new_text == case.expected_fix()
        ast.parse(result.new_text)
        # What was fixed is gone; a second run changes nothing.
        remaining = check_source(result.new_text, str(path))
        assert not [f for f in remaining if f.fix and f.fix.applicability == SAFE]
        assert fix_source_text(result.new_text, str(path)).new_text == result.new_text
    else:
        # No safe fix for this case: the file stays byte-for-byte as it was.
        assert result.new_text == text
        assert all(f.fix is None or f.fix.applicability != SAFE for f in found)


@pytest.mark.parametrize("case", list(_cases("silent")))
def test_silent_case(case: RuleCase):
    path, text = case.path, case.source()
    assert check_source(text, str(path)) == []
    assert check_source(text, str(path), fast=False) == []
    assert fix_source_text(text, str(path)).new_text == text


# ---- project cases: several modules, checked and fixed with the real CLI ----------


def _cli_findings(root: Path, *paths: str) -> list[tuple[str, int, str]]:
    result = run_cgguard("check", "--isolated", "--format", "json", *paths, cwd=root)
    assert result.returncode in (0, 1), result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    found = [(Path(f["path"]).as_posix(), f["line"], f["code"]) for f in json.loads(result.stdout)]
    return sorted((p[2:] if p.startswith("./") else p, line, code) for p, line, code in found)


@pytest.mark.parametrize("case", list(_project_cases("flagged")))
def test_flagged_project_case(case: ProjectCase, tmp_path: Path):
    expected = case.expected_findings()
    assert expected, f"{case.folder} marks no line with '# expect: CODE'"
    root = case.write(tmp_path)
    assert _cli_findings(root, ".") == expected
    # One file named on the command line (as pre-commit passes them) still sees the
    # helpers and classes of the project's other files.
    for module in case.modules():
        assert _cli_findings(root, module.rel) == [e for e in expected if e[0] == module.rel], module.rel

    result = run_cgguard("fix", "--isolated", ".", cwd=root)
    assert result.returncode in (0, 1), result.stdout + result.stderr
    for module in case.modules():
        text = (root / module.rel).read_text(encoding="utf-8")
        assert text == module.expected_fix(), module.rel
        ast.parse(text)
    # A second run changes nothing.
    again = run_cgguard("fix", "--isolated", ".", cwd=root)
    assert "Fixed 0 findings." in again.stdout, again.stdout + again.stderr
    for module in case.modules():
        assert (root / module.rel).read_text(encoding="utf-8") == module.expected_fix(), module.rel


@pytest.mark.parametrize("case", list(_project_cases("silent")))
def test_silent_project_case(case: ProjectCase, tmp_path: Path):
    root = case.write(tmp_path)
    assert not case.expected_findings(), f"{case.folder}: a silent case marks an expected finding"
    assert _cli_findings(root, ".") == []
    for module in case.modules():
        assert _cli_findings(root, module.rel) == [], module.rel
    result = run_cgguard("fix", "--isolated", ".", cwd=root)
    assert result.returncode == 0, result.stdout + result.stderr
    for module in case.modules():
        assert (root / module.rel).read_text(encoding="utf-8") == module.source(), module.rel


def test_project_cases_are_written_as_a_project(tmp_path: Path):
    """The format itself: modules keep their package paths, fixes stay out, a root marker."""
    (case,) = [c for r in all_rules() for c in r.project_cases("flagged") if c.name == "imports_project_helper"]
    root = case.write(tmp_path)
    written = sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())
    assert written == [
        "npu_plugin/__init__.py",
        "npu_plugin/limits.py",
        "npu_plugin/worker/__init__.py",
        "npu_plugin/worker/model_runner.py",
        "pyproject.toml",
    ]
    limits = next(m for m in case.modules() if m.rel == "npu_plugin/limits.py")
    assert limits.fixed_path is not None and limits.fixed_path.name == "limits.fixed.pycase"
    assert all(m.fixed_path is None for m in case.modules() if m.rel != "npu_plugin/limits.py")
    # Single-file consumers (the Fixit rule's VALID/INVALID, the benchmarks) never see them.
    assert not [c for r in all_rules() for c in r.cases() if c.path.is_dir() or "/" in c.name]


def test_model_table_names_cases_that_exist():
    """Each row of a rule page's model table names the cases that test it: they exist."""
    import fnmatch

    for rule in all_rules():
        section = rule.body.split("## The model", 1)[1].split("\n## ", 1)[0]
        rows = [line for line in section.splitlines() if line.startswith("| ") and not line.startswith("| part")]
        rows = [r for r in rows if not r.startswith(("| what", "|---"))]
        assert len(rows) >= 3, rule.code
        names = {c.name for c in rule.cases()} | {c.name for c in rule.project_cases()}
        for row in rows:
            cited = re.findall(r"`([a-z0-9_*]+)`", row.rstrip(" |").rsplit("|", 1)[1])
            assert cited, (rule.code, row)
            for name in cited:
                assert fnmatch.filter(names, name), (rule.code, name)
