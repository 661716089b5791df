"""cgguard's own repository holds the old line only in strings, comments and rule cases:
`cgguard check .` there finds nothing (CI runs it through this test)."""

from __future__ import annotations

from tests.conftest import REPO, run_cgguard


def test_cgguard_check_finds_nothing_in_its_own_repository():
    result = run_cgguard("check", ".", cwd=REPO)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "No findings in" in result.stdout, result.stdout
