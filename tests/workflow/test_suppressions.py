"""Inline suppressions: `# noqa`, `# noqa: CODE`, `# cgguard: ignore[CODE]`, per statement."""

from __future__ import annotations

import re

import pytest

from tests.conftest import run_cgguard
from tests.workflow.conftest import readme_snippet, write

LINE = "        min_blocks = self.compilation_config.max_cudagraph_capture_size or 1"
HEAD = "class ForkModelRunner:\n    def _init_minimal_kv_cache_for_profiling(self):\n"
# The counts become the override (a block-count local that goes nowhere is no finding).
TAIL = (
    "        self.cache_config.num_gpu_blocks_override = min_blocks\n"
    "        self.drafter.cache_config.num_gpu_blocks_override = num_blocks\n"
)
MULTI = (
    HEAD
    + "        self.cache_config.num_gpu_blocks_override = (\n"
    + "            self.compilation_config.max_cudagraph_capture_size{first}\n"
    + "        ){last}\n"
    + "        x = 1{after}\n"
)


def _check(tmp_path, source: str, *args: str):
    write(tmp_path, {"m.py": source})
    return run_cgguard("check", *args, "m.py", cwd=tmp_path)


@pytest.mark.parametrize(
    "comment",
    ["  # noqa", "  # noqa: CGG001", "  #noqa:CGG001", "  # NOQA: CGG002, CGG001", "  # noqa: CGG",
     "  # noqa: E501, CGG", "  # noqa: CGG, E501", "  # noqa: E501 CGG001",
     "  # cgguard: ignore[CGG001]", "  # cgguard: ignore", "  # cgguard:ignore[CGG002,CGG001]",
     "  # type: ignore  # noqa: CGG001  (per-token on purpose)"],
)
def test_directive_on_the_flagged_line_suppresses(tmp_path, comment):
    assert _check(tmp_path, HEAD + LINE + "\n" + TAIL).returncode == 1
    result = _check(tmp_path, HEAD + LINE + comment + "\n" + TAIL)
    assert result.returncode == 0, result.stdout
    assert result.stdout == "No findings in 1 file checked.\n"


@pytest.mark.parametrize(
    "comment",
    ["  # noqa: CGG002", "  # noqa: E501", "  # cgguard: ignore[CGG002]", "  # noqa:", "  # noqa-like",
     # A code list that does not read as codes suppresses nothing (never everything).
     "  # noqa: ???", "  # noqa: see #12", "  # noqa: CGG002 (CGG001 is fine)"],
)
def test_directive_for_other_codes_does_not_suppress(tmp_path, comment):
    result = _check(tmp_path, HEAD + LINE + comment + "\n" + TAIL)
    if comment == "  # noqa:":  # a colon and no codes: flake8 reads it as a bare noqa
        assert result.returncode == 0
    else:
        assert result.returncode == 1, comment


def test_directive_on_any_line_of_the_statement(tmp_path):
    plain = MULTI.format(first="", last="", after="")
    assert _check(tmp_path, plain).returncode == 1
    assert _check(tmp_path, MULTI.format(first="  # noqa: CGG001", last="", after="")).returncode == 0
    assert _check(tmp_path, MULTI.format(first="", last="  # cgguard: ignore[CGG001]", after="")).returncode == 0
    opener = plain.replace("override = (\n", "override = (  # noqa\n")
    assert _check(tmp_path, opener).returncode == 0
    # The next statement's comment, and a comment line above, are not this statement's.
    assert _check(tmp_path, MULTI.format(first="", last="", after="  # noqa")).returncode == 1
    above = plain.replace("        self.cache_config", "        # noqa: CGG001\n        self.cache_config")
    assert _check(tmp_path, above).returncode == 1


def test_noqa_inside_a_string_is_not_a_comment(tmp_path):
    source = HEAD + LINE + '; note = "# noqa"\n' + TAIL
    assert _check(tmp_path, source).returncode == 1


def test_suppressed_findings_are_not_fixed(tmp_path):
    source = HEAD + LINE + "  # noqa: CGG001\n" + LINE.replace("min_blocks", "num_blocks") + "\n" + TAIL
    write(tmp_path, {"m.py": source})
    result = run_cgguard("fix", "m.py", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    fixed = (tmp_path / "m.py").read_text()
    assert LINE + "  # noqa: CGG001\n" in fixed  # untouched
    assert "num_blocks = (\n" in fixed and "min(self.max_num_reqs" in fixed  # the other one fixed
    assert "Fixed 1 finding." in result.stdout
    # --diff and stdin agree.
    write(tmp_path, {"m.py": source})
    assert run_cgguard("fix", "-", input=source, cwd=tmp_path).stdout == fixed


def test_readme_suppression_snippet(tmp_path):
    snippet = readme_snippet("suppressions", "docs/linter.md")
    bare = re.sub(r"  # (noqa|cgguard).*", "", snippet)
    assert _check(tmp_path, bare).returncode == 1
    assert len([l for l in _check(tmp_path, bare).stdout.splitlines() if ": CGG001 " in l]) == 2
    result = _check(tmp_path, snippet)
    assert result.returncode == 0, result.stdout
