"""A helper process that lists a project's modules naming a sink word, on the core the
run's own process leaves idle while it finds its files and imports its stages.

A project's sink callees (:mod:`cgguard.static.core.sinkreach`) start from the project's
modules whose text names a sink word, and finding those reads every file of the project:
vLLM's 2,642 files cost about 55 ms of CPU to walk, read and search. In a check shared with
a forked child (:mod:`.parallel`) the parent reads them while the child screens the same
files, so both cores are busy. Before that fork, though, one core idles: discovery, the
imports of the stages and the fork itself run in one process. A fix runs in one process
throughout.

So a run over a project's root folder forks this helper first
(:meth:`.RunContext.list_ahead`). It walks the project as
:meth:`.ProjectIndex.project_files` does, asks each file's bytes the very question
:meth:`.SinkReach.sink_modules` asks (:meth:`.Configuration.mentions_sink_word`), and sends
the paths back through a pipe. The process that started it takes them
(:meth:`Prescan.take`) where it would have read the files itself; where anything goes wrong
(the helper died, sent nothing readable, or a fix changed a file since: the run stops it),
it reads them itself. The helper changes where the reading is done, never an answer.
Started only where a second process is allowed and a CPU is idle (:func:`.parallel.may_fork`).

It does no more than list. Worked out whole in the helper (the callees' flows too, about
115 ms on vLLM), the callees came too late for a check, whose parent needs them about 50
ms after its fork, and saved a fix nothing: the modules the parent no longer parsed for
them, it parsed later for its own checks (a fork's fix took 1.21 s against 1.20 s
without it, one run each).
"""

from __future__ import annotations

import os
import pickle
import signal
from collections.abc import Sequence

from cgguard.static.core.modulefiles import project_python_files, read_bytes
from cgguard.static.driver import parallel
from cgguard.static.rules.configs import Configuration


class Prescan:
    """A helper listing the modules of the project at ``root`` that name a sink word of each
    configuration (by name); its answer is taken once, by the process that started it."""

    def __init__(self, root: str, pid: int, fd: int) -> None:
        self.root = root
        self._pid: int | None = pid
        self._fd = fd
        self._owner = os.getpid()
        self._lists: dict[str, list[str]] | None = None

    def take(self, root: str, configuration: str) -> list[str] | None:
        """The paths of the project's modules naming a sink word of ``configuration``, in
        the order of the project's files; None where the helper has none to give (another
        project, another process, a helper that failed), and the caller reads the files."""
        if root != self.root or os.getpid() != self._owner:
            return None
        if self._pid is not None:
            self._lists = self._collect()
        return None if self._lists is None else self._lists.get(configuration)

    def _collect(self) -> dict[str, list[str]] | None:
        chunks = []
        try:
            while chunk := os.read(self._fd, 1 << 16):
                chunks.append(chunk)
        except OSError:
            chunks = []
        finally:
            self._reap(kill=False)
        try:
            lists = pickle.loads(b"".join(chunks)) if chunks else None
        except Exception:  # noqa: BLE001 - a helper's broken answer: the files are read here
            return None
        return lists if isinstance(lists, dict) else None

    def close(self) -> None:
        """Stop the helper where its answer was never taken (the run needed none)."""
        if os.getpid() == self._owner:
            self._reap(kill=True)

    def _reap(self, *, kill: bool) -> None:
        pid, self._pid = self._pid, None
        if pid is None:
            return
        parallel.HELPERS.discard(pid)
        os.close(self._fd)
        if kill:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        try:
            os.waitpid(pid, 0)
        except ChildProcessError:
            pass


def start(root: str, configurations: Sequence[Configuration]) -> Prescan | None:
    """Fork the helper for the project at ``root`` and ``configurations`` (those that follow
    imports); None where no second process is allowed or no CPU is idle."""
    if not configurations or not parallel.may_fork():
        return None
    read_fd, write_fd = os.pipe()
    try:
        pid = os.fork()
    except OSError:
        os.close(read_fd)
        os.close(write_fd)
        return None
    if pid == 0:  # the helper: answer, then leave without the parent's cleanup handlers
        code = 1
        try:
            os.close(read_fd)
            files = project_python_files(root)
            lists: dict[str, list[str]] = {c.name: [] for c in configurations}
            for path in files:
                data = read_bytes(path)
                if data is None:
                    continue
                for configuration in configurations:
                    if configuration.mentions_sink_word(data):
                        lists[configuration.name].append(path)
            with os.fdopen(write_fd, "wb") as out:
                out.write(pickle.dumps(lists, protocol=pickle.HIGHEST_PROTOCOL))
            code = 0
        finally:
            os._exit(code)
    os.close(write_fd)
    parallel.HELPERS.add(pid)
    return Prescan(root, pid, read_fd)
