"""`cgguard triage` on logs as people paste them (issue 38).

Collectors put their own prefix before vLLM's line; a traceback written to
standard error carries vLLM's process prefix or nothing of vLLM's; a non-memory
exception in the profiling method is something else; a container that restarts
logs several starts in one file. The logs are vLLM 0.25.0's strings
(``test_triage_shapes``), decorated the way collectors decorate them.
"""

from __future__ import annotations

import re

import pytest

from cgguard.ops.triage.verdict import CANNOT_TELL, NOT_THIS_BUG, THIS_BUG
from tests.ops.test_triage_shapes import (
    ENGINE,
    SHAPES,
    V0_25_0,
    Src,
    _start,
    plain_emit,
    profiling_capture_traceback,
    profiling_traceback,
    verdict_of,
)

BUG = SHAPES[0]
assert BUG.verdict == THIS_BUG
_HEADER = re.compile(r"(?:ERROR|INFO) 12-01 09:14:07 \[[^\]]*\] ")


def _stderr(text: str, keep_process: bool) -> str:
    """The failure's traceback as the engine's standard error shows it: without
    vLLM's logger header, with its process prefix or with nothing of vLLM's."""
    out, failing = [], False
    for line in text.splitlines():
        failing = failing or "EngineCore failed to start" in line
        if failing and "failed to start" not in line:
            line = _HEADER.sub("", line, count=1)
            if not keep_process:
                line = line.removeprefix(f"({ENGINE}) ")
        out.append(line)
    return "\n".join(out)


# What collectors put before each line: (name, prefix of line i).
STYLES = {
    "time stamp and bar": lambda i: f"2026-04-19 10:01:{i % 60:02d}.{i:03d} | ",
    "ISO time stamp": lambda i: f"2026-04-19T10:01:{i % 60:02d}.{i:06d}Z ",
    "docker compose": lambda i: "api-1  | ",
    "kubectl --prefix": lambda i: "[pod/vllm-7d9f8b6c4-x2x9z/vllm] ",
    "journald": lambda i: f"Apr 19 10:01:{i % 60:02d} gpu-node-3 vllm[4242]: ",
    # A shape cgguard lists nowhere: learned from the lines where vLLM's part shows.
    "syslog, learned": lambda i: f"<14>1 2026-04-19T10:01:{i % 60:02d}Z gpu-3 vllm 4242 - - ",
}


def _prefixed(text: str, prefix) -> str:
    return "\n".join(prefix(i) + line for i, line in enumerate(text.splitlines()))


def _mixed(i: int) -> str:
    styles = list(STYLES.values())
    return styles[i % len(styles)](i)


@pytest.mark.parametrize("keep_process", [True, False], ids=["stderr", "stderr-bare"])
@pytest.mark.parametrize("style", [*STYLES, "mixed"])
def test_each_collector_prefix_and_a_mix_of_them_is_read(style, keep_process):
    prefix = _mixed if style == "mixed" else STYLES[style]
    for text in (BUG.text, _stderr(BUG.text, keep_process)):
        v = verdict_of(_prefixed(text, prefix))
        assert v.kind == THIS_BUG, (style, v.summary)
        for key, value in BUG.numbers.items():
            assert v.numbers.get(key) == value, (style, key, v.numbers)


def test_a_bare_traceback_after_a_learned_prefix_keeps_its_frames():
    """Lines without any mark of vLLM's are stripped of the prefix learned from the
    lines that have one: the failure is placed by its frames, not by position."""
    text = _prefixed(_stderr(BUG.text, keep_process=False), STYLES["syslog, learned"])
    v = verdict_of(text)
    [failure] = [e for e in v.evidence if e.what.startswith("out of memory")]
    assert failure.what == "out of memory inside _init_minimal_kv_cache_for_profiling"
    assert failure.text.startswith("torch.OutOfMemoryError")


def _emit(src: Src, *args, level="INFO", tb=None) -> list[str]:
    return plain_emit(ENGINE, level, src, args, tb)


OVERRIDE = Src(
    "Overriding num_gpu_blocks=%d with num_gpu_blocks_override=%d", "v1/core/kv_cache_utils.py", 1
)
BUILT = Src("Initialized minimal KV cache for CUDA graph profiling", "gpu_model_runner.py", 2)


def test_nothing_recognised_after_the_count_says_so_not_that_the_log_ends():
    lines = [
        *_start(plain_emit, V0_25_0, 256, 512),
        *_emit(OVERRIDE, 0, 512),
        *(f"2026-04-19 10:01:02 | something vLLM's parent printed {i}" for i in range(5)),
    ]
    v = verdict_of("\n".join(lines))
    assert v.kind == CANNOT_TELL
    assert "ends" not in v.summary
    assert "no line after the profiling block count (line 3) was recognised" in v.summary
    assert v.needs is not None and "Estimated CUDA graph memory" in v.needs


