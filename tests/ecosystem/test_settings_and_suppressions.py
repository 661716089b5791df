"""Fixit and the codemod honour cgguard's settings and suppressions.

A tree holds rule cases of every kind of finding (:func:`tests.ecosystem.tools.cases_of_every_kind`) plus a file with suppression comments,
under one settings file; Fixit's ``fix --automatic`` (which prints what ``fixit lint``
prints) and libcst's codemod command must report what ``cgguard check`` reports and
write what ``cgguard fix`` writes on an identical copy, for each setting.

One root holds a tree per setting (``root/<setting>/``): each tool runs once over the
root (Fixit and the codemod from the root, so each file's settings come from its own
tree: the tools run from elsewhere), and each test reads its setting's part of the
output; cgguard runs in each tree, as a user would there. The command lines themselves
run in the tests of a bad settings file, of ``# lint-ignore`` and of excludes.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import run_cgguard
from tests.ecosystem.tools import (
    CODEMOD,
    FIXIT_RULES,
    Finding,
    case_file_name,
    cases_of_every_kind,
    cgguard_findings,
    codemod,
    codemod_in_process,
    files,
    files_part,
    fixit_findings,
    fixit_fix,
    fixit_in_process,
    part,
    run_python,
)

# Each finding of the planted runner line is silenced a different way; only the last
# line of the method is reported and fixed.
SUPPRESSED = """\
class ForkModelRunner:
    def _init_minimal_kv_cache_for_profiling(self):
        min_blocks = self.compilation_config.max_cudagraph_capture_size or 1  # noqa: CGG001
        other = self.compilation_config.max_cudagraph_capture_size or 1  # cgguard: ignore[CGG001]
        anything = self.compilation_config.max_cudagraph_capture_size or 1  # noqa
        self.cache_config.num_gpu_blocks_override = (
            self.compilation_config.max_cudagraph_capture_size
        )  # cgguard: ignore[CGG001]
        num_blocks = self.compilation_config.max_cudagraph_capture_size or 1
        self.cache_config.num_gpu_blocks_override = min_blocks
        self.cache_config.num_gpu_blocks_override = num_blocks


def at_least_sixteen(vllm_config):
    min_blocks = max(16, vllm_config.compilation_config.max_cudagraph_capture_size)
    vllm_config.cache_config.num_gpu_blocks_override = min_blocks


def at_least_sixteen_on_purpose(vllm_config):
    min_blocks = max(16, vllm_config.compilation_config.max_cudagraph_capture_size)  # noqa: CGG002
    vllm_config.cache_config.num_gpu_blocks_override = min_blocks
"""

# (file name, its text) for each kind of settings file; None: no settings file at all.
SETTINGS = {
    "defaults": None,
    "ignore": ("pyproject.toml", '[tool.cgguard]\nignore = ["CGG002"]\n'),
    "select": ("pyproject.toml", '[tool.cgguard]\nselect = ["CGG002"]\n'),
    "select-prefix-ignore": ("pyproject.toml", '[tool.cgguard]\nselect = ["CGG"]\nignore = ["CGG001"]\n'),
    "per-file-ignores": (
        "pyproject.toml",
        '[tool.cgguard]\nper-file-ignores = { "legacy/**" = ["CGG001"], "CGG001_flagged_*" = ["CGG"] }\n',
    ),
    "unfixable": ("pyproject.toml", '[tool.cgguard]\nunfixable = ["CGG001"]\n'),
    "unsafe-fixes": ("pyproject.toml", "[tool.cgguard]\nunsafe-fixes = true\n"),
    "cgguard.toml": ("cgguard.toml", 'ignore = ["CGG002"]\nunsafe-fixes = true\n'),
}


# How many rule cases of each kind of finding a tree holds.
PER_KIND = 2


# The settings and suppressions act on a finding's path, code, fix applicability and line,
# after the core has run: cases of every such kind show each setting's effect on the
# adapters' reports and fixes. That Fixit and the codemod agree with cgguard on every rule
# case is test_fixit_and_codemod's (Fixit takes tens of milliseconds a file: every case
# under each of eight settings took minutes).
_PLANTED = cases_of_every_kind(PER_KIND)


def _tree(folder: Path, setting: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for picked in _PLANTED.values():
        for code, case in picked:
            (folder / case_file_name(code, case)).write_text(case.source(), encoding="utf-8")
    (folder / "suppressed.py").write_text(SUPPRESSED, encoding="utf-8")
    (folder / "legacy").mkdir()
    (folder / "legacy" / "old_runner.py").write_text(SUPPRESSED, encoding="utf-8")
    if SETTINGS[setting] is not None:
        name, text = SETTINGS[setting]
        (folder / name).write_text(text, encoding="utf-8")
    return folder


def test_the_trees_hold_every_kind_of_finding() -> None:
    """Every rule, flagged and silent cases, and fixes of each applicability (and none)."""
    kinds = {(code, applicability) for _, _, found in _PLANTED for code, applicability in found}
    assert {("CGG001", "safe"), ("CGG001", "unsafe"), ("CGG001", ""), ("CGG002", "display-only")} <= kinds
    assert {(rule, kind) for rule, kind, _ in _PLANTED} == {(r, k) for r in ("CGG001", "CGG002", "CGG003") for k in ("flagged", "silent")}


@dataclass(frozen=True)
class Runs:
    """Each tool's run over the root of one tree per setting."""

    original: Path  # root/<setting>/ as written
    reported: dict[str, list[dict]]  # `cgguard check --format json .` in each tree
    by_cgguard: dict[str, bytes]  # the root's files after `cgguard fix .` in each tree
    by_fixit: set[tuple[Finding, bool]]  # what `fixit fix --automatic .` printed from the root
    fixed_by_fixit: dict[str, bytes]
    fixed_by_codemod: dict[str, bytes]  # after the codemod command, run from the root


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> Runs:
    base = tmp_path_factory.mktemp("settings")
    original = base / "original"
    for setting in SETTINGS:
        _tree(original / setting, setting)
    reported = {setting: _check_json(original / setting) for setting in SETTINGS}
    fixed = base / "cgguard"
    shutil.copytree(original, fixed)
    for setting in SETTINGS:
        result = run_cgguard("fix", ".", cwd=fixed / setting)
        assert result.returncode in (0, 1), result.stderr
    by_fixit, by_codemod = base / "fixit", base / "codemod"
    shutil.copytree(original, by_fixit)
    shutil.copytree(original, by_codemod)
    found = fixit_in_process(by_fixit).found
    codemod_in_process(by_codemod)
    return Runs(original, reported, files(fixed), found, files(by_fixit), files(by_codemod))


