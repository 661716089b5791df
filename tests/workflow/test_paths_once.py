"""Each file is checked, counted and fixed once per run, however often the command line reaches it.

Real files, real symbolic links and hard links, the real CLI. The first path that
reaches a file is the one shown.
"""

from __future__ import annotations

import os

import pytest

from tests.conftest import run_cgguard
from tests.workflow.conftest import CGG001_SOURCE, GIT_ENV, finding_paths, git_init, write

ONE = "Found 1 finding (1 fixable with `cgguard fix`) in 1 file checked. Run `cgguard rule CGG001` for why and how to fix."


def _tree(root):
    write(root, {"r.py": CGG001_SOURCE, "pkg/a.py": CGG001_SOURCE})
    os.symlink("r.py", root / "link.py")  # a link to a file already in the run
    return root


@pytest.mark.parametrize("in_git", [False, True], ids=["walk", "git"])
@pytest.mark.parametrize("args, shown", [
    ((".", "./r.py", "r.py"), ["link.py", "pkg/a.py"]),        # the folder reaches r.py through link.py first
    (("./r.py", ".", "r.py", "link.py"), ["./r.py", "pkg/a.py"]),  # the first given wins
    (("r.py", "r.py", "link.py", "pkg", "pkg/a.py", "./pkg/../pkg/a.py"), ["pkg/a.py", "r.py"]),
])
def test_check_counts_each_file_once(tmp_path, in_git, args, shown):
    root = _tree(git_init(tmp_path / "repo") if in_git else tmp_path / "plain")
    result = run_cgguard("check", *args, cwd=root, env=GIT_ENV)
    assert result.returncode == 1, result.stderr
    assert finding_paths(result.stdout) == shown
    assert result.stdout.splitlines()[-1].startswith("Found 2 findings (2 fixable with `cgguard fix`) in 2 files checked.")
    assert result.stderr == ""


def test_a_symlink_from_elsewhere_and_a_folder_named_twice(tmp_path):
    write(tmp_path, {"src/r.py": CGG001_SOURCE})
    (tmp_path / "other").mkdir()
    os.symlink("../src/r.py", tmp_path / "other" / "alias.py")
    os.symlink("src", tmp_path / "src_link")  # the same folder under another name
    for args in (("src", "other"), ("src", "src"), ("src", "src_link"), ("other/alias.py", "src/r.py")):
        result = run_cgguard("check", *args, cwd=tmp_path)
        assert result.stdout.splitlines()[-1] == ONE, (args, result.stdout)
        assert len(finding_paths(result.stdout)) == 1


def test_fix_and_fix_diff_agree_with_check_and_write_each_file_once(tmp_path):
    root = _tree(tmp_path / "plain")
    args = (".", "./r.py", "r.py", "link.py", "pkg", "pkg/a.py")
    check = run_cgguard("check", *args, cwd=root)
    assert "in 2 files checked." in check.stdout
    diff = run_cgguard("fix", "--diff", *args, cwd=root)
    assert diff.returncode == 1
    assert [line for line in diff.stdout.splitlines() if line.startswith("--- ")] == ["--- a/link.py", "--- a/pkg/a.py"]
    assert diff.stdout.splitlines()[-1] == "Would fix 2 findings. No findings would remain in 2 files checked."
    fixed = run_cgguard("fix", *args, cwd=root)
    assert (fixed.returncode, fixed.stderr) == (0, "")
    assert fixed.stdout == "Fixed 2 findings. No findings remain in 2 files checked.\n"
    # Written once, through the link: the link stays a link, the target holds one fix.
    assert os.path.islink(root / "link.py")
    single = tmp_path / "single"
    write(single, {"r.py": CGG001_SOURCE})
    assert run_cgguard("fix", "r.py", cwd=single).returncode == 0
    assert (root / "r.py").read_text() == (single / "r.py").read_text()
    again = run_cgguard("fix", *args, cwd=root)
    assert again.stdout == "Fixed 0 findings. No findings remain in 2 files checked.\n"


def test_hard_links_are_two_names_and_both_are_fixed(tmp_path):
    # `cgguard fix` replaces a name with a new file, so a hard link is its own file:
    # counting it once would leave the other name unfixed.
    write(tmp_path, {"a.py": CGG001_SOURCE})
    os.link(tmp_path / "a.py", tmp_path / "b.py")
    check = run_cgguard("check", ".", "a.py", cwd=tmp_path)
    assert finding_paths(check.stdout) == ["a.py", "b.py"]
    assert "in 2 files checked." in check.stdout
    assert run_cgguard("fix", ".", cwd=tmp_path).stdout == "Fixed 2 findings. No findings remain in 2 files checked.\n"
    assert run_cgguard("check", ".", cwd=tmp_path).returncode == 0


def test_a_bad_path_named_twice_is_one_error(tmp_path):
    write(tmp_path, {"notes.txt": "x\n"})
    os.symlink("missing.py", tmp_path / "dangling.py")
    result = run_cgguard("check", "nope.py", "./nope.py", "dangling.py", "dangling.py", "notes.txt",
                         "notes.txt", cwd=tmp_path)
    assert result.returncode == 2
    lines = result.stderr.splitlines()
    assert [line.split(":")[0] for line in lines] == ["nope.py", "dangling.py", "notes.txt"], lines
    assert result.stdout == "No findings in 0 files checked. 2 errors.\n"
