"""The fix safety net: a fix whose result would not parse, that never settles, or
whose file changed meanwhile is not written, and the run says so; files are written
only when their bytes change, atomically, keeping what was there.

The rules themselves never produce a broken fix (other tests check that), so the
broken fixes here are handed in through the real finding-filter hook of
``fix_file`` / ``fix_paths``: every other step is the production code.
"""

from __future__ import annotations

import dataclasses
import os
import stat

import pytest

from cgguard.static.driver import fixer
from cgguard.static.driver.run import fix_file, fix_paths, fix_source_text
from cgguard.static.source import sourcefile
from cgguard.static.source.findings import SAFE, Finding, Fix, TextEdit
from tests.robustness.conftest import BUGGY, CLEAN, FIXED


def _with_edits(findings: list[Finding], edits) -> list[Finding]:
    return [dataclasses.replace(f, fix=Fix(SAFE, "test", tuple(edits))) for f in findings]


def _breaking_filter(path, text, findings):
    # Replace each fix with one that deletes the colon of the first `def` line.
    i = text.index(") -> None:") + len(") -> None")
    return _with_edits(findings, [TextEdit(i, i + 1, "")])


def test_a_fix_that_would_not_parse_is_not_written(tmp_path):
    target = tmp_path / "runner.py"
    target.write_text(BUGGY)
    st = target.stat()
    result = fix_file(str(target), _breaking_filter)
    assert result.error is not None
    assert result.error.reason.startswith("fix not applied: the fixed source would not parse (line 2")
    assert not result.changed and result.fixed_count == 0 and result.diff == ""
    assert [f.code for f in result.findings] == ["CGG001"]  # still reported
    assert target.read_text() == BUGGY
    assert (target.stat().st_ino, target.stat().st_mtime_ns) == (st.st_ino, st.st_mtime_ns)


def test_a_broken_fix_that_drops_every_capture_size_is_parsed_too(tmp_path):
    # The check parses a fixed text that still names a capture size; one that names none
    # is never read by the check, so the safety net parses it itself.
    def replace_all(path, text, findings):
        return _with_edits(findings, [TextEdit(0, len(text), "def broken(:\n")])

    target = tmp_path / "runner.py"
    target.write_text(BUGGY)
    result = fix_file(str(target), replace_all)
    assert result.error is not None
    assert result.error.reason.startswith("fix not applied: the fixed source would not parse (line 1")
    assert target.read_text() == BUGGY


def test_the_run_reports_it_and_fixes_the_other_files(tmp_path):
    (tmp_path / "a.py").write_text(BUGGY)
    (tmp_path / "b.py").write_text(BUGGY.replace("GPUModelRunner", "Other"))

    def only_b_breaks(path, text, findings):
        return _breaking_filter(path, text, findings) if path.endswith("b.py") else findings

    run = fix_paths([str(tmp_path)], only_b_breaks)
    assert run.exit_code() == 2
    assert [e.path for e in run.errors] == [str(tmp_path / "b.py")]
    assert (tmp_path / "a.py").read_text() == FIXED
    assert (tmp_path / "b.py").read_text() == BUGGY.replace("GPUModelRunner", "Other")
    assert run.fixed == 1


def test_fixes_that_never_settle_are_not_written(tmp_path):
    # Each round "fixes" by inserting one more comment: the loop must stop, bounded,
    # and write nothing rather than a half-way state.
    def forever(path, text, findings):
        return _with_edits(findings, [TextEdit(0, 0, "# again\n")])

    target = tmp_path / "runner.py"
    target.write_text(BUGGY)
    result = fix_file(str(target), forever)
    assert result.error is not None
    assert result.error.reason == f"fix not applied: still changing after {fixer.MAX_ROUNDS} rounds"
    assert target.read_text() == BUGGY


def test_fixes_that_undo_each_other_are_not_written(tmp_path):
    def flip(path, text, findings):
        if text.startswith("# A\n"):
            return _with_edits(findings, [TextEdit(0, 4, "")])
        return _with_edits(findings, [TextEdit(0, 0, "# A\n")])

    target = tmp_path / "runner.py"
    target.write_text(BUGGY)
    result = fix_file(str(target), flip)
    assert result.error.reason == "fix not applied: the fixes undo each other"
    assert target.read_text() == BUGGY


def test_an_edit_outside_the_text_is_refused():
    def out_of_range(path, text, findings):
        return _with_edits(findings, [TextEdit(len(text) + 5, len(text) + 9, "x")])

    result = fix_source_text(BUGGY, "runner.py", out_of_range)
    assert result.error.reason.startswith("fix not applied: edit ")
    assert result.new_text == BUGGY and not result.changed


