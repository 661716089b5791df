"""Which files a run checks: real git repositories, the walk outside git, explicit paths."""

from __future__ import annotations

import os
import subprocess

from cgguard.static.workflow.config import Settings
from cgguard.static.workflow.discovery import discover
from tests.conftest import run_cgguard
from tests.workflow.conftest import CGG001_SOURCE, GIT_ENV, finding_paths, git, git_env, git_init, write


def _check(root, *args):
    return run_cgguard("check", *args, cwd=root, env=GIT_ENV)


# Every file carries the bug, so the reported paths are exactly the files checked.
TREE = {
    ".gitignore": "build_out/\n*.gen.py\n/top_only.py\n!keep.gen.py\n",
    "top_only.py": CGG001_SOURCE,          # anchored pattern: ignored at the top only
    "sub/top_only.py": CGG001_SOURCE,      # ... not here
    "a.gen.py": CGG001_SOURCE,             # ignored by glob
    "keep.gen.py": CGG001_SOURCE,          # re-included by negation
    "build_out/x.py": CGG001_SOURCE,       # dir-only pattern
    "sub/.gitignore": "local_*.py\ndeep/**/skip.py\n",
    "sub/local_tmp.py": CGG001_SOURCE,     # nested .gitignore
    "local_top.py": CGG001_SOURCE,         # nested rule does not reach up
    "sub/deep/a/b/skip.py": CGG001_SOURCE,  # "**" spans folders
    "sub/deep/a/b/run.py": CGG001_SOURCE,
    "src/mod.py": CGG001_SOURCE,
    "src/stub.pyi": CGG001_SOURCE,
    "src/notes.txt": CGG001_SOURCE,        # not Python
}
EXPECTED = [
    "keep.gen.py", "local_top.py", "src/mod.py", "src/stub.pyi", "sub/deep/a/b/run.py", "sub/top_only.py",
]


def test_git_repository_respects_gitignore_nested_and_info_exclude(tmp_path):
    repo = git_init(tmp_path / "repo")
    write(repo, TREE)
    write(repo, {".git/info/exclude": "private.py\n", "private.py": CGG001_SOURCE,
                 "untracked_new.py": CGG001_SOURCE})
    git(repo, "add", "src/mod.py", "keep.gen.py")
    git(repo, "commit", "-q", "-m", "some tracked files")
    result = _check(repo, ".")
    assert result.returncode == 1, result.stderr
    # Tracked and untracked files alike; ignored ones never.
    assert finding_paths(result.stdout) == sorted(EXPECTED + ["untracked_new.py"])


def test_git_tracked_file_that_matches_gitignore_is_still_checked(tmp_path):
    repo = git_init(tmp_path / "repo")
    write(repo, {"tracked.gen.py": CGG001_SOURCE})
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "x")
    write(repo, {".gitignore": "*.gen.py\n"})
    assert finding_paths(_check(repo, ".").stdout) == ["tracked.gen.py"]


def test_core_excludes_file_is_respected(tmp_path):
    repo = git_init(tmp_path / "repo")
    write(repo, {"mine.py": CGG001_SOURCE, "theirs.py": CGG001_SOURCE})
    excludes = tmp_path / "global-ignore"
    excludes.write_text("theirs.py\n")
    git(repo, "config", "core.excludesFile", str(excludes))
    assert finding_paths(_check(repo, ".").stdout) == ["mine.py"]


def test_outside_git_the_walk_applies_the_same_rules(tmp_path):
    root = tmp_path / "plain"
    write(root, TREE)
    result = _check(root, ".")
    assert not (root / ".git").exists()
    assert result.returncode == 1, result.stderr
    assert finding_paths(result.stdout) == sorted(EXPECTED)
    # A subfolder walked on its own still sees the .gitignore above it, up to the project
    # root: the nearest folder holding pyproject.toml, cgguard.toml or .git.
    write(root, {"sub/deep/x.gen.py": CGG001_SOURCE, "pyproject.toml": ""})
    assert finding_paths(_check(root, "sub").stdout) == ["sub/deep/a/b/run.py", "sub/top_only.py"]


