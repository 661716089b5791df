"""The command line: output format, summary, exit codes, rule pages, installed wheel."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO, run_cgguard

BUGGY = (
    "class ForkModelRunner:\n"
    "    def _init_minimal_kv_cache_for_profiling(self):\n"
    "        min_blocks = self.compilation_config.max_cudagraph_capture_size or 1\n"
    "        self.cache_config.num_gpu_blocks_override = min_blocks\n"
)
CLEAN = "def f(x):\n    return x + 1\n"
LINE = re.compile(r"^(?P<path>[^:]+):(?P<line>\d+):(?P<col>\d+): (?P<code>CGG\d{3}) (?P<msg>.+)$")


def _tree(tmp_path: Path) -> Path:
    (tmp_path / "pkg" / "sub").mkdir(parents=True)
    (tmp_path / "pkg" / "runner.py").write_text(BUGGY)
    (tmp_path / "pkg" / "sub" / "clean.py").write_text(CLEAN)
    return tmp_path


def test_check_prints_one_line_per_finding_then_a_summary(tmp_path):
    _tree(tmp_path)
    result = run_cgguard("check", "pkg", cwd=tmp_path)
    assert result.returncode == 1
    first, summary = result.stdout.splitlines()
    m = LINE.match(first)
    assert m, first
    assert (m["path"], m["line"], m["col"], m["code"]) == ("pkg/runner.py", "3", "22", "CGG001")
    assert summary == (
        "Found 1 finding (1 fixable with `cgguard fix`) in 2 files checked. "
        "Run `cgguard rule CGG001` for why and how to fix."
    )
    assert result.stderr == ""


def test_default_path_is_the_current_directory(tmp_path):
    _tree(tmp_path)
    result = run_cgguard("check", cwd=tmp_path / "pkg")
    assert result.returncode == 1
    assert result.stdout.startswith("runner.py:3:22: CGG001 ")


def test_exit_0_when_clean(tmp_path):
    _tree(tmp_path)
    result = run_cgguard("check", "pkg/sub", cwd=tmp_path)
    assert result.returncode == 0
    assert result.stdout == "No findings in 1 file checked.\n"


def test_errors_win_over_findings_and_the_run_goes_on(tmp_path):
    _tree(tmp_path)
    (tmp_path / "pkg" / "broken.py").write_text("cfg.num_gpu_blocks_override = self.max_cudagraph_capture_size or (\n")
    result = run_cgguard("check", "pkg", "missing.py", cwd=tmp_path)
    assert result.returncode == 2
    assert "pkg/runner.py:3:22: CGG001" in result.stdout
    errors = result.stderr.strip().splitlines()
    assert len(errors) == 2
    assert errors[0].startswith("pkg/broken.py: error: syntax error at line")
    assert errors[1] == "missing.py: error: no such file or directory"
    assert "Traceback" not in result.stderr


def test_bad_usage_exits_2(tmp_path):
    result = run_cgguard("check", "--no-such-option", cwd=tmp_path)
    assert result.returncode == 2


def test_fix_diff_writes_nothing_and_fix_writes(tmp_path):
    _tree(tmp_path)
    target = tmp_path / "pkg" / "runner.py"
    diff = run_cgguard("fix", "--diff", "pkg", cwd=tmp_path)
    assert diff.returncode == 1  # it would change something
    assert "-        min_blocks = self.compilation_config.max_cudagraph_capture_size or 1" in diff.stdout
    assert "+            min(self.max_num_reqs, self.compilation_config.max_cudagraph_capture_size)" in diff.stdout
    assert target.read_text() == BUGGY
    fixed = run_cgguard("fix", "pkg", cwd=tmp_path)
    assert fixed.returncode == 0
    assert "min(self.max_num_reqs," in target.read_text()
    assert run_cgguard("check", "pkg", cwd=tmp_path).returncode == 0


def test_rule_prints_a_page_on_one_screen_as_ruff_does():
    """What it does / Why is this bad? / Example / Fix safety, in that order, within about 60
    lines; the reference (every shape followed, the model table) only with --all."""
    for code in ("CGG001", "CGG002", "CGG100"):
        result = run_cgguard("rule", code)
        assert result.returncode == 0, result.stderr
        lines = result.stdout.splitlines()
        assert len(lines) <= 62, (code, len(lines))
        headings = [line for line in lines if line.startswith("## ")]
        assert headings == ["## What it does", "## Why is this bad?", "## Example", "## Fix safety"], code
        assert "model table" not in result.stdout and "## The model" not in result.stdout
    short = run_cgguard("rule", "CGG001").stdout
    assert short.splitlines()[-1].startswith("`cgguard rule CGG001 --all` adds every shape it follows, ")
    full = run_cgguard("rule", "CGG001", "--all").stdout
    assert full.startswith(short.rsplit("\n\n", 1)[0])  # the page, then the reference
    for heading in ("## What it follows", "## What is silent, and why", "## The model", "## Cases ("):
        assert heading in full, heading


def test_rule_prints_the_documentation_from_rules():
    result = run_cgguard("rule", "CGG001", "--all")
    assert result.returncode == 0
    page = (REPO / "rules" / "CGG001" / "rule.md").read_text().split("\n---\n", 1)[1].strip()
    marker = next(line for line in page.splitlines() if line.startswith("<!-- reference: "))
    for part in page.split(marker):
        assert part.strip() in result.stdout
    assert run_cgguard("rule", "CGG999").returncode == 2
    # Every example case is listed, with its expected fix.
    assert "- flagged/v025_runner.pycase -> v025_runner.fixed.pycase" in result.stdout
    assert "- silent/per_token_buffers.pycase" in result.stdout
    # Project cases (a folder of modules) are listed too, one line each.
    assert "- flagged/imports_project_helper/ (a project of 4 modules, 1 with an expected fix)" in result.stdout
    assert "- silent/imports_project_helpers/ (a project of 4 modules)" in result.stdout
    cases = re.search(r"## Cases \((\d+), in ", result.stdout)
    listed = [line for line in result.stdout.splitlines() if line.startswith(("- flagged/", "- silent/"))]
    assert cases and int(cases.group(1)) == len(listed)


def test_rule_documentation_works_from_a_non_editable_install(tmp_path):
    target = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(target), str(REPO)],
        check=True, capture_output=True, text=True, timeout=600,
    )
    assert (target / "cgguard" / "_rules" / "CGG001" / "rule.md").is_file()
    result = subprocess.run(
        [sys.executable, "-c", "import sys; sys.path.insert(0, sys.argv[1]); "
         "import cgguard.cli; print(cgguard.cli.__file__); cgguard.cli.main(args=sys.argv[2:])", str(target), "rule", "CGG002", "--all"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[0].startswith(str(target))
    assert "## Fix safety" in result.stdout
    assert "- flagged/max_with_request_count.pycase" in result.stdout
    # The workflow's own code (CGG100) has its page in the package too.
    unused = subprocess.run(
        [sys.executable, "-c", "import sys; sys.path.insert(0, sys.argv[1]); "
         "import cgguard.cli; cgguard.cli.main(args=sys.argv[2:])", str(target), "rule", "CGG100"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )
    assert unused.returncode == 0 and "## Why is this bad?" in unused.stdout, unused.stderr
    # The deliberately buggy cases travel as data, never as Python files: checking the
    # installed package (as a venv-wide check would) finds nothing in cgguard itself.
    assert (target / "cgguard" / "_rules" / "CGG001" / "cases" / "flagged" / "v025_runner.pycase").is_file()
    assert not list((target / "cgguard" / "_rules").rglob("*.py"))
    own = run_cgguard("check", "--isolated", str(target / "cgguard"), cwd=tmp_path)
    assert own.returncode == 0, own.stdout + own.stderr