@pytest.mark.parametrize("setting", list(SETTINGS))
def test_same_findings_and_bytes_as_cgguard(setting: str, runs: Runs) -> None:
    reported = runs.reported[setting]
    expected = {(f["path"], f["line"], f["column"], f["code"], f["message"]) for f in reported}
    assert expected, "the tree must leave something to report"

    # Fixit: the same findings, and "has autofix" exactly where cgguard fix would fix.
    by_fixit = part(runs.by_fixit, setting)
    assert {f for f, _ in by_fixit} == expected
    unsafe_on = "unsafe-fixes = true" in (SETTINGS[setting] or ("", ""))[1]
    wanted = {(f["path"], f["line"], f["code"]) for f in reported if _applied(f["fix"], unsafe_on)}
    assert {(f[0], f[1], f[3]) for f, autofix in by_fixit if autofix} == wanted

    after_cgguard = files_part(runs.by_cgguard, setting)
    assert after_cgguard != files(runs.original / setting) or not wanted
    for tool, after in (("fixit", runs.fixed_by_fixit), ("codemod", runs.fixed_by_codemod)):
        assert files_part(after, setting) == after_cgguard, tool


def _check_json(folder: Path) -> list[dict]:
    result = run_cgguard("check", "--format", "json", ".", cwd=folder)
    assert result.returncode in (0, 1), result.stderr
    return json.loads(result.stdout)


def _applied(fix: dict | None, unsafe_on: bool) -> bool:
    return fix is not None and (fix["applicability"] == "safe" or (unsafe_on and fix["applicability"] == "unsafe"))


def test_suppressed_lines_are_left_alone(runs: Runs) -> None:
    """The issue's report as it was: `# noqa: CGG001` and `# cgguard: ignore[CGG001]`
    lines rewritten by Fixit and the codemod, CGG002 reported under `ignore`."""
    source = (runs.original / "ignore" / "suppressed.py").read_text()
    found = part(runs.by_fixit, "ignore")
    assert {(f[0], f[1], f[3]) for f, _ in found if f[0] == "suppressed.py"} == {("suppressed.py", 9, "CGG001")}
    for tool, fixed in (("fixit", runs.fixed_by_fixit), ("codemod", runs.fixed_by_codemod)):
        after = fixed["ignore/suppressed.py"].decode("utf-8")
        for line in source.splitlines():
            if "noqa" in line or "ignore[" in line:
                assert line in after.splitlines(), (tool, line)
        assert "min(self.max_num_reqs, self.compilation_config.max_cudagraph_capture_size)" in after, tool


