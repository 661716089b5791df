"""`cgguard fix` changes the buggy line and not one other byte: line endings (LF,
CRLF, mixed, lone CR), tabs, PEP 263 coding cookies, the UTF-8 BOM and the file
mode all survive, and a second run changes nothing (the file is not even rewritten).
"""

from __future__ import annotations

import os
import stat

import pytest

from tests.robustness.conftest import BUGGY, BUGGY_LINE, FIXED_LINES, assert_no_traceback, cgguard


def _tabs(text: str) -> str:
    return text.replace("            ", "\t\t\t").replace("        ", "\t\t").replace("    ", "\t")


def _mixed(text: str) -> str:
    # Odd lines CRLF, even lines LF; the buggy line (4th) keeps LF, its neighbours CRLF.
    lines = text.splitlines(keepends=True)
    return "".join(l.replace("\n", "\r\n") if i % 2 == 0 else l for i, l in enumerate(lines))


LONG_NAME_LINE = "        the_minimum_profiling_blocks = self.compilation_config.max_cudagraph_capture_size or 1\n"
LONG_NAME_FIXED = (
    "        the_minimum_profiling_blocks = (\n"
    "            min(self.max_num_reqs, self.compilation_config.max_cudagraph_capture_size)\n"
    "            or 1\n"
    "        )\n"
)
# Short enough for the one-line fix: `min(...)` is inserted around the capture size.
SHORT_LINE = "        cc = self.compilation_config\n        min_blocks = cc.max_cudagraph_capture_size or 1\n"
SHORT_FIXED = "        cc = self.compilation_config\n        min_blocks = min(self.max_num_reqs, cc.max_cudagraph_capture_size) or 1\n"


def _case(before_line: str, after_line: str, transform=lambda t: t, head: str = "", body_edit=None):
    """(original text, expected text): the same transform applied to both sides."""
    text = BUGGY.replace(BUGGY_LINE, before_line)
    if body_edit:
        text = body_edit(text)
    expected = text.replace(before_line, after_line)
    return transform(head + text), transform(head + expected)


def _long_name_used(t: str) -> str:
    # The renamed block-count local is what the override receives (a local that goes
    # nowhere is no finding).
    return t.replace("override = min_blocks", "override = the_minimum_profiling_blocks")


def _crlf(t: str) -> str:
    return t.replace("\n", "\r\n")


def _cr(t: str) -> str:
    return t.replace("\n", "\r")


