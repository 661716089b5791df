"""Check many files on two cores: share the list with one forked child.

A whole vLLM tree costs ~0.3 s of reading and checking in one process; a forked
child takes part of it for a few milliseconds of fork and a small pickle back.
The two claim batches of files from a shared pipe of batch numbers (a pipe read
of one 4-byte record is atomic), so the few expensive files (those that need
parsing) do not pile up on one side. Below ``MIN_FILES`` (a pre-commit run on a
handful of files) the fork is not worth it, and without ``os.fork`` (Windows) or
with one CPU everything runs in-process. ``CGGUARD_JOBS=1`` turns it off. A child
that fails in any way is not trusted: whatever it did not send back is redone in
the parent, so the result never depends on the child.
"""

from __future__ import annotations

import os
from typing import Callable, TypeVar

T = TypeVar("T")
R = TypeVar("R")

MIN_FILES = 256
_IN_CHILD = False


class ParentOnly(BaseException):
    """Raised by work the child leaves to the parent (a BaseException: no handler in
    between turns it into a file error). The parent redoes that item itself."""


def in_child() -> bool:
    """True in the forked helper. Work that would import libcst there leaves the item to
    the parent instead, so the import (about 0.1 s) is paid once per run, not twice."""
    return _IN_CHILD
BATCH = 8
_RECORD = 4  # bytes per batch number in the pipe
_PIPE_ROOM = 60_000  # stay under the pipe's 64 KiB so the pre-fill never blocks


def _worthwhile(n: int) -> bool:
    if n < MIN_FILES or not hasattr(os, "fork") or os.environ.get("CGGUARD_JOBS") == "1":
        return False
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    return cpus >= 2


def _warm_up_parser() -> None:
    """In a shared run, the parent imports libcst first, while the child starts on its share.

    The child leaves all libcst work to the parent (:class:`ParentOnly`); importing it
    up front (about 0.1 s) overlaps it with the child's work instead of adding it at
    whatever point the first file needs it. A big tree that ends up parsing nothing
    pays that import on one core (runs of a few files, below ``MIN_FILES``, import
    libcst only when something is parsed).
    """
    try:
        import libcst  # noqa: F401
    except ImportError:
        pass  # reported where it is needed


def map_files(work: Callable[[T], R], items: list[T]) -> list[R]:
    """``[work(x) for x in items]``, in that order, shared with a forked child when it pays."""
    if not _worthwhile(len(items)):
        return [work(x) for x in items]
    import pickle  # only here: a pre-commit run on a few files never pays for it

    n = len(items)
    batch = max(BATCH, -(-n * _RECORD // _PIPE_ROOM))
    batches = -(-n // batch)
    tokens_r, tokens_w = os.pipe()
    os.write(tokens_w, b"".join(b.to_bytes(_RECORD, "little") for b in range(batches)))
    os.close(tokens_w)  # once drained, reads return b"": the end of the work

    # Items the child leaves to the parent (ParentOnly) come back at once through
    # their own pipe, so the parent does them while the child still works.
    left_r, left_w = os.pipe()
    pending = bytearray()

    def take_left(block: bool) -> list[int]:
        os.set_blocking(left_r, block)
        while True:
            try:
                chunk = os.read(left_r, 4096)
            except BlockingIOError:
                break
            if not chunk:
                break
            pending.extend(chunk)
            if not block:
                break
        whole = len(pending) - len(pending) % _RECORD
        out = [int.from_bytes(pending[k : k + _RECORD], "little") for k in range(0, whole, _RECORD)]
        del pending[:whole]
        return out

    def claim(child: bool) -> dict[int, R]:
        done: dict[int, R] = {}
        while True:
            if not child:
                for i in take_left(block=False):
                    done[i] = work(items[i])
            record = os.read(tokens_r, _RECORD)
            if len(record) < _RECORD:
                return done
            first = int.from_bytes(record, "little") * batch
            for i in range(first, min(n, first + batch)):
                try:
                    done[i] = work(items[i])
                except ParentOnly:
                    os.write(left_w, i.to_bytes(_RECORD, "little"))  # the parent does it

    results_r, results_w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: claim batches, send them back, leave without cleanup handlers
        global _IN_CHILD
        _IN_CHILD = True
        code = 1
        try:
            os.close(results_r)
            os.close(left_r)
            payload = pickle.dumps(claim(child=True), protocol=pickle.HIGHEST_PROTOCOL)
            os.close(left_w)
            with os.fdopen(results_w, "wb") as out:
                out.write(payload)
            code = 0
        finally:
            os._exit(code)
    os.close(results_w)
    os.close(left_w)
    _warm_up_parser()
    done = claim(child=False)
    os.close(tokens_r)
    for i in take_left(block=True):  # until the child closes its end
        done[i] = work(items[i])
    os.close(left_r)
    with os.fdopen(results_r, "rb") as inp:
        payload = inp.read()
    _, status = os.waitpid(pid, 0)
    if status == 0 and payload:
        try:
            theirs = pickle.loads(payload)
        except Exception:  # noqa: BLE001 - a broken child's share is simply redone
            theirs = {}
        done.update(theirs)
    return [done[i] if i in done else work(items[i]) for i in range(n)]
