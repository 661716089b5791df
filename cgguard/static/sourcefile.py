"""Reading and writing Python source files without losing a byte.

Decoding follows PEP 263 (coding cookie, UTF-8 BOM); writing re-encodes with the
same encoding and BOM, keeps the file mode, and replaces the file atomically
(temporary file in the same folder, then rename), so a killed run leaves the old
file or the new one, never half of either.
"""

from __future__ import annotations

import io
import os
import stat
import tempfile
import tokenize
from dataclasses import dataclass

BOM = b"\xef\xbb\xbf"


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
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as exc:
        raise SourceError(f"bad encoding declaration: {exc.msg if hasattr(exc, 'msg') else exc}") from None
    if encoding == "utf-8-sig":
        encoding = "utf-8"
    body = data[len(BOM):] if bom else data
    try:
        text = body.decode(encoding)
    except UnicodeDecodeError as exc:
        raise SourceError(
            f"cannot decode as {encoding}: invalid byte at offset {exc.start + (3 if bom else 0)}"
        ) from None
    except LookupError:
        raise SourceError(f"unknown encoding {encoding!r}") from None
    return Source(text, encoding, bom)


def encode(source: Source, text: str) -> bytes:
    data = text.encode(source.encoding)
    return BOM + data if source.bom else data


def read_bytes(path: str) -> bytes:
    try:
        with open(path, "rb") as fh:
            return fh.read()
    except IsADirectoryError:
        raise SourceError("is a directory") from None
    except FileNotFoundError:
        raise SourceError("no such file") from None
    except PermissionError:
        raise SourceError("permission denied") from None
    except OSError as exc:
        raise SourceError(exc.strerror or str(exc)) from None


def write_atomic(path: str, data: bytes) -> None:
    """Replace ``path`` with ``data``: same folder temp file, fsync, rename; keeps the mode."""
    real = os.path.realpath(path)  # write through a symlink, keep the link
    folder = os.path.dirname(real) or "."
    mode = stat.S_IMODE(os.stat(real).st_mode)
    fd, tmp = tempfile.mkstemp(prefix=".cgguard-", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, real)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
