"""Standard output and error for the ``cgguard`` command: a reader that goes away, a full disk.

A reader that stops reading (``cgguard check | head -1``) never changes a run's outcome:
what is left to print goes nowhere, nothing is said about it, and the exit code is the
run's own (0, 1 or 2), whether the reader left before the first line or after the last.
Any other failure to write (``cgguard check > /dev/full``) is an :class:`OutputError`,
which the command line reports in one line, with exit code 2.
"""

from __future__ import annotations

import io
import os
import sys


class OutputError(Exception):
    """Standard output (or error) cannot be written, for a reason other than its reader leaving."""

    def __init__(self, stream: str, error: OSError) -> None:
        super().__init__(f"cannot write to {stream}: {error.strerror or error}")


class _Descriptor(io.RawIOBase):
    """One of the process's output descriptors; once its reader is gone, a sink."""

    def __init__(self, fd: int, stream: str) -> None:
        super().__init__()
        self._fd = fd
        self._stream = stream
        self._gone = False

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self._fd

    def isatty(self) -> bool:
        return os.isatty(self._fd)

    def write(self, data) -> int:
        size = len(data)
        if self._gone:
            return size
        try:
            return os.write(self._fd, data)
        except BrokenPipeError:
            self._gone = True
            try:
                # The descriptor now leads nowhere, for whatever else writes to it.
                devnull = os.open(os.devnull, os.O_WRONLY)
                os.dup2(devnull, self._fd)
                os.close(devnull)
            except OSError:
                pass
            return size
        except OSError as exc:
            self._gone = True  # said once; what follows would fail the same way
            raise OutputError(self._stream, exc) from None


def _wrapped(stream, name: str):
    """``stream`` again, over a :class:`_Descriptor` (the same encoding, errors, buffering)."""
    if stream is None:
        return stream
    try:
        stream.flush()
        text = io.TextIOWrapper(
            io.BufferedWriter(_Descriptor(stream.fileno(), name)),
            encoding=stream.encoding,
            errors=stream.errors,
            line_buffering=stream.line_buffering,
        )
    except (AttributeError, OSError, ValueError):  # not a real stream: leave it as it is
        return stream
    return text


def install() -> None:
    """Route ``sys.stdout`` and ``sys.stderr`` through descriptors that survive their reader."""
    sys.stdout = _wrapped(sys.stdout, "standard output")
    sys.stderr = _wrapped(sys.stderr, "standard error")
