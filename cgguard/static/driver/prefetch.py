"""A project's modules that name a sink word, read on the idle core while a tree run starts.

A file of a project that names a source but no sink word is decided from the project's
modules that name one (:meth:`.context.RunContext.may_reach_a_sink`): finding them reads
every file of the project. Read when the first such file is decided, they were read by
the forked child early in the run (vLLM's second-biggest file is such a file), before
either process had screened much: 0.08 s of the child's work on vLLM's tree, for files
the parent reads too. Yet while the run starts (discovery walks the tree: about as long),
the second core is idle. So a run over a folder in a project reads them there, in a helper
process forked before discovery, and takes its answer (a list of paths per project and
configuration) before the screen starts: the screen's processes both inherit it, and no
project file is read for it again.

The helper is started only where the run could share its work (:func:`.parallel.may_share`:
two usable CPUs, one idle) and a folder named lies in a project whose flows cross modules.
Its answer is an optimisation: the run waits for it past discovery only a while (see
:data:`WAIT_SHARE`); without it (the helper slow or failed), the run reads the modules
itself where it needs them, as before. A file named alone (pre-commit's runs) starts no helper: its project's modules
are read only where that file needs them.
"""

from __future__ import annotations

import os
import pickle
import select
import signal
import time
from collections.abc import Callable, Iterable

from cgguard.static.core.modulefiles import naming_a_sink, project_files, read_bytes
from cgguard.static.driver import parallel

# How long the run waits past discovery for the helper's answer: this share of the time
# since the helper started, and at least MIN_WAIT seconds. The helper walks the tree as
# discovery does and reads it too (vLLM's 2,642 files: discovery 0.07 s, the helper 0.09 s;
# the run waited 0.02 s); a project far bigger than the folders discovered is not waited for,
# and the run reads its modules itself where it needs them.
WAIT_SHARE = 0.5
MIN_WAIT = 0.02

# A job: (project root, configuration name, does a file's bytes name a sink word of it).
Job = tuple[str, str, Callable[[bytes], bool]]
Answer = dict[tuple[str, str], list[str]]


class SinkModules:
    """The helper reading, for each job, the project's modules that name a sink word."""

    def __init__(self, pid: int, answer_fd: int):
        self.pid, self.fd = pid, answer_fd
        self.started = time.monotonic()

    @classmethod
    def start(cls, jobs: list[Job]) -> SinkModules | None:
        """A helper reading ``jobs``, or None where it would not pay (no job, no second
        core free, ``CGGUARD_JOBS=1``, no fork)."""
        if not jobs or not parallel.may_share():
            return None
        read_fd, write_fd = os.pipe()
        pid = os.fork()
        if pid == 0:  # the helper: read, answer, leave without the parent's cleanup handlers
            code = 1
            try:
                os.close(read_fd)
                answer: Answer = {
                    (root, name): naming_a_sink(project_files(root), names, {}, read_bytes)
                    for root, name, names in jobs
                }
                with os.fdopen(write_fd, "wb") as out:
                    pickle.dump(answer, out, protocol=pickle.HIGHEST_PROTOCOL)
                code = 0
            finally:
                os._exit(code)
        os.close(write_fd)
        return cls(pid, read_fd)

    def answer(self) -> Answer:
        """The helper's answer, waiting for it no longer than :data:`WAIT_SHARE` of the
        time since it started ({} without one: late, or the helper failed). The helper is
        ended."""
        found: object = {}
        wait = max(MIN_WAIT, WAIT_SHARE * (time.monotonic() - self.started))
        try:
            ready, _, _ = select.select([self.fd], [], [], wait)
            if ready:
                with os.fdopen(self.fd, "rb", closefd=False) as inp:
                    payload = inp.read()
                found = pickle.loads(payload) if payload else {}
        except Exception:  # noqa: BLE001 - no answer: the run reads the modules itself
            found = {}
        self.end()
        return found if isinstance(found, dict) else {}

    def end(self) -> None:
        """Close the answer's pipe and end the helper, done or not (reaped where this
        process forked it)."""
        if self.fd != -1:
            os.close(self.fd)
            self.fd = -1
        try:
            os.kill(self.pid, signal.SIGKILL)  # done already, or no longer wanted
        except OSError:
            pass
        try:
            os.waitpid(self.pid, 0)
        except ChildProcessError:
            pass


def folders_named(paths: Iterable[str]) -> list[str]:
    """The folders among ``paths`` (absolute), in order, once each."""
    return list(dict.fromkeys(os.path.abspath(p) for p in paths if os.path.isdir(p)))