def test_respect_gitignore_false_checks_ignored_files(tmp_path):
    root = tmp_path / "plain"
    write(root, {".gitignore": "*.py\n", "a.py": CGG001_SOURCE,
                 "pyproject.toml": "[tool.cgguard]\nrespect-gitignore = false\n"})
    assert finding_paths(_check(root, ".").stdout) == ["a.py"]
    # Everything ignored: the folder named was not checked, an error that names the rule and the option.
    ignored = _check(root, "--isolated", ".")
    assert (ignored.returncode, ignored.stderr) == (2, (
        ".: error: nothing checked: its only Python file is excluded by `*.py` (.gitignore); "
        "--no-respect-gitignore checks it\n"))
    assert finding_paths(_check(root, "--isolated", "--no-respect-gitignore", ".").stdout) == ["a.py"]


def test_explicit_files_are_checked_unless_force_exclude(tmp_path):
    repo = git_init(tmp_path / "repo")
    write(repo, {
        ".gitignore": "ignored.py\n",
        "ignored.py": CGG001_SOURCE,
        "gen/made.py": CGG001_SOURCE,
        "ok.py": CGG001_SOURCE,
        "pyproject.toml": '[tool.cgguard]\nextend-exclude = ["gen"]\n',
    })
    assert finding_paths(_check(repo, ".").stdout) == ["ok.py"]
    named = _check(repo, "ignored.py", "gen/made.py", "ok.py")
    assert finding_paths(named.stdout) == ["gen/made.py", "ignored.py", "ok.py"]
    forced = _check(repo, "--force-exclude", "gen/made.py", "ok.py")
    assert finding_paths(forced.stdout) == ["ok.py"]
    assert "in 1 file checked." in forced.stdout.splitlines()[-1]
    # Only excluded files named: nothing to do, and that is not an error.
    only = _check(repo, "--force-exclude", "gen/made.py")
    assert only.returncode == 0 and only.stdout == "No findings in 0 files checked.\n"
    assert only.stderr == "cgguard: warning: no Python files to check\n"
    # An excluded folder named on the command line is searched.
    assert finding_paths(_check(repo, "gen").stdout) == ["gen/made.py"]


def test_folder_git_ignores_is_searched_when_named(tmp_path):
    repo = git_init(tmp_path / "repo")
    write(repo, {".gitignore": ".env/\n", ".env/lib/pkg/runner.py": CGG001_SOURCE, "a.py": "x = 1\n"})
    assert finding_paths(_check(repo, ".").stdout) == []
    assert finding_paths(_check(repo, ".env/lib/pkg").stdout) == [".env/lib/pkg/runner.py"]