def test_a_built_cache_with_nothing_recognised_after_it_cannot_tell():
    """The capture the cache starved may still have failed: not 'no failure follows'."""
    lines = [*_start(plain_emit, V0_25_0, 256, 512), *_emit(OVERRIDE, 0, 512), *_emit(BUILT)]
    v = verdict_of("\n".join(lines))
    assert v.kind == CANNOT_TELL, v.summary
    assert "was built and fit (line 4), but no line after it was recognised" in v.summary
    # Profiling that finished settles it.
    done = _emit(Src("Estimated CUDA graph memory: %.2f GiB total", "gpu_model_runner.py", 3), 1.0)
    v = verdict_of("\n".join([*lines, *done]))
    assert v.kind == NOT_THIS_BUG and "no failure line was recognised" in v.summary, v.summary


VALUE_ERROR = (
    "ValueError: Hybrid KV cache manager is disabled but failed to convert the KV cache specs "
    "to one unified type."
)


@pytest.mark.parametrize(
    ("traceback", "error", "kind", "said"),
    [
        (profiling_traceback, VALUE_ERROR, NOT_THIS_BUG, "inside _init_minimal_kv_cache_for"),
        (
            profiling_capture_traceback,
            "torch.AcceleratorError: CUDA error: unknown error",
            NOT_THIS_BUG,
            "CUDA error: unknown error",
        ),
        # The failing allocation itself, in either spelling of a CUDA out-of-memory.
        (
            profiling_traceback,
            "torch.AcceleratorError: CUDA error: out of memory",
            THIS_BUG,
            "512 blocks where 256",
        ),
        (
            profiling_capture_traceback,
            "torch.AcceleratorError: CUDA error: out of memory",
            THIS_BUG,
            "while capturing graphs",
        ),
        # An error that names the block count: the size is the problem.
        (
            profiling_traceback,
            "RuntimeError: num_blocks 512 exceeds what the allocator can map",
            THIS_BUG,
            "and failed",
        ),
    ],
)
def test_only_the_allocation_is_this_bug(traceback, error, kind, said):
    lines = [
        *_start(plain_emit, V0_25_0, 256, 512),
        *_emit(V0_25_0.failed, level="ERROR", tb=traceback(V0_25_0, error)),
    ]
    v = verdict_of("\n".join(lines))
    assert v.kind == kind, v.summary
    assert said in v.summary
    if kind == NOT_THIS_BUG:
        assert "not an out-of-memory error" in v.summary


def test_a_non_memory_error_placed_by_position_alone_cannot_tell():
    lines = [
        *_start(plain_emit, V0_25_0, 256, 512),
        *_emit(OVERRIDE, 0, 512),
        *_emit(
            Src("%s", "core.py", 9),
            "RuntimeError: Engine core initialization failed.",
            level="ERROR",
        ),
    ]
    v = verdict_of("\n".join(lines))
    assert v.kind == CANNOT_TELL and "no traceback places it" in v.summary, v.summary


def _oom_start(seqs: int, capture: int) -> list[str]:
    return [
        *_start(plain_emit, V0_25_0, seqs, capture),
        *_emit(
            V0_25_0.failed,
            level="ERROR",
            tb=profiling_traceback(
                V0_25_0, "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 8.00 GiB."
            ),
        ),
    ]


def test_a_restart_loop_is_judged_on_the_start_that_failed_with_its_own_numbers():
    first = _oom_start(256, 512)  # this bug: 512 blocks where 256 suffice
    second = _oom_start(1024, 512)  # at the bound: not this bug
    third = _start(plain_emit, V0_25_0, 32, 64)  # cut off before anything happened
    v = verdict_of("\n".join([*first, *second, *third]))
    assert v.kind == THIS_BUG, v.summary
    assert (v.numbers["starts"], v.numbers["start"]) == (3, 1)
    assert v.numbers["max_num_seqs"] == 256
    assert v.numbers["capture_size"] == 512
    assert (v.numbers["profiling_blocks"], v.numbers["bound_blocks"]) == (512, 256)
    assert f"start 1's (lines 1-{len(first)})" in v.summary
    assert "512 blocks where 256 suffice" in v.summary
    # Every line cited is the first start's.
    assert all(e.line is None or e.line <= len(first) for e in v.evidence)


def test_a_restart_loop_of_the_same_failure_cites_the_last_start():
    one = _oom_start(256, 512)
    v = verdict_of("\n".join([*one, *one]))
    assert (v.kind, v.numbers["starts"], v.numbers["start"]) == (THIS_BUG, 2, 2)
    assert "1 other start(s) also show this bug" in v.summary


def test_data_parallel_engines_of_one_start_are_one_start():
    lines = _start(plain_emit, V0_25_0, 256, 512)
    second_engine = [
        line.replace("EngineCore_DP0 pid=207", "EngineCore_DP1 pid=208") for line in lines[1:]
    ]
    v = verdict_of("\n".join([*lines, *second_engine, *_oom_start(256, 512)[2:]]))
    assert (v.kind, v.numbers["starts"]) == (THIS_BUG, 1)
