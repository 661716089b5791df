"""Fixit and the codemod honour cgguard's settings and suppressions.

A tree holds every rule case plus a file with suppression comments, under one
settings file; the real ``fixit lint``, ``fixit fix --automatic`` and
``python -m libcst.tool codemod`` must report what ``cgguard check`` reports and
write what ``cgguard fix`` writes on an identical copy, for each setting.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from cgguard.static.workflow.ruledocs import all_rules
from tests.conftest import run_cgguard
from tests.ecosystem.tools import (
    CODEMOD,
    FIXIT_RULES,
    cgguard_findings,
    codemod,
    files,
    fixit_findings,
    fixit_findings_and_autofix,
    fixit_fix,
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


def _tree(folder: Path, setting: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for rule in all_rules():
        for case in rule.cases():
            (folder / f"{rule.code}_{case.kind}_{case.name}.py").write_text(case.source(), encoding="utf-8")
    (folder / "suppressed.py").write_text(SUPPRESSED, encoding="utf-8")
    (folder / "legacy").mkdir()
    (folder / "legacy" / "old_runner.py").write_text(SUPPRESSED, encoding="utf-8")
    if SETTINGS[setting] is not None:
        name, text = SETTINGS[setting]
        (folder / name).write_text(text, encoding="utf-8")
    return folder


@pytest.mark.parametrize("setting", list(SETTINGS))
def test_same_findings_and_bytes_as_cgguard(setting: str, tmp_path: Path) -> None:
    original = _tree(tmp_path / "original", setting)
    reported = _check_json(original)
    expected = {(f["path"], f["line"], f["column"], f["code"], f["message"]) for f in reported}
    assert expected, "the tree must leave something to report"

    # Fixit lint: the same findings, and "has autofix" exactly where cgguard fix would fix.
    by_fixit = fixit_findings_and_autofix(original)
    assert {f for f, _ in by_fixit} == expected
    unsafe_on = "unsafe-fixes = true" in (SETTINGS[setting] or ("", ""))[1]
    wanted = {(f["path"], f["line"], f["code"]) for f in reported if _applied(f["fix"], unsafe_on)}
    assert {(f[0], f[1], f[3]) for f, autofix in by_fixit if autofix} == wanted

    fixed = tmp_path / "cgguard"
    shutil.copytree(original, fixed)
    result = run_cgguard("fix", ".", cwd=fixed)
    assert result.returncode in (0, 1), result.stderr
    after_cgguard = files(fixed)
    assert after_cgguard != files(original) or not wanted
    for tool, run in (("fixit", fixit_fix), ("codemod", codemod)):
        work = tmp_path / tool
        shutil.copytree(original, work)
        run(work)
        assert files(work) == after_cgguard, tool


def _check_json(folder: Path) -> list[dict]:
    result = run_cgguard("check", "--format", "json", ".", cwd=folder)
    assert result.returncode in (0, 1), result.stderr
    return json.loads(result.stdout)


def _applied(fix: dict | None, unsafe_on: bool) -> bool:
    return fix is not None and (fix["applicability"] == "safe" or (unsafe_on and fix["applicability"] == "unsafe"))


def test_suppressed_lines_are_left_alone(tmp_path: Path) -> None:
    """The issue's report as it was: `# noqa: CGG001` and `# cgguard: ignore[CGG001]`
    lines rewritten by Fixit and the codemod, CGG002 reported under `ignore`."""
    tree = _tree(tmp_path / "t", "ignore")
    source = (tree / "suppressed.py").read_text()
    assert {(f[0], f[1], f[3]) for f in fixit_findings(tree) if f[0] == "suppressed.py"} == {("suppressed.py", 9, "CGG001")}
    for tool, run in (("fixit", fixit_fix), ("codemod", codemod)):
        work = tmp_path / tool
        shutil.copytree(tree, work)
        run(work)
        after = (work / "suppressed.py").read_text()
        for line in source.splitlines():
            if "noqa" in line or "ignore[" in line:
                assert line in after.splitlines(), (tool, line)
        assert "min(self.max_num_reqs, self.compilation_config.max_cudagraph_capture_size)" in after, tool


def test_unsafe_fixes_only_with_the_setting(tmp_path: Path) -> None:
    """An unsafe fix: Fixit shows no autofix and neither tool applies it by default; with
    `unsafe-fixes = true` both apply it, as `cgguard fix` does."""
    for setting, applied in (("defaults", False), ("unsafe-fixes", True)):
        tree = _tree(tmp_path / setting, setting)
        names = {f["path"] for f in _check_json(tree) if f["fix"] and f["fix"]["applicability"] == "unsafe"}
        assert names, "some rule case must carry an unsafe fix"
        autofix = {f[0]: a for f, a in fixit_findings_and_autofix(tree) if f[0] in names}
        assert set(autofix) == names and all(a is applied for a in autofix.values()), (setting, autofix)
        for tool, run in (("fixit", fixit_fix), ("codemod", codemod)):
            work = tmp_path / f"{setting}-{tool}"
            shutil.copytree(tree, work)
            run(work)
            for name in names:
                assert ((work / name).read_bytes() != (tree / name).read_bytes()) is applied, (setting, tool, name)


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


def test_settings_of_the_files_own_folder(tmp_path: Path) -> None:
    """Each file gets the settings `cgguard check FILE` would use: those of the nearest
    settings file above it, also when the tools are run from elsewhere."""
    project = _tree(tmp_path / "project", "ignore")
    expected = {(f"project/{p}", *rest) for p, *rest in cgguard_findings(project)}
    assert all(code != "CGG002" for *_, code, _ in expected)
    assert fixit_findings(tmp_path) == expected


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