CASES = {
    "lf": _case(BUGGY_LINE, FIXED_LINES),
    "crlf": _case(BUGGY_LINE, FIXED_LINES, _crlf),
    "lone-cr": _case(BUGGY_LINE, FIXED_LINES, _cr),
    "tabs": _case(BUGGY_LINE, FIXED_LINES, _tabs),
    "tabs-crlf": _case(BUGGY_LINE, FIXED_LINES, lambda t: _crlf(_tabs(t))),
    "long-line-crlf": _case(LONG_NAME_LINE, LONG_NAME_FIXED, _crlf, body_edit=_long_name_used),
    "long-line-tabs": _case(LONG_NAME_LINE, LONG_NAME_FIXED, _tabs, body_edit=_long_name_used),
    "one-line-fix-crlf": _case(SHORT_LINE, SHORT_FIXED, _crlf),
    "one-line-fix-tabs-lone-cr": _case(SHORT_LINE, SHORT_FIXED, lambda t: _cr(_tabs(t))),
    "non-ascii-comment-on-the-line": _case(
        BUGGY_LINE.replace("\n", "  # größe: café\n"),
        FIXED_LINES[:-1] + "  # größe: café\n",
        head="# Ünïcödé docstring: ✓ 日本語\n",
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_utf8_variants(tmp_path, name):
    before, after = CASES[name]
    _fix_and_compare(tmp_path, before.encode("utf-8"), after.encode("utf-8"))


def test_mixed_line_endings_keep_each_lines_own_ending(tmp_path):
    before = _mixed(BUGGY)
    assert "\r\n" in before and "\n" in before.replace("\r\n", "")
    # The buggy line ends in LF, so its replacement does too; its CRLF neighbours stay CRLF.
    expected = before.replace(BUGGY_LINE, FIXED_LINES)
    assert expected != before
    _fix_and_compare(tmp_path, before.encode(), expected.encode())


def test_mixed_line_endings_crlf_on_the_buggy_line(tmp_path):
    lines = BUGGY.splitlines(keepends=True)
    before = "".join(l.replace("\n", "\r\n") if l == BUGGY_LINE else l for l in lines)
    expected = before.replace(BUGGY_LINE.replace("\n", "\r\n"), _crlf(FIXED_LINES))
    assert expected != before
    _fix_and_compare(tmp_path, before.encode(), expected.encode())


def test_latin1_coding_cookie_keeps_non_ascii_bytes(tmp_path):
    head = "# -*- coding: latin-1 -*-\n# Caf\u00e9 \u00e9t\u00e9 \u00bd\n"
    before = head + BUGGY.replace("kv_cache_spec = self", "sp\u00e9c = 1; kv_cache_spec = self")
    expected = before.replace(BUGGY_LINE, FIXED_LINES)
    raw = before.encode("latin-1")
    assert b"\xe9" in raw  # really latin-1 bytes, invalid as UTF-8
    with pytest.raises(UnicodeDecodeError):
        raw.decode("utf-8")
    _fix_and_compare(tmp_path, raw, expected.encode("latin-1"))


def test_cp1252_cookie_on_second_line_with_crlf(tmp_path):
    head = "#!/usr/bin/env python\r\n# vim: set fileencoding=cp1252 :\r\n# \u201csmart quotes\u201d \u20ac\r\n"
    before = head + _crlf(BUGGY)
    expected = head + _crlf(BUGGY.replace(BUGGY_LINE, FIXED_LINES))
    _fix_and_compare(tmp_path, before.encode("cp1252"), expected.encode("cp1252"))


def test_utf8_bom_is_kept(tmp_path):
    bom = b"\xef\xbb\xbf"
    _fix_and_compare(tmp_path, bom + BUGGY.encode(), bom + BUGGY.replace(BUGGY_LINE, FIXED_LINES).encode())


def test_bom_with_cookie_and_crlf(tmp_path):
    bom = b"\xef\xbb\xbf"
    head = "# -*- coding: utf-8 -*-\n"
    _fix_and_compare(
        tmp_path,
        bom + _crlf(head + BUGGY).encode(),
        bom + _crlf(head + BUGGY.replace(BUGGY_LINE, FIXED_LINES)).encode(),
    )


def test_no_final_newline(tmp_path):
    before = BUGGY + "        return saved_override"
    _fix_and_compare(tmp_path, before.encode(), before.replace(BUGGY_LINE, FIXED_LINES).encode())


def test_form_feed_and_trailing_whitespace_survive(tmp_path):
    before = "\x0c\n" + BUGGY.replace("kv_cache_spec = self.get_kv_cache_spec()\n",
                                      "kv_cache_spec = self.get_kv_cache_spec()   \t\n")
    _fix_and_compare(tmp_path, before.encode(), before.replace(BUGGY_LINE, FIXED_LINES).encode())


@pytest.mark.parametrize("mode", [0o755, 0o600, 0o640, 0o604])
def test_file_mode_is_kept(tmp_path, mode):
    target = _fix_and_compare(tmp_path, BUGGY.encode(), BUGGY.replace(BUGGY_LINE, FIXED_LINES).encode(),
                              mode=mode)
    assert stat.S_IMODE(target.stat().st_mode) == mode


def test_fix_through_a_symlink_rewrites_the_target_and_keeps_the_link(tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    (real / "runner.py").write_bytes(BUGGY.encode())
    link_dir = tmp_path / "tree"
    link_dir.mkdir()
    (link_dir / "runner.py").symlink_to(real / "runner.py")
    result = cgguard("fix", str(link_dir / "runner.py"))
    assert result.returncode == 0, result.stderr
    assert (link_dir / "runner.py").is_symlink()
    assert (real / "runner.py").read_bytes() == BUGGY.replace(BUGGY_LINE, FIXED_LINES).encode()
    assert sorted(p.name for p in real.iterdir()) == ["runner.py"]


def _fix_and_compare(tmp_path, before: bytes, expected: bytes, *, mode: int = 0o644):
    assert before != expected
    target = tmp_path / "pkg" / "runner.py"
    target.parent.mkdir()
    target.write_bytes(before)
    os.chmod(target, mode)

    result = cgguard("fix", str(target.parent))
    assert_no_traceback(result)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Fixed 1 finding." in result.stdout
    assert target.read_bytes() == expected
    assert stat.S_IMODE(target.stat().st_mode) == mode
    assert sorted(p.name for p in target.parent.iterdir()) == ["runner.py"]  # no temp file left

    # A second run finds nothing and does not touch the file at all.
    st = target.stat()
    again = cgguard("fix", str(target.parent))
    assert again.returncode == 0, again.stdout + again.stderr
    assert "Fixed 0 findings." in again.stdout
    assert target.read_bytes() == expected
    st2 = target.stat()
    assert (st2.st_ino, st2.st_mtime_ns) == (st.st_ino, st.st_mtime_ns)
    return target


def test_hard_link_gets_a_new_file_and_the_other_name_keeps_the_old(tmp_path):
    # Documented in docs/robustness.md: the atomic rename replaces the path, as an
    # editor's safe-save does; the other hard link still names the old bytes.
    (tmp_path / "tree").mkdir()
    target = tmp_path / "tree" / "runner.py"
    target.write_bytes(BUGGY.encode())
    os.link(target, tmp_path / "elsewhere.py")
    result = cgguard("fix", str(tmp_path / "tree"))
    assert result.returncode == 0, result.stderr
    assert target.read_bytes() == BUGGY.replace(BUGGY_LINE, FIXED_LINES).encode()
    assert (tmp_path / "elsewhere.py").read_bytes() == BUGGY.encode()
