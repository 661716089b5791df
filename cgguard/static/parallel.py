"""Check many files on two cores: split the list with one forked child.

A whole vLLM tree costs ~0.3 s of reading and checking in one process; a forked
child takes half of it for a few milliseconds of fork and a small pickle back.
Below ``MIN_FILES`` (a pre-commit run on a handful of files) the fork is not worth
it, and without ``os.fork`` (Windows) or with one CPU everything runs in-process.
``CGGUARD_JOBS=1`` turns it off. A child that fails in any way is not trusted:
its half is redone in the parent, so the result never depends on the child.
"""

from __future__ import annotations

import os
from typing import Callable, TypeVar

T = TypeVar("T")
R = TypeVar("R")

MIN_FILES = 256


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
    # Interleave so both halves get a share of the few files that need parsing.
    theirs_items, mine_items = items[1::2], items[0::2]
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: do its half, send it back, leave without cleanup handlers
        code = 1
        try:
            os.close(read_fd)
            payload = pickle.dumps([work(x) for x in theirs_items], protocol=pickle.HIGHEST_PROTOCOL)
            with os.fdopen(write_fd, "wb") as out:
                out.write(payload)
            code = 0
        finally:
            os._exit(code)
    os.close(write_fd)
    mine = [work(x) for x in mine_items]
    with os.fdopen(read_fd, "rb") as inp:
        payload = inp.read()
    _, status = os.waitpid(pid, 0)
    theirs = None
    if status == 0 and payload:
        try:
            theirs = pickle.loads(payload)
        except Exception:  # noqa: BLE001 - a broken child's half is simply redone
            theirs = None
    if theirs is None or len(theirs) != len(theirs_items):
        theirs = [work(x) for x in theirs_items]
    merged: list[R] = []
    for i, result in enumerate(mine):
        merged.append(result)
        if i < len(theirs):
            merged.append(theirs[i])
    return merged
