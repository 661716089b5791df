"""[tool.cgguard] / cgguard.toml: discovery, precedence, validation, `cgguard config`."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import REPO, run_cgguard
from tests.workflow.conftest import (
    CGG001_SOURCE,
    CGG002_SOURCE,
    CLEAN_SOURCE,
    finding_paths,
    readme_snippet,
    write,
)


def _project(tmp_path: Path, config: str | None, name: str = "pyproject.toml") -> Path:
    root = tmp_path / "proj"
    write(root, {"pkg/a.py": CGG001_SOURCE, "pkg/b.py": CGG002_SOURCE, "pkg/c.py": CLEAN_SOURCE})
    if config is not None:
        (root / name).write_text(config)
    return root


def _codes(stdout: str) -> list[str]:
    return [line.split(" ")[1] for line in stdout.splitlines() if ": CGG" in line]


def test_without_settings_every_rule_reports(tmp_path):
    root = _project(tmp_path, None)
    result = run_cgguard("check", "pkg", cwd=root)
    assert result.returncode == 1, result.stderr
    assert sorted(_codes(result.stdout)) == ["CGG001", "CGG002"]


def test_select_and_ignore_from_pyproject(tmp_path):
    root = _project(tmp_path, '[tool.cgguard]\nselect = ["CGG00"]\nignore = ["CGG002"]\n')
    result = run_cgguard("check", "pkg", cwd=root)
    assert result.returncode == 1, result.stderr
    assert _codes(result.stdout) == ["CGG001"]


def test_ignoring_everything_found_exits_0(tmp_path):
    root = _project(tmp_path, '[tool.cgguard]\nignore = ["CGG"]\n')
    result = run_cgguard("check", "pkg", cwd=root)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout == "No findings in 3 files checked.\n"


def test_nearest_file_is_found_from_the_first_path_and_cgguard_toml_wins(tmp_path):
    root = _project(tmp_path, '[tool.cgguard]\nignore = ["CGG001"]\n')
    # A pyproject.toml without a [tool.cgguard] table does not stop the search.
    (root / "pkg" / "pyproject.toml").write_text('[project]\nname = "pkg"\n')
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    result = run_cgguard("check", str(root / "pkg"), cwd=elsewhere)
    assert _codes(result.stdout) == ["CGG002"]
    (root / "cgguard.toml").write_text('ignore = ["CGG002"]\n')
    result = run_cgguard("check", str(root / "pkg"), cwd=elsewhere)
    assert _codes(result.stdout) == ["CGG001"]


def test_config_flag_and_isolated(tmp_path):
    root = _project(tmp_path, '[tool.cgguard]\nignore = ["CGG001"]\n')
    other = tmp_path / "other.toml"
    other.write_text('ignore = ["CGG002"]\n')
    assert _codes(run_cgguard("check", "pkg", cwd=root).stdout) == ["CGG002"]
    assert _codes(run_cgguard("check", "--config", str(other), "pkg", cwd=root).stdout) == ["CGG001"]
    assert sorted(_codes(run_cgguard("check", "--isolated", "pkg", cwd=root).stdout)) == ["CGG001", "CGG002"]
    missing = run_cgguard("check", "--config", "nope.toml", "pkg", cwd=root)
    assert missing.returncode == 2
    assert missing.stderr == "cgguard: error: nope.toml: no such config file\n"


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        ('[tool.cgguard]\nselekt = ["CGG001"]\n', "unknown key 'selekt'"),
        ('[tool.cgguard]\nselect = "CGG001"\n', "select: expected a list of strings, got 'CGG001'"),
        ('[tool.cgguard]\nignore = ["CGG999"]\n', "ignore: unknown rule code 'CGG999'"),
        ('[tool.cgguard]\nunsafe-fixes = "yes"\n', "unsafe-fixes: expected true or false, got 'yes'"),
        ('[tool.cgguard]\nper-file-ignores = ["x"]\n', "per-file-ignores: expected a table"),
        ('[tool.cgguard]\nper-file-ignores = { "t/*" = ["E501"] }\n',
         "per-file-ignores: 't/*': unknown rule code 'E501'"),
        ("[tool.cgguard\n", "invalid TOML"),
    ],
)
def test_bad_settings_exit_2_with_one_line_naming_file_and_key(tmp_path, config, expected):
    root = _project(tmp_path, config)
    for command in (["check", "pkg"], ["fix", "pkg"], ["config"]):
        result = run_cgguard(*command, cwd=root)
        assert result.returncode == 2, (command, result.stdout, result.stderr)
        assert result.stdout == ""
        lines = result.stderr.splitlines()
        assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
        assert str(root / "pyproject.toml") in lines[0]
        assert expected in lines[0]
    # Nothing was rewritten by the refused fix.
    assert (root / "pkg" / "a.py").read_text() == CGG001_SOURCE


def test_per_file_ignores_and_unfixable(tmp_path):
    root = _project(
        tmp_path,
        '[tool.cgguard]\nper-file-ignores = { "pkg/b.py" = ["CGG002"], "a.py" = ["CGG001"] }\n',
    )
    result = run_cgguard("check", "pkg", cwd=root)
    assert result.returncode == 0, result.stdout
    (root / "pyproject.toml").write_text('[tool.cgguard]\nunfixable = ["CGG001"]\n')
    result = run_cgguard("fix", "pkg", cwd=root)
    assert result.returncode == 1
    assert (root / "pkg" / "a.py").read_text() == CGG001_SOURCE  # reported, never fixed
    assert "pkg/a.py:3:22: CGG001" in result.stdout


def test_unsafe_fixes_setting_and_flags(tmp_path):
    root = _project(tmp_path, "[tool.cgguard]\nunsafe-fixes = true\n")
    result = run_cgguard("config", cwd=root)
    assert f"unsafe-fixes = true  # {root / 'pyproject.toml'}" in result.stdout
    # The flag wins over the file (the setting reaches the fixer either way; the
    # rules have no unsafe fix today, so the outcome is the same safe rewrite).
    for flags in ([], ["--no-unsafe-fixes"], ["--unsafe-fixes"]):
        write(root, {"pkg/a.py": CGG001_SOURCE})
        result = run_cgguard("fix", *flags, "pkg/a.py", cwd=root)
        assert result.returncode == 0, result.stdout + result.stderr
        assert "min(self.max_num_reqs" in (root / "pkg" / "a.py").read_text()


def test_cgguard_config_prints_values_and_origins(tmp_path):
    root = _project(tmp_path, '[tool.cgguard]\nignore = ["CGG002"]\nextend-exclude = ["gen"]\n')
    result = run_cgguard("config", cwd=root)
    assert result.returncode == 0, result.stderr
    source = str(root / "pyproject.toml")
    assert result.stdout.splitlines()[0] == f"# settings file: {source}"
    assert f'ignore = ["CGG002"]  # {source}' in result.stdout
    assert f'extend-exclude = ["gen"]  # {source}' in result.stdout
    assert 'select = ["CGG0"]  # default' in result.stdout
    assert "per-file-ignores = {}  # default" in result.stdout
    isolated = run_cgguard("config", "--isolated", cwd=root)
    assert isolated.stdout.splitlines()[0] == "# settings file: none (defaults)"
    assert "ignore = []  # default" in isolated.stdout


def test_readme_settings_snippet(tmp_path):
    """docs/configuration.md's [tool.cgguard] example, as written, does what its comments say."""
    root = tmp_path / "proj"
    write(root, {
        "pyproject.toml": readme_snippet("pyproject", "docs/configuration.md"),
        "src/runner.py": CGG001_SOURCE,
        "src/mamba.py": CGG002_SOURCE,          # ignore = ["CGG002"]
        "third_party/vendored.py": CGG001_SOURCE,  # extend-exclude: a folder name
        "legacy/x/generated_runner.py": CGG001_SOURCE,  # extend-exclude: a path glob
        "legacy/x/handwritten.py": CGG001_SOURCE,
        "tests/unit/test_runner.py": CGG001_SOURCE,  # per-file-ignores
    })
    result = run_cgguard("check", ".", cwd=root)
    assert result.returncode == 1, result.stderr
    assert finding_paths(result.stdout) == ["legacy/x/handwritten.py", "src/runner.py"]
    shown = run_cgguard("config", cwd=root).stdout
    assert "unsafe-fixes = false  #" in shown and str(root / "pyproject.toml") in shown