def test_a_folder_git_lists_nothing_in_is_walked_with_every_ignore_file_git_reads(tmp_path):
    # git lists no Python file in `.env/` (a .gitignore'd folder) nor in `sub/` (its files
    # all excluded): a folder named is walked then, by git's rules from all three sources.
    repo = git_init(tmp_path / "repo")
    config_home = tmp_path / "config"
    write(config_home, {"git/ignore": "default_global.py\n"})
    configured = tmp_path / "configured-ignore"
    configured.write_text("configured_global.py\n")
    write(repo, {
        ".gitignore": ".env/\n",
        ".git/info/exclude": "local_only.py\n/sub/anchored.py\n",
        ".env/lib/pkg/runner.py": CGG001_SOURCE,
        ".env/lib/pkg/local_only.py": CGG001_SOURCE,
        ".env/lib/pkg/default_global.py": CGG001_SOURCE,
        "sub/local_only.py": CGG001_SOURCE,
        "sub/anchored.py": CGG001_SOURCE,
        "sub/default_global.py": CGG001_SOURCE,
        "a.py": "x = 1\n",
    })
    env = dict(GIT_ENV, XDG_CONFIG_HOME=str(config_home))
    walked = run_cgguard("check", ".env/lib/pkg", cwd=repo, env=env)
    assert finding_paths(walked.stdout) == [".env/lib/pkg/runner.py"], walked.stderr
    result = run_cgguard("check", "sub", cwd=repo, env=env)
    assert result.returncode == 2 and finding_paths(result.stdout) == []
    assert result.stderr == (
        "sub: error: nothing checked: all 3 of its Python files are excluded by "
        "`/sub/anchored.py` (.git/info/exclude: 1 file), "
        f"`default_global.py` (core.excludesFile {config_home}/git/ignore: 1 file), "
        "`local_only.py` (.git/info/exclude: 1 file); "
        "--no-respect-gitignore checks them\n"
    )
    # core.excludesFile set in the repository's config replaces the default file.
    git(repo, "config", "core.excludesFile", str(configured))
    write(repo, {".env/lib/pkg/configured_global.py": CGG001_SOURCE})
    walked = run_cgguard("check", ".env/lib/pkg", cwd=repo, env=env)
    assert finding_paths(walked.stdout) == [
        ".env/lib/pkg/default_global.py", ".env/lib/pkg/runner.py"], walked.stderr
    # `cgguard fix` walks the same way: what git ignores is never rewritten.
    run_cgguard("fix", ".env/lib/pkg", cwd=repo, env=env)
    assert (repo / ".env/lib/pkg/local_only.py").read_text() == CGG001_SOURCE
    assert (repo / ".env/lib/pkg/configured_global.py").read_text() == CGG001_SOURCE
    assert (repo / ".env/lib/pkg/runner.py").read_text() != CGG001_SOURCE


def test_default_excludes_and_symlink_loops(tmp_path):
    root = tmp_path / "plain"
    write(root, {"venv/lib/x.py": CGG001_SOURCE, "node_modules/y.py": CGG001_SOURCE,
                 "pkg/a.py": CGG001_SOURCE})
    os.symlink("..", root / "pkg" / "loop")
    result = _check(root, ".")
    assert result.returncode == 1, result.stderr
    assert finding_paths(result.stdout) == ["pkg/a.py"]


def test_missing_paths_are_errors_and_folders_without_python_warnings(tmp_path):
    repo = git_init(tmp_path / "repo")
    write(repo, {"docs/readme.txt": "x", "a.py": CGG001_SOURCE})
    result = _check(repo, "nope.py", "docs", "a.py")
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        "nope.py: error: no such file or directory",
        "docs: warning: no Python files to check in this folder (none found)",
    ]
    assert finding_paths(result.stdout) == ["a.py"]


def test_walk_outside_git_agrees_with_git_on_tricky_patterns(tmp_path, monkeypatch):
    """The same tree inside a git repository and outside one: the same files checked."""
    tree = {
        ".gitignore": (
            "# comment\n"
            "*.tmp.py\n"
            "!important.tmp.py\n"
            "/anchored/\n"
            "**/cache_dir\n"
            "a/**/b.py\n"
            "[xy]_*.py\n"
            "?z.py\n"
            "\\#hash.py\n"
            "trailing.py   \n"
            "docs/*\n"
            "!docs/keep.py\n"
        ),
        "one.tmp.py": "", "important.tmp.py": "", "anchored/a.py": "", "sub/anchored/a.py": "",
        "x/cache_dir/c.py": "", "cache_dir/d.py": "", "a/b.py": "", "a/q/r/b.py": "", "a/c.py": "",
        "x_1.py": "", "w_1.py": "", "zz.py": "", "az.py": "", "abz.py": "", "#hash.py": "",
        "trailing.py": "", "docs/gone.py": "", "docs/keep.py": "", "docs/deeper/x.py": "",
        "pkg/.gitignore": "*.py\n!/top.py\n", "pkg/top.py": "", "pkg/other.py": "", "pkg/sub/top.py": "",
    }
    repo = git_init(tmp_path / "repo")
    plain = tmp_path / "plain"
    write(repo, tree)
    write(plain, tree)
    git_listed = subprocess.run(["git", "-C", str(repo), "ls-files", "-co", "--exclude-standard"],
                                capture_output=True, text=True, env=git_env(), check=True).stdout.split()
    expected = sorted(p for p in git_listed if p.endswith(".py"))
    assert "important.tmp.py" in expected and "docs/keep.py" in expected and "pkg/top.py" in expected
    # The files are empty (no findings): list what a run checks through discovery itself.
    for name, value in GIT_ENV.items():
        monkeypatch.setenv(name, value)
    for root in (repo, plain):
        monkeypatch.chdir(root)
        found = sorted(p for p, err in discover(["."], Settings(root=str(root))) if err is None)
        assert found == expected, (root.name, sorted(set(found) ^ set(expected)))


