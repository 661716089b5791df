"""Sharing a run with a forked child: same results, same order, nothing lost if it dies."""

from __future__ import annotations

import os
import time

from cgguard.static.driver import parallel


def test_results_come_back_in_order_from_both_processes():
    items = list(range(1000))

    def work(x):
        time.sleep(0.0005)  # long enough for the child to start claiming batches
        return x * x, os.getpid()

    results = parallel.map_files(work, items)
    assert [r[0] for r in results] == [x * x for x in items]
    # Both processes took a share (the work is claimed batch by batch).
    assert len({pid for _, pid in results}) == 2


def test_a_child_that_dies_midway_is_made_good_by_the_parent():
    parent = os.getpid()

    def work(x):
        if os.getpid() != parent and x > 300:
            os._exit(3)  # the child dies after some batches
        return x + 1

    assert parallel.map_files(work, list(range(1000))) == [x + 1 for x in range(1000)]


def test_small_runs_and_opt_out_stay_in_process(monkeypatch):
    assert {pid for pid in parallel.map_files(lambda x: os.getpid(), list(range(10)))} == {os.getpid()}
    monkeypatch.setenv("CGGUARD_JOBS", "1")
    assert {pid for pid in parallel.map_files(lambda x: os.getpid(), list(range(1000)))} == {os.getpid()}


def test_work_the_child_leaves_to_the_parent_is_done_there_in_order():
    """ParentOnly (what scan raises in the child before importing libcst) hands the item
    back at once; the parent does it, and the results keep their order."""
    parent = os.getpid()

    def work(x):
        time.sleep(0.0005)
        if x % 7 == 0 and parallel.in_child():
            raise parallel.ParentOnly
        return x, os.getpid()

    results = parallel.map_files(work, list(range(1000)))
    assert [x for x, _ in results] == list(range(1000))
    assert all(pid == parent for x, pid in results if x % 7 == 0)
    assert len({pid for _, pid in results}) == 2
    assert not parallel.in_child()
