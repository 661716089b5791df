"""Reading and writing Python source files without losing a byte.

Decoding follows PEP 263 (coding cookie, UTF-8 BOM); writing re-encodes with the
same encoding and BOM, keeps the file mode (and owner, where allowed), and
replaces the file atomically (temporary file in the same folder, then rename), so
a killed run leaves the old file or the new one, never half of either.

Every failure is a :class:`SourceError` whose str() is one line naming the reason;
nothing here prints or lets an OSError escape.
"""

from __future__ import annotations

import errno
import io
import os
import stat
from dataclasses import dataclass

BOM = b"\xef\xbb\xbf"

# Temporary files of an atomic write: ".cgguard-XXXX.tmp" beside the target. The
# ".tmp" suffix keeps a leftover from a killed run out of file discovery.
TEMP_PREFIX = ".cgguard-"
TEMP_SUFFIX = ".tmp"


class SourceError(Exception):
    """A file that cannot be read as Python source; str() is the one-line reason."""


@dataclass(frozen=True)
class Source:
    text: str
    encoding: str
    bom: bool


def decode(data: bytes) -> Source:
    if b"\0" in data:
        raise SourceError("binary file (contains NUL bytes)")
    bom = data.startswith(BOM)
    try:
        import tokenize  # only files that need decoding get here

        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as exc:
        reason = str(getattr(exc, "msg", exc))
        if "invalid or missing encoding declaration" in reason:
            # No cookie and the first lines are not UTF-8: say where, as for any
            # other invalid UTF-8 byte.
            _decode_or_raise(data[len(BOM) :] if bom else data, "utf-8", 3 if bom else 0)
        if bom and reason.startswith("encoding problem"):
            reason = "the file starts with a UTF-8 BOM but its coding cookie names another encoding"
        raise SourceError(f"bad encoding declaration: {reason}") from None
    if encoding == "utf-8-sig":
        encoding = "utf-8"
    if not _ascii_compatible(encoding):
        # Python refuses these too: the cookie itself would not read as written.
        raise SourceError(f"bad encoding declaration: {encoding} is not a possible source encoding")
    body = data[len(BOM) :] if bom else data
    return Source(_decode_or_raise(body, encoding, 3 if bom else 0), encoding, bom)


def _ascii_compatible(encoding: str) -> bool:
    try:
        return "# coding=x\n".encode(encoding) == b"# coding=x\n"
    except (LookupError, UnicodeError):
        return True  # unknown codecs are reported when decoding, with their own reason


def _decode_or_raise(body: bytes, encoding: str, shift: int) -> str:
    try:
        return body.decode(encoding)
    except UnicodeDecodeError as exc:
        line = body.count(b"\n", 0, exc.start) + 1
        col = exc.start - (body.rfind(b"\n", 0, exc.start) + 1) + 1
        name = "UTF-8" if encoding.replace("_", "-").lower() in ("utf-8", "utf8") else encoding
        raise SourceError(
            f"not valid {name}: byte 0x{body[exc.start]:02x} at line {line}, column {col}"
            f" (offset {exc.start + shift})"
        ) from None
    except LookupError:
        raise SourceError(f"unknown encoding {encoding!r}") from None


def encode(source: Source, text: str) -> bytes:
    data = text.encode(source.encoding)
    return BOM + data if source.bom else data


def read_bytes(path: str) -> bytes:
    """The file's bytes. Only regular files are read: a FIFO or a device named
    ``*.py`` would block or never end, so it is refused before any read."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    except OSError as exc:
        raise SourceError(_os_reason(path, exc)) from None
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise SourceError("is a directory")
        if not stat.S_ISREG(st.st_mode):
            raise SourceError(f"not a regular file ({_kind(st.st_mode)})")
        chunks = []
        while True:
            want = max(st.st_size + 1, 1 << 16)
            chunk = os.read(fd, want)
            if not chunk:
                break
            chunks.append(chunk)
            if len(chunk) < want:
                break  # a short read of a regular file is its end: spare the extra call
        return b"".join(chunks)
    except OSError as exc:
        raise SourceError(_os_reason(path, exc)) from None
    finally:
        os.close(fd)


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a named pipe"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a plain file"


def _os_reason(path: str, exc: OSError) -> str:
    if exc.errno == errno.ENOENT:
        return "broken symbolic link" if os.path.islink(path) else "no such file"
    if exc.errno == errno.ELOOP:
        return "symbolic link loop"
    if exc.errno in (errno.EACCES, errno.EPERM):
        return "permission denied"
    if exc.errno == errno.EISDIR:
        return "is a directory"
    return exc.strerror or str(exc)


def _not_writable(st: os.stat_result) -> str:
    """Why this user may not write a file: read-only for everyone, or only for this user."""
    if not st.st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH):
        return "the file is read-only"
    return "the file is not writable by this user"


def write_atomic(path: str, data: bytes, *, expected: bytes | None = None) -> None:
    """Replace ``path`` with ``data``: same-folder temp file, fsync, rename.

    Keeps the mode (and owner and group where the process may set them). Writes
    through a symbolic link, keeping the link. With ``expected``, the file must
    still hold exactly those bytes (it was not edited while being fixed), or
    nothing is written. Raises :class:`SourceError` with a one-line reason.

    Ctrl-C never cuts it short: under :class:`.interrupts.Interrupts` (``cgguard fix``),
    one pressed before it stops the run before anything is written, one pressed during it
    when the file is whole.
    """
    from cgguard.static.source.interrupts import writing

    with writing(path):
        _write_atomic(path, data, expected)


def _write_atomic(path: str, data: bytes, expected: bytes | None) -> None:
    real = os.path.realpath(path)
    folder = os.path.dirname(real) or "."
    try:
        st = os.stat(real)
    except OSError as exc:
        raise SourceError(f"could not write the fixed file: {_os_reason(path, exc)}") from None
    if not os.access(real, os.W_OK):
        # A file this user may not write says "do not edit"; the rename below would not ask.
        raise SourceError(f"could not write the fixed file: {_not_writable(st)}")
    if expected is not None:
        try:
            now = read_bytes(real)
        except SourceError as exc:
            raise SourceError(f"could not write the fixed file: {exc}") from None
        if now != expected:
            raise SourceError("changed on disk while being fixed; not written")
    try:
        import tempfile  # only a run that writes needs it

        fd, tmp = tempfile.mkstemp(prefix=TEMP_PREFIX, suffix=TEMP_SUFFIX, dir=folder)
    except OSError as exc:
        raise SourceError(
            f"could not write the fixed file: {_os_reason(folder, exc)} (creating a temporary file in {folder})"
        ) from None
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        if hasattr(os, "chown"):
            try:
                os.chown(tmp, st.st_uid, st.st_gid)
            except OSError:
                pass  # not allowed (not root): the file becomes ours, as any editor's save would
        os.chmod(tmp, stat.S_IMODE(st.st_mode))
        os.replace(tmp, real)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(exc, OSError):
            raise SourceError(f"could not write the fixed file: {_os_reason(real, exc)}") from None
        raise