def test_exclude_replaces_defaults_and_globs_are_relative_to_the_config_file(tmp_path):
    root = tmp_path / "proj"
    write(root, {
        "pyproject.toml": '[tool.cgguard]\nexclude = ["gen"]\nextend-exclude = ["sub/skip"]\n',
        "venv/x.py": CGG001_SOURCE,   # default exclude replaced: checked
        "sub/gen/y.py": CGG001_SOURCE,
        "sub/skip/z.py": CGG001_SOURCE,
        "sub/ok.py": CGG001_SOURCE,
    })
    assert finding_paths(_check(root, ".").stdout) == ["sub/ok.py", "venv/x.py"]
    # Run from the subfolder: the globs still count from the config file's folder.
    assert finding_paths(_check(root / "sub", ".").stdout) == ["ok.py"]


def test_sizes_are_filled_from_discoverys_own_stat(tmp_path):
    """The driver orders the shared work by file size: discovery hands over the size
    from the ``stat`` it makes anyway (a second stat per file cost 8 ms on vLLM)."""
    write(tmp_path, {"pkg/a.py": "x = 1\n", "pkg/b.py": "y = 22222\n" * 3, "c.py": ""})
    sizes: dict[str, int] = {}
    found = [p for p, error in discover([str(tmp_path / "pkg"), str(tmp_path / "c.py"), str(tmp_path / "gone.py")], Settings(), sizes) if error is None]
    assert sorted(sizes) == sorted(found) and len(found) == 3
    assert {os.path.basename(p): n for p, n in sizes.items()} == {"a.py": 6, "b.py": 30, "c.py": 0}
    # Without the dict, discovery finds the same files.
    assert [p for p, e in discover([str(tmp_path / "pkg"), str(tmp_path / "c.py")], Settings()) if e is None] == found


def test_git_listed_files_lose_excluded_folders_at_any_depth_and_deleted_files(tmp_path):
    """Inside git, an exclude glob naming a folder drops every file below it, however deep,
    and a file glob drops the file; a tracked file deleted from disk is not checked and is
    no error; a tracked symbolic link to a folder is no file. (Discovery decides each folder
    once for all its files, and takes each file's ``stat`` once.)"""
    repo = git_init(tmp_path / "repo")
    write(repo, {
        "pyproject.toml": '[tool.cgguard]\nextend-exclude = ["gen", "sub/skip", "*_pb2.py"]\n',
        "a/gen/b/c.py": CGG001_SOURCE,  # a folder named "gen", two levels down
        "a/gen.py": CGG001_SOURCE,  # a file named "gen.py" is no folder "gen"
        "gen/top.py": CGG001_SOURCE,
        "sub/skip/z.py": CGG001_SOURCE,
        "sub/skipped/z.py": CGG001_SOURCE,  # "sub/skip" is no prefix of a name
        "x/msg_pb2.py": CGG001_SOURCE,
        "x/ok.py": CGG001_SOURCE,
        "gone.py": CGG001_SOURCE,
    })
    os.symlink("x", repo / "linked.py")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "x")
    os.remove(repo / "gone.py")
    result = _check(repo, ".")
    assert result.returncode == 1, result.stderr
    assert finding_paths(result.stdout) == ["a/gen.py", "sub/skipped/z.py", "x/ok.py"]
    assert "gone.py" not in result.stdout + result.stderr and "linked.py" not in result.stderr
