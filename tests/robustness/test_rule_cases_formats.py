"""Every example case in rules/ fixed in other clothes: CRLF, tabs, a UTF-8 BOM, a
latin-1 coding cookie. The result must be the case's expected fix (`*.fixed.pycase`, or
the file itself when nothing is fixed) dressed the same way, byte for byte, and a
second run must change nothing.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from cgguard.static.workflow.ruledocs import all_rules
from tests.robustness.conftest import assert_no_traceback, cgguard

_LEADING_SPACES = re.compile(r"^((?:    )+)", re.MULTILINE)


def _tabs(text: str) -> str:
    return _LEADING_SPACES.sub(lambda m: "\t" * (len(m.group(1)) // 4), text)


TRANSFORMS = {
    "crlf": lambda t: t.replace("\n", "\r\n").encode(),
    "tabs": lambda t: _tabs(t).encode(),
    "tabs-crlf": lambda t: _tabs(t).replace("\n", "\r\n").encode(),
    "bom": lambda t: b"\xef\xbb\xbf" + t.encode(),
    "latin-1-cookie": lambda t: ("# -*- coding: latin-1 -*-\n# \u00e9t\u00e9\n" + t).encode("latin-1"),
}


def _cases() -> list[tuple[Path, Path]]:
    """(case, expected text's file) for every case file of every rule."""
    out = []
    for rule in all_rules():
        for case in rule.cases():
            out.append((case.path, case.fixed_path or case.path))
    return out


@pytest.mark.parametrize("name", sorted(TRANSFORMS))
def test_rule_cases_fix_the_same_in_every_format(tmp_path, name):
    transform = TRANSFORMS[name]
    cases = _cases()
    assert len(cases) >= 15
    expected: dict[Path, bytes] = {}
    for case, fixed in cases:
        text = case.read_text()
        if name.startswith("latin-1") and not text.isascii():
            continue  # latin-1 cannot hold it
        target = tmp_path / case.parent.name / (case.name.removesuffix(".pycase") + ".py")
        target.parent.mkdir(exist_ok=True)
        target.write_bytes(transform(text))
        expected[target] = transform(fixed.read_text())
    assert any(expected[p] != p.read_bytes() for p in expected)  # some cases are fixed

    result = cgguard("fix", "--isolated", str(tmp_path))
    assert_no_traceback(result)
    assert result.returncode in (0, 1), result.stdout + result.stderr  # CGG002 is never auto-fixed
    assert result.stderr == ""
    for path, data in expected.items():
        assert path.read_bytes() == data, path.name

    again = cgguard("fix", "--isolated", str(tmp_path))
    assert "Fixed 0 findings." in again.stdout
    for path, data in expected.items():
        assert path.read_bytes() == data, path.name