def test_the_fix_loop_rechecks_until_nothing_changes():
    # Two fixes on the same span: the second waits for the next round (re-parsed,
    # re-checked), and then there is nothing left to do.
    calls = []

    def check(text):
        calls.append(text)
        findings = []
        if "min(" not in text:
            start = text.index("self.compilation_config.max_cudagraph_capture_size")
            end = start + len("self.compilation_config.max_cudagraph_capture_size")
            fix_a = Fix(SAFE, "a", (TextEdit(start, start, "min(self.max_num_reqs, "), TextEdit(end, end, ")")))
            for code in ("CGG001", "CGG001"):
                findings.append(Finding("p", 1, start + 1, 1, end + 1, code, "m", fix_a))
        return findings

    outcome = fixer.fix_text(BUGGY, check)
    assert outcome.error is None
    assert "min(self.max_num_reqs, self.compilation_config.max_cudagraph_capture_size) or 1" in outcome.text
    assert outcome.remaining == []
    assert len(calls) == 2  # the original, then the fixed text once


def test_a_file_edited_while_being_fixed_is_not_overwritten(tmp_path):
    target = tmp_path / "runner.py"
    target.write_text(BUGGY)
    edited = BUGGY + "# saved by the editor meanwhile\n"

    def editor_saves_meanwhile(path, text, findings):
        target.write_text(edited)  # between cgguard's read and its write
        return findings

    result = fix_file(str(target), editor_saves_meanwhile)
    assert result.error.reason == "changed on disk while being fixed; not written"
    assert not result.changed
    assert target.read_text() == edited


def test_clean_files_are_never_rewritten(tmp_path):
    for i, text in enumerate([CLEAN, FIXED, "", "x = 1\r\n", "\ufeffy = 2\n"]):
        (tmp_path / f"f{i}.py").write_text(text, newline="")
    before = {p.name: (p.stat().st_ino, p.stat().st_mtime_ns, p.read_bytes()) for p in tmp_path.iterdir()}
    run = fix_paths([str(tmp_path)])
    assert run.exit_code() == 0 and run.fixed == 0
    after = {p.name: (p.stat().st_ino, p.stat().st_mtime_ns, p.read_bytes()) for p in tmp_path.iterdir()}
    assert after == before


def test_diff_mode_writes_nothing(tmp_path):
    target = tmp_path / "runner.py"
    target.write_text(BUGGY)
    st = target.stat()
    run = fix_paths([str(tmp_path)], write=False)
    added = [l for l in run.files[0].diff.splitlines() if l.startswith("+") and not l.startswith("+++")]
    assert added == ["+" + l for l in FIXED.splitlines() if l not in BUGGY.splitlines()]
    assert target.read_text() == BUGGY
    assert target.stat().st_mtime_ns == st.st_mtime_ns
    assert os.listdir(tmp_path) == ["runner.py"]


# ---- sourcefile: decoding and the atomic write ------------------------------------


@pytest.mark.parametrize(
    "data",
    [
        b"x = 1\n",
        b"\xef\xbb\xbfx = 1\r\n",
        b"# -*- coding: latin-1 -*-\nx = '\xe9\xff'\n",
        b"#!/bin/sh\n# coding=cp1252\nx = '\x93\x94\x80'\r",
        b"# vim: set fileencoding=utf-8 :\nx = '\xc3\xa9'\n",
        b"",
    ],
)
def test_decode_encode_round_trips_every_byte(data):
    source = sourcefile.decode(data)
    assert sourcefile.encode(source, source.text) == data


@pytest.mark.parametrize(
    "data, reason",
    [
        (b"x = 1\0", "binary file (contains NUL bytes)"),
        (b"x = '\xff'\n", "not valid UTF-8: byte 0xff at line 1, column 6 (offset 5)"),
        (b"\xef\xbb\xbfa\nb = '\xc3'\n", "not valid UTF-8: byte 0xc3 at line 2, column 6 (offset 10)"),
        (b"# coding: klingon\n", "bad encoding declaration: unknown encoding: klingon"),
        (b"# coding: utf-16\nx = 1\n", "bad encoding declaration: utf-16 is not a possible source encoding"),
        (b"\xef\xbb\xbf# coding: latin-1\n", (
            "bad encoding declaration: the file starts with a UTF-8 BOM but its coding cookie"
            " names another encoding"
        )),
    ],
)
def test_decode_failures_are_one_line(data, reason):
    with pytest.raises(sourcefile.SourceError) as info:
        sourcefile.decode(data)
    assert str(info.value) == reason


def test_write_atomic_replaces_in_one_step_and_keeps_mode(tmp_path):
    target = tmp_path / "f.py"
    target.write_bytes(b"old\n")
    os.chmod(target, 0o751)
    sourcefile.write_atomic(str(target), b"new\n", expected=b"old\n")
    assert target.read_bytes() == b"new\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o751
    assert os.listdir(tmp_path) == ["f.py"]


def test_write_atomic_leaves_no_temp_file_when_it_fails(tmp_path):
    target = tmp_path / "f.py"
    target.write_bytes(b"old\n")
    with pytest.raises(sourcefile.SourceError, match="changed on disk"):
        sourcefile.write_atomic(str(target), b"new\n", expected=b"other\n")
    # A rename onto a directory fails after the temp file exists: it is removed.
    (tmp_path / "d.py").mkdir()
    with pytest.raises(sourcefile.SourceError, match="could not write the fixed file"):
        sourcefile.write_atomic(str(tmp_path / "d.py"), b"new\n")
    assert sorted(os.listdir(tmp_path)) == ["d.py", "f.py"]
    assert target.read_bytes() == b"old\n"
