"""Bad input: each problem is one line naming the file and the reason, every other
file is still checked and fixed, the exit code is 2, and no traceback is printed.

One tree holds one file of each kind of trouble next to buggy files that must
still be fixed; `check` and `fix` run over it (and over missing paths) with the
real CLI in a fresh interpreter.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.robustness.conftest import (
    BUGGY,
    CLEAN,
    FIXED,
    assert_no_traceback,
    cgguard,
    error_lines,
    snapshot,
)

# name -> (bytes, the reason expected in its error line). Syntax errors only
# count in files that mention the capture size and a sink word (here, outside any
# project): other files are never parsed (docs/robustness.md).
BAD_FILES = {
    "syntax_error.py": (
        b"def f(self):\n    n = self.compilation_config.max_cudagraph_capture_size or 1\n    self.cache_config.num_gpu_blocks_override = n\n    def (\n",
        "syntax error at line 4, column 9: invalid syntax",
    ),
    "invalid_utf8.py": (b'# capture_size\nx = "caf\xe9"\n', "not valid UTF-8: byte 0xe9 at line 2, column 9"),
    "binary.py": (b"\x7fELF\x02\x01\x01\x00\x00capture_size\x00\x00", "binary file (contains NUL bytes)"),
    "bad_cookie.py": (b"# -*- coding: no-such-codec -*-\nx = 1\n", "no-such-codec"),
    "wrong_cookie.py": (b"# coding: ascii\n# capture_size\nx = '\xc3\xa9'\n", "not valid ascii"),
    "deep_parens.py": (
        b"x = " + b"(" * 5000 + b"1" + b")" * 5000 + b"  # max_cudagraph_capture_size, num_gpu_blocks_override\n",
        "too many nested parentheses",
    ),
    "deep_chain.py": (
        b"def f(self):\n    n = self.compilation_config.max_cudagraph_capture_size or 1\n    cfg.num_gpu_blocks_override = "
        + b"+".join([b"a"] * 100_000) + b"\n",
        "too deeply nested",
    ),
    "deep_unary.py": (
        b"def f(self):\n    cfg.num_gpu_blocks_override = " + b"-" * 100_000 + b"self.compilation_config.max_cudagraph_capture_size\n",
        "too deeply nested",
    ),
}


def _big_file() -> bytes:
    """Tens of thousands of lines of ordinary code, the bug in the last function."""
    filler = "".join(
        f"def helper_{i}(x, y=None):\n    '''Docstring {i}.'''\n    return [x + {i} for _ in range(3)]\n\n"
        for i in range(12_000)
    )
    return (filler + BUGGY).encode()


@pytest.fixture
def tree(tmp_path):
    root = tmp_path / "tree"
    (root / "pkg").mkdir(parents=True)
    for name, (data, _) in BAD_FILES.items():
        (root / "pkg" / name).write_bytes(data)
    (root / "pkg" / "empty.py").write_bytes(b"")
    (root / "pkg" / "clean.py").write_text(CLEAN)
    (root / "pkg" / "a_buggy.py").write_text(BUGGY)
    (root / "pkg" / "z_buggy.py").write_text(BUGGY)
    (root / "pkg" / "big.py").write_bytes(_big_file())
    # Symbolic link troubles: a file link loop, a folder link back up, a dangling link.
    os.symlink("loop_b.py", root / "pkg" / "loop_a.py")
    os.symlink("loop_a.py", root / "pkg" / "loop_b.py")
    os.symlink("..", root / "pkg" / "up")
    os.symlink("does_not_exist.py", root / "pkg" / "dangling.py")
    # A named pipe called *.py: reading it would block forever.
    os.mkfifo(root / "pkg" / "pipe.py")
    # A folder with no Python files, given explicitly: a warning, not an error.
    (root / "docs").mkdir()
    (root / "docs" / "README.txt").write_text("nothing here\n")
    return root


EXPECTED_ERRORS = {
    **{f"pkg/{name}": reason for name, (_, reason) in BAD_FILES.items()},
    "pkg/loop_a.py": "symbolic link loop",
    "pkg/loop_b.py": "symbolic link loop",
    "pkg/dangling.py": "broken symbolic link",
    "pkg/pipe.py": "not a regular file (a named pipe)",
    "missing.py": "no such file or directory",
    "missing_dir": "no such file or directory",
}


def _errors_by_path(stderr: str, root) -> dict[str, str]:
    out: dict[str, str] = {}
    for line in error_lines(stderr):
        path, _, reason = line.partition(": error: ")
        rel = os.path.relpath(path, root) if os.path.isabs(path) else os.path.normpath(path)
        assert rel not in out, f"two error lines for {rel}:\n{stderr}"
        out[rel] = reason
    return out


def _assert_errors(stderr: str, root, expected: dict[str, str], warnings: tuple[str, ...] = ()) -> None:
    got = _errors_by_path(stderr, root)
    assert sorted(got) == sorted(expected), stderr
    for path, reason in expected.items():
        assert reason in got[path], (path, got[path])
    for line in warnings:
        assert line in stderr.splitlines(), stderr
    # Nothing else on stderr: one line per problem, and the warnings asked for.
    assert len(stderr.splitlines()) == len(expected) + len(warnings), stderr


@pytest.mark.parametrize("command", ["check", "fix"])
def test_every_bad_input_is_one_line_and_the_rest_still_runs(tree, command):
    before = snapshot(tree)
    args = [command, "pkg", "docs", "missing.py", "missing_dir"]
    result = cgguard(*args, cwd=tree, timeout=120)
    assert_no_traceback(result)
    assert result.returncode == 2, result.stdout + result.stderr
    _assert_errors(result.stderr, tree, EXPECTED_ERRORS, warnings=(
        "docs: warning: no Python files to check in this folder (none found)",))

    after = snapshot(tree)
    # Every bad file is byte for byte untouched, and no temporary file is left.
    assert sorted(after) == sorted(before)
    for name in BAD_FILES:
        assert after[f"pkg/{name}"] == before[f"pkg/{name}"]
    assert after["pkg/empty.py"] == b""
    assert after["pkg/clean.py"] == CLEAN.encode()
    buggy_after = FIXED.encode() if command == "fix" else BUGGY.encode()
    assert after["pkg/a_buggy.py"] == buggy_after
    assert after["pkg/z_buggy.py"] == buggy_after
    assert after["pkg/big.py"] == _big_file().replace(BUGGY.encode(), buggy_after)
    if command == "fix":
        assert "Fixed 3 findings." in result.stdout
    else:
        # Three findings, each in a file named on its own line.
        assert sorted(l.split(":")[0] for l in result.stdout.splitlines() if " CGG001 " in l) == [
            "pkg/a_buggy.py", "pkg/big.py", "pkg/z_buggy.py"]
    assert f"{len(EXPECTED_ERRORS)} errors." in result.stdout
    # Only the files whose findings were settled count as checked; a failed path is an error.
    assert "in 5 files checked." in result.stdout  # empty, clean, a_buggy, z_buggy, big


def test_unreadable_file_is_reported_and_others_fixed(tmp_path):
    root = tmp_path / "tree"
    root.mkdir()
    (root / "locked.py").write_text(BUGGY)
    (root / "open.py").write_text(BUGGY)
    os.chmod(root / "locked.py", 0)
    result = cgguard("fix", ".", cwd=root, unprivileged=True)
    assert_no_traceback(result)
    assert result.returncode == 2, result.stdout + result.stderr
    _assert_errors(result.stderr, root, {"locked.py": "permission denied"})
    assert (root / "open.py").read_text() == FIXED
    os.chmod(root / "locked.py", 0o644)
    assert (root / "locked.py").read_text() == BUGGY


def test_unwritable_folder_is_reported_and_the_file_kept(tmp_path):
    root = tmp_path / "tree"
    (root / "ro").mkdir(parents=True)
    (root / "rw").mkdir()
    (root / "ro" / "runner.py").write_text(BUGGY)
    (root / "rw" / "runner.py").write_text(BUGGY)
    os.chmod(root / "ro", 0o555)
    try:
        result = cgguard("fix", ".", cwd=root, unprivileged=True)
    finally:
        os.chmod(root / "ro", 0o755)
    assert_no_traceback(result)
    assert result.returncode == 2, result.stdout + result.stderr
    _assert_errors(result.stderr, root, {"ro/runner.py": "could not write the fixed file: permission denied"})
    assert (root / "ro" / "runner.py").read_text() == BUGGY
    assert sorted(p.name for p in (root / "ro").iterdir()) == ["runner.py"]
    assert (root / "rw" / "runner.py").read_text() == FIXED


def test_parser_warnings_about_the_file_are_not_printed(tmp_path):
    # Invalid escapes make the parser warn (SyntaxWarning on 3.12+, DeprecationWarning
    # before); with warnings forced on, a run must still print nothing but its report.
    (tmp_path / "escapes.py").write_text(BUGGY + '        pattern = "\\d+ blocks"\n        ok = x is 1\n')
    result = cgguard("fix", str(tmp_path), env={"PYTHONWARNINGS": "always"})
    assert_no_traceback(result)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stderr == ""
    assert "Fixed 1 finding." in result.stdout


def test_empty_and_whitespace_only_files_are_clean(tmp_path):
    (tmp_path / "empty.py").write_bytes(b"")
    (tmp_path / "blank.py").write_bytes(b"\n\r\n   \n\t\n")
    (tmp_path / "bom_only.py").write_bytes(b"\xef\xbb\xbf")
    result = cgguard("fix", str(tmp_path))
    assert (result.returncode, result.stderr) == (0, "")
    assert "No findings remain in 3 files checked." in result.stdout


def test_a_directory_named_like_a_python_file_is_walked_not_read(tmp_path):
    (tmp_path / "odd.py").mkdir()
    (tmp_path / "odd.py" / "inner.py").write_text(BUGGY)
    result = cgguard("fix", str(tmp_path))
    assert (result.returncode, result.stderr) == (0, "")
    assert (tmp_path / "odd.py" / "inner.py").read_text() == FIXED


def test_leftover_temp_file_is_not_source(tmp_path):
    # A run killed between creating its temporary file and the rename leaves
    # `.cgguard-*.tmp`; later runs do not check it, fix it or report it.
    (tmp_path / ".cgguard-abc123.tmp").write_text(BUGGY[: len(BUGGY) // 2])
    (tmp_path / "runner.py").write_text(BUGGY)
    result = cgguard("fix", str(tmp_path))
    assert (result.returncode, result.stderr) == (0, "")
    assert "in 1 file checked" in result.stdout
    assert (tmp_path / ".cgguard-abc123.tmp").read_text() == BUGGY[: len(BUGGY) // 2]


def test_internal_error_in_one_file_is_one_line_and_verbose_shows_the_traceback(tmp_path, monkeypatch):
    """A bug in cgguard cannot be produced on demand, so this one is injected: the
    checker raises for one file. The CLI runs in-process (click's runner) so the
    injection reaches it; everything else is the real code."""
    from click.testing import CliRunner

    import cgguard.static.driver.check as check_module
    from cgguard.cli import main

    real_check = check_module.check_source

    def flaky(text, path, **kw):
        if path.endswith("boom.py"):
            raise RuntimeError("injected failure")
        return real_check(text, path, **kw)

    monkeypatch.setattr(check_module, "check_source", flaky)
    for name in ("a.py", "boom.py", "z.py"):
        (tmp_path / name).write_text(BUGGY)

    runner = CliRunner(mix_stderr=False) if "mix_stderr" in CliRunner.__init__.__code__.co_varnames else CliRunner()
    result = runner.invoke(main, ["fix", str(tmp_path)])
    assert result.exit_code == 2, result.output
    assert result.stderr.splitlines() == [f"{tmp_path / 'boom.py'}: error: internal error: RuntimeError: injected failure"]
    assert "Traceback" not in result.stdout + result.stderr
    assert (tmp_path / "a.py").read_text() == FIXED
    assert (tmp_path / "z.py").read_text() == FIXED
    assert (tmp_path / "boom.py").read_text() == BUGGY

    verbose = runner.invoke(main, ["check", "--verbose", str(tmp_path)])
    assert verbose.exit_code == 2
    assert "Traceback (most recent call last)" in verbose.stderr
    assert "RuntimeError: injected failure" in verbose.stderr
    # --verbose does not stick to later runs in the same process.
    quiet = runner.invoke(main, ["check", str(tmp_path)])
    assert "Traceback" not in quiet.stderr


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX file types")
def test_device_file_is_refused_without_reading(tmp_path):
    os.symlink("/dev/zero", tmp_path / "zero.py")  # endless: a read would never finish
    result = cgguard("check", str(tmp_path / "zero.py"), timeout=30)
    assert result.returncode == 2
    assert result.stderr.strip().endswith("error: not a regular file (a device)")


def test_file_names_that_are_not_utf8_are_reported_and_fixed(tmp_path):
    root = os.fsencode(tmp_path)
    with open(os.path.join(root, b"runner_\xff.py"), "wb") as fh:
        fh.write(BUGGY.encode())
    with open(os.path.join(root, b"blob_\xfe.py"), "wb") as fh:
        fh.write(b"\x00\x01")
    # A strict UTF-8 stream, as under a UTF-8 locale (not the C locale's lenient one).
    env = {"PYTHONIOENCODING": "utf-8:strict", "LC_ALL": "C.UTF-8"}
    check = cgguard("check", ".", cwd=tmp_path, env=env)
    assert_no_traceback(check)
    assert check.returncode == 2, check.stdout + check.stderr
    assert check.stderr.splitlines() == ["blob_\\xfe.py: error: binary file (contains NUL bytes)"]
    assert check.stdout.startswith("runner_\\xff.py:4:22: CGG001 ")
    diff = cgguard("fix", "--diff", ".", cwd=tmp_path, env=env)
    assert_no_traceback(diff)
    assert diff.returncode == 2, diff.stdout + diff.stderr
    # Quoted as git quotes it (octal escapes in double quotes): `git apply` takes the patch.
    assert '--- "a/runner_\\377.py"\n+++ "b/runner_\\377.py"\n' in diff.stdout
    os.remove(os.path.join(root, b"blob_\xfe.py"))
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    patch = cgguard("fix", "--diff", "-o", "../fix.patch", ".", cwd=tmp_path, env=env)
    assert patch.returncode == 1, patch.stderr
    applied = subprocess.run(["git", "apply", "../fix.patch"], cwd=tmp_path, capture_output=True, text=True)
    assert applied.returncode == 0, applied.stderr
    with open(os.path.join(root, b"runner_\xff.py"), "rb") as fh:
        assert fh.read() == FIXED.encode()
    with open(os.path.join(root, b"runner_\xff.py"), "wb") as fh:
        fh.write(BUGGY.encode())
    with open(os.path.join(root, b"blob_\xfe.py"), "wb") as fh:
        fh.write(b"\x00\x01")
    fixed = cgguard("fix", ".", cwd=tmp_path, env=env)
    assert fixed.returncode == 2 and "Fixed 1 finding." in fixed.stdout
    with open(os.path.join(root, b"runner_\xff.py"), "rb") as fh:
        assert fh.read() == FIXED.encode()


def test_json_and_sarif_show_names_that_are_not_utf8_with_escapes(tmp_path):
    import json

    root = os.fsencode(tmp_path)
    with open(os.path.join(root, b"runner_\xff.py"), "wb") as fh:
        fh.write(BUGGY.encode())
    (tmp_path / "plain.py").write_text(BUGGY)
    env = {"PYTHONIOENCODING": "utf-8:strict", "LC_ALL": "C.UTF-8"}
    as_json = cgguard("check", "--format", "json", ".", cwd=tmp_path, env=env)
    assert_no_traceback(as_json)
    assert as_json.returncode == 1, as_json.stderr
    assert "\\ud" not in as_json.stdout  # no lone surrogate, escaped or not
    assert sorted(f["path"] for f in json.loads(as_json.stdout)) == ["plain.py", "runner_\\xff.py"]
    sarif = cgguard("check", "--format", "sarif", ".", cwd=tmp_path, env=env)
    assert_no_traceback(sarif)
    assert sarif.returncode == 1, sarif.stderr
    results = json.loads(sarif.stdout)["runs"][0]["results"]
    uris = {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in results}
    assert uris == {"plain.py", "runner_%FF.py"}  # the name's own bytes, percent-encoded


def test_a_newline_in_a_file_name_keeps_one_line_per_finding_and_a_diff_git_applies(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "two\nlines.py").write_text(BUGGY)
    (repo / "tab\there.py").write_text(BUGGY)
    check = cgguard("check", ".", cwd=repo)
    assert check.returncode == 1, check.stderr
    lines = check.stdout.splitlines()
    assert len(lines) == 3 and lines[2].startswith("Found 2 findings")
    assert [line.split(": CGG001 ")[0] for line in lines[:2]] == [
        "tab\\there.py:4:22", "two\\nlines.py:4:22",
    ]
    (repo / "broken.py").write_bytes(b"\x00")
    (repo / "bin\nary.py").write_bytes(b"\x00")
    errors = cgguard("check", ".", cwd=repo).stderr.splitlines()
    assert errors == ["bin\\nary.py: error: binary file (contains NUL bytes)",
                      "broken.py: error: binary file (contains NUL bytes)"]
    os.remove(repo / "broken.py")
    os.remove(repo / "bin\nary.py")
    diff = cgguard("fix", "--diff", ".", cwd=repo)
    assert diff.returncode == 1, diff.stderr
    assert '--- "a/two\\nlines.py"\n+++ "b/two\\nlines.py"\n' in diff.stdout
    assert '--- "a/tab\\there.py"\n' in diff.stdout
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    (tmp_path / "fix.patch").write_text(diff.stdout.rsplit("Would fix", 1)[0])
    subprocess.run(["git", "apply", str(tmp_path / "fix.patch")], cwd=repo, check=True)
    assert (repo / "two\nlines.py").read_text() == FIXED
    assert (repo / "tab\there.py").read_text() == FIXED


def test_read_only_file_is_reported_not_rewritten(tmp_path):
    (tmp_path / "frozen.py").write_text(BUGGY)
    (tmp_path / "open.py").write_text(BUGGY)
    os.chmod(tmp_path / "frozen.py", 0o444)
    result = cgguard("fix", ".", cwd=tmp_path, unprivileged=True)
    assert_no_traceback(result)
    assert result.returncode == 2, result.stdout + result.stderr
    _assert_errors(result.stderr, tmp_path, {"frozen.py": "could not write the fixed file: the file is read-only"})
    assert (tmp_path / "frozen.py").read_text() == BUGGY
    assert (tmp_path / "open.py").read_text() == FIXED


def test_a_file_only_this_user_may_not_write_is_said_so(tmp_path):
    # r--rw-r--: the owner (this user) may not write it, its group may: not "read-only".
    (tmp_path / "theirs.py").write_text(BUGGY)
    os.chmod(tmp_path / "theirs.py", 0o464)
    result = cgguard("fix", ".", cwd=tmp_path, unprivileged=True)
    assert result.returncode == 2, result.stdout + result.stderr
    _assert_errors(result.stderr, tmp_path,
                   {"theirs.py": "could not write the fixed file: the file is not writable by this user"})
    assert (tmp_path / "theirs.py").read_text() == BUGGY


def test_internal_error_outside_any_file_is_one_line(tmp_path, monkeypatch):
    """Injected, as above: discovery itself fails (a bug), so no file can be named."""
    from click.testing import CliRunner

    import cgguard.static.driver.run as run_module
    from cgguard.cli import main

    def broken(*args, **kwargs):
        raise OSError("injected discovery failure")

    monkeypatch.setattr(run_module, "iter_python_files", broken)
    runner = CliRunner(mix_stderr=False) if "mix_stderr" in CliRunner.__init__.__code__.co_varnames else CliRunner()
    result = runner.invoke(main, ["fix", str(tmp_path)])
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [
        "cgguard: internal error: OSError: injected discovery failure (run with --verbose for the traceback)"]
    assert "Traceback" not in result.stdout + result.stderr
    verbose = runner.invoke(main, ["fix", "-v", str(tmp_path)])
    assert verbose.exit_code != 0
    assert isinstance(verbose.exception, OSError)  # re-raised for the traceback


def test_unreadable_folder_is_reported_not_skipped(tmp_path):
    root = tmp_path / "tree"
    (root / "locked").mkdir(parents=True)
    (root / "open").mkdir()
    (root / "locked" / "a.py").write_text(BUGGY)
    (root / "open" / "b.py").write_text(BUGGY)
    os.chmod(root / "locked", 0)
    try:
        result = cgguard("fix", ".", cwd=root, unprivileged=True)
    finally:
        os.chmod(root / "locked", 0o755)
    assert_no_traceback(result)
    assert (root / "open" / "b.py").read_text() == FIXED
    assert result.returncode == 2, result.stdout + result.stderr
    _assert_errors(result.stderr, root, {"locked": "permission denied"})


def test_doctor_prints_odd_file_names_as_check_does(tmp_path):
    root = os.fsencode(tmp_path)
    with open(os.path.join(root, b"runner_\xff.py"), "wb") as fh:
        fh.write(BUGGY.encode())
    (tmp_path / "two\nlines.py").write_text(BUGGY)
    with open(os.path.join(root, b"blob_\xfe.py"), "wb") as fh:
        fh.write(b"\x00")
    env = {"PYTHONIOENCODING": "utf-8:strict", "LC_ALL": "C.UTF-8"}
    check = cgguard("check", ".", cwd=tmp_path, env=env)
    doctor = cgguard("doctor", "--path", ".", cwd=tmp_path, env=env)
    assert_no_traceback(doctor)
    assert doctor.stderr == check.stderr == "blob_\\xfe.py: error: binary file (contains NUL bytes)\n"
    listed = [line[2:] for line in doctor.stdout.splitlines() if line.startswith("  ")]
    assert listed == check.stdout.splitlines()[:-1]
    assert [line.split(":")[0] for line in listed] == ["runner_\\xff.py", "two\\nlines.py"]
    as_json = cgguard("doctor", "--path", ".", "--format", "json", cwd=tmp_path, env=env)
    import json

    paths = [f["path"] for f in json.loads(as_json.stdout)["findings"]]
    assert paths == ["runner_\\xff.py", "two\nlines.py"]  # JSON escapes the newline itself
