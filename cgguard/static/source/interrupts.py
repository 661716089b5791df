"""Ctrl-C while files are being rewritten: at once between writes, never in the middle of one.

``cgguard fix`` spends most of its time working out fixes (parsing, the data flow, laying
out each fix), and a moment writing each file. Ctrl-C during the work stops the run there and
then: the file being worked on is not written, nor any after it. Ctrl-C during a write (the
temporary file, its rename) waits for the write's end, so every file is its old bytes or its
new ones and the count of rewritten files is exact; the run then stops before the next file.

:class:`Interrupts` is installed around a run (the SIGINT handler is the process's, so only
the main thread installs it); :func:`writing` marks a write. Without an installed guard,
:func:`writing` does nothing and Ctrl-C is Python's own KeyboardInterrupt.
"""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Iterator

_active: list[Interrupts] = []


class Interrupts:
    """The SIGINT handler of a run that rewrites files, and the files it rewrote."""

    def __init__(self) -> None:
        self.requested = False  # Ctrl-C was pressed
        self.written: list[str] = []  # the files rewritten, whole
        self._writing = 0
        self._previous: object = None

    def __enter__(self) -> Interrupts:
        self._previous = signal.signal(signal.SIGINT, self._handler)
        _active.append(self)
        return self

    def __exit__(self, *exc: object) -> None:
        _active.remove(self)
        signal.signal(signal.SIGINT, self._previous)  # type: ignore[arg-type]

    def _handler(self, signum, frame) -> None:
        self.requested = True
        if not self._writing:
            raise KeyboardInterrupt  # the work stops here; nothing of this file is written


@contextlib.contextmanager
def writing(path: str) -> Iterator[None]:
    """One file's write. Ctrl-C pressed before it stops the run before anything is written;
    pressed during it, when the write is done (and counted)."""
    if not _active:
        yield
        return
    guard = _active[-1]
    if guard.requested:
        raise KeyboardInterrupt
    guard._writing += 1
    try:
        yield
        guard.written.append(path)
    finally:
        guard._writing -= 1
        if guard.requested:  # pressed during the write: the run stops now it is done
            raise KeyboardInterrupt
