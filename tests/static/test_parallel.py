"""Sharing a run with a forked child: same results, same order, nothing lost if it dies;
and the share happens only when the work left after the screen pays for it."""

from __future__ import annotations

import os
import time

from cgguard.static.driver import parallel


def _all_later(x):
    return parallel.Later(x, 1)


def test_results_come_back_in_order_from_both_processes(monkeypatch):
    monkeypatch.setenv("CGGUARD_JOBS", "2")  # share whatever the machine's load
    items = list(range(1000))

    def work(x, payload):
        time.sleep(0.0005)  # long enough for the child to start claiming items
        return x * x, os.getpid()

    results = parallel.map_files(_all_later, work, items)
    assert [r[0] for r in results] == [x * x for x in items]
    # Both processes took a share (the work is claimed item by item).
    assert len({pid for _, pid in results}) == 2


def test_screened_items_never_reach_the_work_and_keep_their_place(monkeypatch):
    monkeypatch.setenv("CGGUARD_JOBS", "2")

    def screen(x):
        return ("screened", x) if x % 3 else parallel.Later(f"text{x}", x)

    def work(x, payload):
        assert x % 3 == 0 and payload == f"text{x}"
        return ("worked", x)

    expected = [("worked", x) if x % 3 == 0 else ("screened", x) for x in range(300)]
    assert parallel.map_files(screen, work, list(range(300))) == expected
    # The same when the run stays in one process: after the decision not to share,
    # work is done as the screen finds it.
    monkeypatch.delenv("CGGUARD_JOBS")
    monkeypatch.setattr(parallel, "MIN_SHARED_BYTES", 1000)
    monkeypatch.setattr(parallel, "busy_cpus", lambda: 64)
    assert parallel.map_files(screen, work, list(range(300))) == expected


def test_the_childs_plain_results_come_back_as_the_items_it_did(monkeypatch):
    # The child sends back only which of its items had the plain result; the parent makes
    # those anew (``plain``), in their places, and receives the others as they are.
    monkeypatch.setenv("CGGUARD_JOBS", "2")
    parent = os.getpid()
    made_in_parent: list[int] = []

    def plain(x):
        if os.getpid() == parent:
            made_in_parent.append(x)
        return ("plain", x)

    def work(x, payload):
        time.sleep(0.0005)  # long enough for the child to claim items
        return ("plain", x) if x % 2 else ("found", x, os.getpid())

    results = parallel.map_files(_all_later, work, list(range(600)), plain=plain)
    assert [r[:2] for r in results] == [("plain", x) if x % 2 else ("found", x) for x in range(600)]
    pids = {r[2] for r in results if r[0] == "found"}
    assert parent in pids and len(pids) == 2  # both processes did items
    # The parent made only the child's plain results anew: odd items, not its own.
    assert made_in_parent and all(x % 2 for x in made_in_parent)
    assert len(made_in_parent) < 300


def test_a_child_that_dies_midway_is_made_good_by_the_parent(monkeypatch):
    monkeypatch.setenv("CGGUARD_JOBS", "2")
    parent = os.getpid()

    def work(x, payload):
        if os.getpid() != parent and x > 300:
            os._exit(3)  # the child dies after some items
        return x + 1

    assert parallel.map_files(_all_later, work, list(range(1000))) == [x + 1 for x in range(1000)]


def _pids(monkeypatch, jobs, items, weight):
    if jobs is None:
        monkeypatch.delenv("CGGUARD_JOBS", raising=False)
    else:
        monkeypatch.setenv("CGGUARD_JOBS", jobs)

    def work(x, payload):
        time.sleep(0.001)  # long enough for a child to claim items
        return os.getpid()

    return set(parallel.map_files(lambda x: parallel.Later(x, weight), work, items))


