"""Check many files, on a second core only when the work found pays for it.

A run over a tree has two parts of very different cost. The byte screen (read a
file, look for a capture-size substring) settles almost every file in
microseconds; it runs here, in one process, over every file. Only then is the
real work known: the files it leaves (decode, cut, Python's parse, maybe libcst).
That work is shared with one forked child when all of these hold:

- ``os.fork`` exists and ``CGGUARD_JOBS`` is not ``1``;
- at least two files and :data:`MIN_SHARED_BYTES` of their text are left: below
  that the fork (a few milliseconds, and a share the child may hand back) costs
  about what it saves, so a pre-commit run, a plugin tree with nothing to parse or
  a tree holding one big file stays in one process;
- two CPUs are usable (affinity, cgroup quota) and one of them is idle now (the
  runnable tasks in ``/proc/loadavg``): a child that takes turns with another
  process's work on the only other core does not help the parent, it competes.

``CGGUARD_JOBS=2`` shares whenever two files are left (tests; measuring the split).

The two processes claim items from a shared pipe of item numbers, biggest first
(a pipe read of one 4-byte record is atomic), so the few expensive files do not
pile up on one side. The child leaves all libcst work to the parent
(:class:`ParentOnly`): libcst is imported once per run, where the first scope needs
parsing, never up front. A child that fails in any way is not trusted: whatever it
did not send back is redone in the parent, so the result never depends on it.
"""

from __future__ import annotations

import os
from typing import Callable, Generic, TypeVar

T = TypeVar("T")
R = TypeVar("R")
P = TypeVar("P")

# Text left after the byte screen (characters, summed over files) below which one
# process is faster. Python's parse and the screen of a cut function cost about
# 0.06 s per MB of such text on one quiet core, the fork and the results' way back
# about 5 ms: the child's half of 256 KiB is worth about two forks.
MIN_SHARED_BYTES = 256 * 1024
_IN_CHILD = False
_RECORD = 4  # bytes per item number in the pipe
_PIPE_ROOM = 60_000  # stay under the pipe's 64 KiB so the pre-fill never blocks


class Later(Generic[P]):
    """What the screen returns for an item it cannot settle: the payload the real work
    needs (the decoded text) and its weight (its size), which decides the sharing."""

    __slots__ = ("payload", "weight")

    def __init__(self, payload: P, weight: int):
        self.payload = payload
        self.weight = weight


class ParentOnly(BaseException):
    """Raised by work the child leaves to the parent (a BaseException: no handler in
    between turns it into a file error). The parent redoes that item itself."""


def in_child() -> bool:
    """True in the forked helper. Work that would import libcst there leaves the item to
    the parent instead, so the import (about 0.1 s) is paid once per run, not twice."""
    return _IN_CHILD


def map_files(
    screen: Callable[[T], "R | Later[P]"], work: Callable[[T, P], R], items: list[T]
) -> list[R]:
    """``screen(x)`` for every item, here; ``work(x, payload)`` for those it leaves
    (a :class:`Later`), shared with a forked child when that pays. Results keep the
    items' order."""
    done: dict[int, R] = {}
    left: list[tuple[int, P, int]] = []  # (index, payload, weight)
    for i, item in enumerate(items):
        out = screen(item)
        if isinstance(out, Later):
            left.append((i, out.payload, out.weight))
        else:
            done[i] = out
    if left and _share(left):
        done.update(_shared(work, items, left))
    else:
        for i, payload, _ in left:
            done[i] = work(items[i], payload)
    return [done[i] for i in range(len(items))]


def _share(left: list[tuple[int, object, int]]) -> bool:
    jobs = os.environ.get("CGGUARD_JOBS")
    if jobs == "1" or len(left) < 2 or not hasattr(os, "fork"):
        return False
    if jobs == "2":
        return True
    if sum(w for _, _, w in left) < MIN_SHARED_BYTES:
        return False
    cpus = usable_cpus()
    return cpus >= 2 and busy_cpus() <= cpus - 2


def usable_cpus() -> int:
    """CPUs this process may run on: its affinity, capped by a cgroup v2 CPU quota."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    try:
        with open("/sys/fs/cgroup/cpu.max", "rb") as fh:
            quota, period = fh.read().split()[:2]
        if quota != b"max":
            cpus = min(cpus, max(1, int(quota) // int(period)))
    except (OSError, ValueError):
        pass
    return cpus


def busy_cpus() -> int:
    """Tasks running or waiting to run right now, other than this one (0 where unknown).

    The fourth field of ``/proc/loadavg`` counts them this instant (the load
    averages lag a busy core by a minute); it counts the reading process too.
    """
    try:
        with open("/proc/loadavg", "rb") as fh:
            running = int(fh.read().split()[3].split(b"/")[0])
    except (OSError, ValueError, IndexError):
        return 0
    return max(0, running - 1)


def _shared(work: Callable[[T, P], R], items: list[T], left: list[tuple[int, P, int]]) -> dict[int, R]:
    """``work`` over ``left``, claimed item by item by this process and one forked child."""
    import pickle  # only here: a run that stays in one process never pays for it

    order = sorted(left, key=lambda x: -x[2])  # biggest first: the last claims are the small ones
    n = len(order)
    if n * _RECORD > _PIPE_ROOM:  # batches of consecutive items, so the pre-fill never blocks
        batch = -(-n * _RECORD // _PIPE_ROOM)
    else:
        batch = 1
    tokens_r, tokens_w = os.pipe()
    os.write(tokens_w, b"".join(b.to_bytes(_RECORD, "little") for b in range(-(-n // batch))))
    os.close(tokens_w)  # once drained, reads return b"": the end of the work

    # Items the child leaves to the parent (ParentOnly) come back at once through
    # their own pipe, so the parent does them while the child still works.
    left_r, left_w = os.pipe()
    pending = bytearray()

    def run(k: int) -> R:
        i, payload, _ = order[k]
        return work(items[i], payload)

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
                for k in take_left(block=False):
                    done[k] = run(k)
            record = os.read(tokens_r, _RECORD)
            if len(record) < _RECORD:
                return done
            first = int.from_bytes(record, "little") * batch
            for k in range(first, min(n, first + batch)):
                try:
                    done[k] = run(k)
                except ParentOnly:
                    os.write(left_w, k.to_bytes(_RECORD, "little"))  # the parent does it

    results_r, results_w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: claim items, send them back, leave without cleanup handlers
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
    done = claim(child=False)
    os.close(tokens_r)
    for k in take_left(block=True):  # until the child closes its end
        done[k] = run(k)
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
    return {order[k][0]: done[k] if k in done else run(k) for k in range(n)}
