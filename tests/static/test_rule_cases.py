"""Every example case in rules/ is a test: flagged lines, expected fixes, silent files."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from cgguard.static.driver.findings import SAFE
from cgguard.static.driver.run import fix_source_text
from cgguard.static.workflow.ruledocs import RuleCase, all_rules
from cgguard.static.driver.scan import check_source

_EXPECT = re.compile(r"#\s*expect:\s*(CGG\d{3})")


def _cases(kind: str):
    for rule in all_rules():
        for case in rule.cases(kind):
            yield pytest.param(case, id=case.id)


def _expected(text: str) -> list[tuple[int, str]]:
    return [
        (i, m.group(1))
        for i, line in enumerate(text.splitlines(), start=1)
        for m in [_EXPECT.search(line)]
        if m
    ]


def test_every_rule_has_cases_and_docs():
    rules = all_rules()
    assert [r.code for r in rules] == ["CGG001", "CGG002"]
    for rule in rules:
        for heading in ("## What it does", "## Why is this bad?", "## Example", "## Fix safety"):
            assert heading in rule.body, (rule.code, heading)
        assert rule.cases("flagged"), rule.code
        assert rule.cases("silent"), rule.code


@pytest.mark.parametrize("case", list(_cases("flagged")))
def test_flagged_case(case: RuleCase):
    code, path, text = case.code, case.path, case.source()
    expected = _expected(text)
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