def test_this_repository_excludes_its_deliberate_examples_unless_named():
    result = run_cgguard("check", ".", cwd=REPO)
    assert result.returncode in (0, 1), result.stderr
    flagged = finding_paths(result.stdout)
    assert not [p for p in flagged if p.startswith(("examples/", "rules/"))], flagged
    example = run_cgguard("check", "examples/fork_runner", cwd=REPO)
    assert example.returncode == 1
    assert finding_paths(example.stdout) == ["examples/fork_runner/myfork/worker/model_runner.py"]


def test_a_settings_file_changed_between_two_runs_of_one_process_is_read_anew(tmp_path):
    # Fixit and the codemod resolve settings in a process that may outlive an edit.
    from cgguard.static.workflow.config import resolve

    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text('[tool.cgguard]\nselect = ["CGG001"]\n')
    assert resolve(start=str(tmp_path)).select == ("CGG001",)
    pyproject.write_text('[tool.cgguard]\nselect = ["CGG002"]\n')
    assert resolve(start=str(tmp_path)).select == ("CGG002",)


def test_a_project_marker_added_between_two_runs_of_one_process_is_seen(tmp_path):
    from cgguard.static.driver.context import RunContext

    folder = tmp_path / "fork" / "pkg"
    folder.mkdir(parents=True)
    # tmp_path may sit below a folder with a marker of its own: compare with what is above.
    above = RunContext().roots.of(str(tmp_path))
    assert RunContext().roots.of(str(folder)) == above
    (tmp_path / "fork" / "pyproject.toml").write_text("[project]\nname = 'fork'\n")
    assert RunContext().roots.of(str(folder)) == str(tmp_path / "fork")
