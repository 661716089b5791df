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

    def claim() -> dict[int, R]:
        done: dict[int, R] = {}
        while True:
            record = os.read(tokens_r, _RECORD)
            if len(record) < _RECORD:
                return done
            first = int.from_bytes(record, "little") * batch
            for i in range(first, min(n, first + batch)):
                done[i] = work(items[i])

    results_r, results_w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: claim batches, send them back, leave without cleanup handlers
        code = 1
        try:
            os.close(results_r)
            payload = pickle.dumps(claim(), protocol=pickle.HIGHEST_PROTOCOL)
            with os.fdopen(results_w, "wb") as out:
                out.write(payload)
            code = 0
        finally:
            os._exit(code)
    os.close(results_w)
    done = claim()
    os.close(tokens_r)
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