def test_little_work_and_opt_out_stay_in_process(monkeypatch):
    me = {os.getpid()}
    # Nothing left after the screen, one file left, or too little text left: one process.
    assert parallel.map_files(lambda x: x, lambda x, p: os.getpid(), list(range(5000))) == list(range(5000))
    assert _pids(monkeypatch, None, [0], parallel.MIN_SHARED_BYTES * 10) == me
    assert _pids(monkeypatch, None, list(range(200)), parallel.MIN_SHARED_BYTES // 200 - 1) == me
    assert _pids(monkeypatch, "2", [0], 10**9) == me
    # CGGUARD_JOBS=1 turns sharing off whatever is left.
    assert _pids(monkeypatch, "1", list(range(200)), 10**9) == me


def test_no_share_without_an_idle_cpu(monkeypatch):
    monkeypatch.delenv("CGGUARD_JOBS", raising=False)
    items = list(range(200))
    weight = parallel.MIN_SHARED_BYTES // 100
    monkeypatch.setattr(parallel, "usable_cpus", lambda: 2)
    monkeypatch.setattr(parallel, "busy_cpus", lambda: 1)  # another process has the other core
    assert _pids(monkeypatch, None, items, weight) == {os.getpid()}
    monkeypatch.setattr(parallel, "usable_cpus", lambda: 1)
    monkeypatch.setattr(parallel, "busy_cpus", lambda: 0)
    assert _pids(monkeypatch, None, items, weight) == {os.getpid()}
    monkeypatch.setattr(parallel, "usable_cpus", lambda: 2)  # a free core, and enough work: shared
    assert len(_pids(monkeypatch, None, items, weight)) == 2


def test_busy_cpus_sees_a_spinning_process():
    import subprocess
    import sys

    before = parallel.busy_cpus()
    spin = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(0.3)
        during = max(parallel.busy_cpus() for _ in range(20))
    finally:
        spin.kill()
        spin.wait()
    assert during >= 1 and during >= min(before, 1)


def test_work_the_child_leaves_to_the_parent_is_done_there_in_order(monkeypatch):
    """ParentOnly (what scan raises in the child before importing libcst) hands the item
    back at once; the parent does it, and the results keep their order."""
    monkeypatch.setenv("CGGUARD_JOBS", "2")
    parent = os.getpid()

    def work(x, payload):
        time.sleep(0.0005)
        if x % 7 == 0 and parallel.in_child():
            raise parallel.ParentOnly
        return x, os.getpid()

    results = parallel.map_files(_all_later, work, list(range(1000)))
    assert [x for x, _ in results] == list(range(1000))
    assert all(pid == parent for x, pid in results if x % 7 == 0)
    assert len({pid for _, pid in results}) == 2
    assert not parallel.in_child()


def _needs_facts(x, parent, published_after):
    """Work whose items divisible by 5 need the facts the parent publishes once it has done
    the item ``published_after`` (as a run's parent publishes a project's sink callees)."""
    if x == published_after and os.getpid() == parent:
        parallel.publish("facts", {"squares": True})
    if x % 5 == 0 and parallel.in_child() and parallel.published("facts") is None:
        raise parallel.Awaited
    return x, os.getpid(), parallel.shares_as_parent()


def test_work_that_awaits_the_parents_facts_is_done_in_the_child_once_they_come(monkeypatch):
    """Awaited (what the child raises for a file that needs facts the parent has not sent
    yet) puts the item aside; the parent's facts (publish) reach the child, which does the
    items itself; the results keep their order, and only the parent works facts out."""
    monkeypatch.setenv("CGGUARD_JOBS", "2")
    parent = os.getpid()

    def work(x, payload):
        time.sleep(0.0005)
        return _needs_facts(x, parent, 0)

    results = parallel.map_files(_all_later, work, list(range(1000)))
    assert [x for x, _, _ in results] == list(range(1000))
    in_child = [x for x, pid, _ in results if pid != parent]
    assert any(x % 5 == 0 for x in in_child)  # the child had the facts for those
    assert all(sharing == (pid == parent) for _, pid, sharing in results)
    assert not parallel.shares_as_parent() and not parallel.in_child()


def test_work_awaiting_facts_that_never_come_is_done_by_the_parent(monkeypatch):
    """Facts the parent never publishes: the child hands those items back once its other
    work is done and the parent's claims have ended; the parent does them."""
    monkeypatch.setenv("CGGUARD_JOBS", "2")
    parent = os.getpid()

    def work(x, payload):
        time.sleep(0.0005)
        return _needs_facts(x, parent, -1)

    results = parallel.map_files(_all_later, work, list(range(1000)))
    assert [x for x, _, _ in results] == list(range(1000))
    assert all(pid == parent for x, pid, _ in results if x % 5 == 0)
    assert len({pid for _, pid, _ in results}) == 2


def test_facts_that_would_fill_the_pipe_are_not_sent(monkeypatch):
    """A parent never blocks on facts the child does not read yet: what would not fit the
    pipe is not sent, and the child hands back the items that needed it."""
    monkeypatch.setenv("CGGUARD_JOBS", "2")
    parent = os.getpid()

    def work(x, payload):
        time.sleep(0.0005)
        if x == 0 and os.getpid() == parent:
            parallel.publish("facts", "x" * 70_000)
        if x % 5 == 0 and parallel.in_child() and parallel.published("facts") is None:
            raise parallel.Awaited
        return x, os.getpid()

    results = parallel.map_files(_all_later, work, list(range(1000)))
    assert [x for x, _ in results] == list(range(1000))
    assert all(pid == parent for x, pid in results if x % 5 == 0)


def test_work_left_to_a_child_that_died_is_done_in_the_parent(monkeypatch):
    monkeypatch.setenv("CGGUARD_JOBS", "2")
    parent = os.getpid()

    def work(x, payload):
        if parallel.in_child() and x > 500:
            os._exit(3)  # the child dies with work it put aside
        return _needs_facts(x, parent, 600)[0]

    assert parallel.map_files(_all_later, work, list(range(1000))) == list(range(1000))


def test_many_small_files_left_fit_the_pipe(monkeypatch):
    """Tens of thousands of items left when the share starts: claimed in batches whose
    numbers fit the pipe's buffer, every result back in its place."""
    monkeypatch.delenv("CGGUARD_JOBS", raising=False)
    monkeypatch.setattr(parallel, "usable_cpus", lambda: 2)
    monkeypatch.setattr(parallel, "busy_cpus", lambda: 0)
    n = 40_000
    weight = parallel.MIN_SHARED_BYTES // 30_000  # the share starts after ~30,000 screened items
    results = parallel.map_files(lambda x: parallel.Later(x, weight), lambda x, p: (x, os.getpid()), list(range(n)))
    assert [x for x, _ in results] == list(range(n))
    assert len({pid for _, pid in results}) == 2


def test_a_cgroup_cpu_quota_caps_the_usable_cpus(monkeypatch, tmp_path):
    affinity = len(os.sched_getaffinity(0))
    cpu_max = tmp_path / "cpu.max"
    monkeypatch.setattr(parallel, "_CPU_MAX", str(cpu_max))
    assert parallel.usable_cpus() == affinity  # no cgroup file: the affinity
    cpu_max.write_text("max 100000\n")
    assert parallel.usable_cpus() == affinity
    cpu_max.write_text("150000 100000\n")  # one and a half CPUs: a second process would wait
    assert parallel.usable_cpus() == 1
    cpu_max.write_text("400000 100000\n")
    assert parallel.usable_cpus() == min(affinity, 4)


def test_files_found_before_the_share_are_claimed_biggest_first(monkeypatch):
    monkeypatch.delenv("CGGUARD_JOBS", raising=False)
    monkeypatch.setattr(parallel, "usable_cpus", lambda: 2)
    monkeypatch.setattr(parallel, "busy_cpus", lambda: 0)
    monkeypatch.setattr(parallel, "MIN_SHARED_BYTES", 55)  # reached with the tenth item
    weights = list(range(1, 11))

    def screen(x):
        return parallel.Later(x, weights[x]) if x < 10 else ("screened", x)

    def work(x, payload):
        started = time.monotonic()
        time.sleep(0.01)
        return started, x, os.getpid()

    results = parallel.map_files(screen, work, list(range(200)))
    assert [r[1] for r in results] == list(range(200))
    # Claimed in order 9, 8, 7, ...: each process starts its items biggest first. (Which
    # process starts which, and when, is the scheduler's: on a loaded machine the child may
    # start after the parent has taken 9 and 8 too, so only each process's own order counts.)
    by_process: dict[int, list[int]] = {}
    for _, x, pid in sorted(results[:10]):
        by_process.setdefault(pid, []).append(x)
    assert sorted(x for xs in by_process.values() for x in xs) == list(range(10))
    for xs in by_process.values():
        assert xs == sorted(xs, reverse=True)


def test_files_not_yet_screened_are_claimed_biggest_first_and_big_ones_alone(monkeypatch):
    """Files not screened when the share begins go biggest first by their size, and one
    too big to share a claim goes alone: vLLM's model runner (the one file there whose
    parse needs libcst, which only the parent imports) used to come last in path order,
    inside a claim of eight, while the child ran out of work."""
    monkeypatch.delenv("CGGUARD_JOBS", raising=False)
    monkeypatch.setattr(parallel, "usable_cpus", lambda: 2)
    monkeypatch.setattr(parallel, "busy_cpus", lambda: 0)
    monkeypatch.setattr(parallel, "MIN_SHARED_BYTES", 1)  # shared from the first item
    sizes = {x: 10 for x in range(1, 60)} | {57: parallel.BATCH_BYTES, 58: parallel.BATCH_BYTES + 1}

    def screen(x):
        return parallel.Later(x, 1) if x == 0 else parallel.Later(x, sizes[x])

    def work(x, payload):
        started = time.monotonic()
        time.sleep(0.05 if x in (57, 58) else 0.001)
        return started, x, os.getpid()

    results = parallel.map_files(screen, work, list(range(60)), size=lambda x: sizes.get(x, 0))
    assert [r[1] for r in results] == list(range(60))
    after_first = sorted(results[1:])
    # The two big files start first (on either side), before any small one.
    assert {x for _, x, _ in after_first[:2]} == {57, 58}
    # Each big file was a claim of its own: the other side did not wait for it to start
    # the small ones, so small files ran in both processes.
    assert len({pid for _, _, pid in results}) == 2


def test_the_parent_takes_the_biggest_file_first(monkeypatch):
    """The parent claims the biggest file before the child exists, screened or not: that is
    where libcst's work most likely is, which only the parent does (the child, taking vLLM's
    runner, ran its screen for nothing before handing it over)."""
    monkeypatch.delenv("CGGUARD_JOBS", raising=False)
    monkeypatch.setattr(parallel, "usable_cpus", lambda: 2)
    monkeypatch.setattr(parallel, "busy_cpus", lambda: 0)
    monkeypatch.setattr(parallel, "MIN_SHARED_BYTES", 1)  # shared after the first item
    parent = os.getpid()

    def work(x, payload):
        time.sleep(0.002)
        return x, os.getpid()

    for big, sizes in ((37, {37: 10**6}), (0, {})):  # unscreened biggest, then the screened one
        weights = {0: 10**5}
        results = parallel.map_files(
            lambda x: parallel.Later(x, weights.get(x, sizes.get(x, 10))), work, list(range(80)),
            size=lambda x: sizes.get(x, 10),
        )
        assert [x for x, _ in results] == list(range(80))
        assert results[big][1] == parent
        assert len({pid for _, pid in results}) == 2


def test_a_run_of_many_bytes_shares_the_screen_from_the_start(monkeypatch):
    """From MIN_SHARED_SCREEN bytes of files on, the screen itself is worth a second core:
    the share starts before the first file is read, even where nothing is left for the
    work. Many small files do not: their screen costs less than the fork."""
    monkeypatch.delenv("CGGUARD_JOBS", raising=False)
    monkeypatch.setattr(parallel, "usable_cpus", lambda: 2)
    monkeypatch.setattr(parallel, "busy_cpus", lambda: 0)
    monkeypatch.setattr(parallel, "MIN_SHARED_BYTES", 10**12)  # the work found never decides
    items = list(range(400))
    each = -(-parallel.MIN_SHARED_SCREEN // len(items))  # together just enough

    def screen(x):
        time.sleep(0.0002)
        return x, os.getpid()

    def pids(size_of_each: int) -> set[int]:
        results = parallel.map_files(screen, lambda x, p: None, items, size=lambda x: size_of_each)
        assert [x for x, _ in results] == items
        return {pid for _, pid in results}

    assert len(pids(each)) == 2
    assert pids(parallel.MIN_SHARED_SCREEN // len(items) - 1) == {os.getpid()}  # just short of it
    assert {pid for _, pid in parallel.map_files(screen, lambda x, p: None, list(range(5000)))} == {os.getpid()}  # no sizes
    monkeypatch.setattr(parallel, "busy_cpus", lambda: 1)  # no idle core: no share, however much
    assert pids(each) == {os.getpid()}