def test_unsafe_fixes_only_with_the_setting(runs: Runs) -> None:
    """An unsafe fix: Fixit shows no autofix and neither tool applies it by default; with
    `unsafe-fixes = true` both apply it, as `cgguard fix` does."""
    for setting, applied in (("defaults", False), ("unsafe-fixes", True)):
        names = {f["path"] for f in runs.reported[setting] if f["fix"] and f["fix"]["applicability"] == "unsafe"}
        assert names, "some rule case must carry an unsafe fix"
        autofix = {f[0]: a for f, a in part(runs.by_fixit, setting) if f[0] in names}
        assert set(autofix) == names and all(a is applied for a in autofix.values()), (setting, autofix)
        before = files(runs.original / setting)
        for tool, fixed in (("fixit", runs.fixed_by_fixit), ("codemod", runs.fixed_by_codemod)):
            after = files_part(fixed, setting)
            for name in names:
                assert (after[name] != before[name]) is applied, (setting, tool, name)


def test_fixit_lint_ignore_still_works(tmp_path: Path) -> None:
    (tmp_path / "runner.py").write_text(
        SUPPRESSED.replace(
            "num_blocks = self.compilation_config.max_cudagraph_capture_size or 1",
            "num_blocks = self.compilation_config.max_cudagraph_capture_size or 1  # lint-ignore: CGG001",
        ),
        encoding="utf-8",
    )
    assert {f[3] for f in cgguard_findings(tmp_path)} == {"CGG001", "CGG002"}
    assert {f[3] for f in fixit_findings(tmp_path)} == {"CGG002"}
    before = (tmp_path / "runner.py").read_bytes()
    fixit_fix(tmp_path)
    assert (tmp_path / "runner.py").read_bytes() == before


def test_settings_of_the_files_own_folder(runs: Runs) -> None:
    """Each file gets the settings `cgguard check FILE` would use: those of the nearest
    settings file above it, also when the tools are run from elsewhere (Fixit ran from
    the root above each setting's tree)."""
    expected = {(f"ignore/{f['path']}", f["line"], f["column"], f["code"], f["message"]) for f in runs.reported["ignore"]}
    assert expected and all(code != "CGG002" for *_, code, _ in expected)
    assert {f for f, _ in runs.by_fixit if f[0].startswith("ignore/")} == expected


def test_a_bad_settings_file_fails_the_file_and_writes_nothing(tmp_path: Path) -> None:
    tree = _tree(tmp_path / "t", "ignore")
    (tree / "pyproject.toml").write_text('[tool.cgguard]\nignore = ["CGG002"]\nbogus = 1\n', encoding="utf-8")
    before = files(tree)
    reason = "pyproject.toml: [tool.cgguard]: unknown key 'bogus'"
    assert reason in run_cgguard("check", ".", cwd=tree).stderr
    lint = run_python("-m", "fixit", "--rules", FIXIT_RULES, "lint", ".", cwd=tree)
    fix = run_python("-m", "fixit", "--rules", FIXIT_RULES, "fix", "--automatic", ".", cwd=tree)
    mod = run_python("-m", "libcst.tool", "codemod", "-x", "--no-format", CODEMOD, ".", cwd=tree)
    # Each tool stops with cgguard's one-line reason, as `cgguard check` does: no traceback.
    for result in (lint, fix, mod):
        said = [line for line in (result.stdout + result.stderr).splitlines() if reason in line]
        assert result.returncode == 1 and len(said) == 1, result.stdout + result.stderr
        assert said[0].endswith(f"cgguard: error: {tree / reason}"
                                " (known keys: exclude, extend-exclude, force-exclude, ignore, "
                                "per-file-ignores, respect-gitignore, select, unfixable, unsafe-fixes)")
        assert "Traceback" not in result.stdout + result.stderr
    assert files(tree) == before


def test_excludes_are_the_tools_business(tmp_path: Path) -> None:
    """`extend-exclude` decides what `cgguard check .` finds while walking; a file Fixit or
    the codemod hands over is checked as if named on cgguard's command line."""
    tree = tmp_path / "t"
    (tree / "legacy").mkdir(parents=True)
    (tree / "pyproject.toml").write_text('[tool.cgguard]\nextend-exclude = ["legacy"]\n', encoding="utf-8")
    (tree / "legacy" / "old_runner.py").write_text(SUPPRESSED, encoding="utf-8")
    # `cgguard check .` finds nothing to check: its only Python file is excluded, which is
    # an error naming the pattern (a folder that checks nothing says why), not a clean run.
    walked = run_cgguard("check", "--format", "json", ".", cwd=tree)
    assert walked.returncode == 2 and json.loads(walked.stdout) == [], walked.stderr
    assert "excluded by `legacy`" in walked.stderr
    named = run_cgguard("check", "--format", "json", "legacy/old_runner.py", cwd=tree)
    expected = {(f["path"], f["line"], f["column"], f["code"], f["message"]) for f in json.loads(named.stdout)}
    assert expected and fixit_findings(tree) == expected
    fixed = tmp_path / "cgguard"
    shutil.copytree(tree, fixed)
    run_cgguard("fix", "legacy/old_runner.py", cwd=fixed)
    codemod(tree)
    assert files(tree) == files(fixed)
    assert (tree / "legacy" / "old_runner.py").read_text() != SUPPRESSED
