"""Start-up log shapes for `cgguard triage`, built from a release's logger format strings.

A GPU start-up cannot run here, so these logs are assembled the way vLLM writes
them: each line is one of the release's own logger calls (format string, file,
line), formatted as its logger formats it, with the process prefix vLLM's
multiprocessing adds. The runtime suite builds them from each installed
release's source and formatter (``tests/runtime/test_triage_release.py``); here
they are built from vLLM 0.25.0's strings, written out below, which that suite
checks against the installed 0.25.0.

Every shape carries the verdict triage must give on the releases it names.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from dataclasses import dataclass, field

import pytest

from cgguard.ops.triage.facts import collect
from cgguard.ops.triage.read import read_lines
from cgguard.ops.triage.verdict import CANNOT_TELL, NOT_THIS_BUG, THIS_BUG, Verdict, decide


@dataclass(frozen=True)
class Src:
    """One logger call in vLLM's source: its format string and where it is."""

    fmt: str
    file: str  # under vllm/, e.g. "v1/core/kv_cache_utils.py"
    line: int


@dataclass(frozen=True)
class ReleaseLog:
    """What a release logs on the start-up path, read from its source."""

    version: str
    engine: Src  # "Initializing a V1 LLM engine (v%s) with config: %s"
    non_default: Src  # "non-default args: %s"
    block_size: Src  # "Setting attention block size to %d tokens to ensure ..."
    override: Src  # "Overriding num_gpu_blocks=%d with num_gpu_blocks_override=%d"
    profiling: Src  # "Profiling CUDA graph memory: %s"
    estimate: Src  # "Estimated CUDA graph memory: %.2f GiB total"
    available: Src  # "Available KV cache memory: %s GiB"
    failed: Src  # "EngineCore failed to start."
    ready: Src  # "init engine (profile, create kv cache, warmup model) took %.2f seconds"
    skipped: Src  # the kv_cache_memory_bytes message (an f-string, values filled in)
    no_memory: str  # ValueError text when nothing is left for the KV cache
    profiling_logs_override: bool  # the profiling call goes through the logging override
    allocation_call: str  # the source line of the profiling allocation call
    frame_lines: dict[str, int] = field(default_factory=dict)  # function -> line


# An emitter formats one logger call: (process, level, call, args, traceback) -> lines.
Emit = Callable[[str, str, Src, tuple, "str | None"], list[str]]

# vLLM 0.25.0's strings (checked against its source by the runtime suite).
V0_25_0 = ReleaseLog(
    version="0.25.0",
    engine=Src("Initializing a V1 LLM engine (v%s) with config: %s", "v1/engine/core.py", 114),
    non_default=Src("non-default args: %s", "entrypoints/serve/utils/api_utils.py", 273),
    block_size=Src(
        "Setting attention block size to %d tokens "
        "to ensure that attention page size is >= mamba page size.",
        "platforms/interface.py",
        890,
    ),
    override=Src(
        "Overriding num_gpu_blocks=%d with num_gpu_blocks_override=%d",
        "v1/core/kv_cache_utils.py",
        2084,
    ),
    profiling=Src("Profiling CUDA graph memory: %s", "v1/worker/gpu_model_runner.py", 6534),
    estimate=Src(
        "Estimated CUDA graph memory: %.2f GiB total", "v1/worker/gpu_model_runner.py", 6639
    ),
    available=Src("Available KV cache memory: %s GiB", "v1/worker/gpu_worker.py", 538),
    failed=Src("EngineCore failed to start.", "v1/engine/core.py", 1231),
    ready=Src(
        "init engine (profile, create kv cache, warmup model) took %.2f s", "v1/engine/core.py", 344
    ),
    skipped=Src(
        "Initial free memory 78.50 GiB, reserved 20.00 GiB memory for KV Cache as specified by "
        "kv_cache_memory_bytes config and skipped memory profiling. This does not respect the "
        "gpu_memory_utilization config.",
        "v1/worker/gpu_worker.py",
        459,
    ),
    no_memory="No available memory for the cache blocks. Try increasing `gpu_memory_utilization` "
    "when initializing the engine (this flag also controls CPU memory reservation on the CPU "
    "backend, despite its name). See https://docs.vllm.ai/en/latest/configuration/"
    "conserving_memory/ for more details.",
    profiling_logs_override=False,
    allocation_call="self.initialize_kv_cache(minimal_config, is_profiling=True)",
)

RECORD_FORMAT = "%(levelname)s %(asctime)s [%(fileinfo)s:%(lineno)d] %(message)s"
STAMP = "12-01 09:14:07"


def plain_emit(process: str, level: str, src: Src, args: tuple, tb: str | None) -> list[str]:
    """vLLM's record format, with its NewLineFormatter's prefix on every line."""
    message = src.fmt % args if args else src.fmt
    if tb:
        message += "\n" + tb.rstrip("\n")
    fileinfo = src.file.rsplit("/", 1)[-1]
    head = RECORD_FORMAT % {
        "levelname": level,
        "asctime": STAMP,
        "fileinfo": fileinfo,
        "lineno": src.line,
        "message": "",
    }
    prefix = f"({process}) " if process else ""
    return [f"{prefix}{head}{part}" for part in message.split("\n")]


MODEL = "/models/Qwen3-Next-80B-A3B-Instruct"


def config_text(capture: int | None, eager: bool = False, mode: str = "FULL_AND_PIECEWISE") -> str:
    mode_text = "<CUDAGraphMode.NONE: 0>" if mode == "NONE" else f"<CUDAGraphMode.{mode}: (2, 1)>"
    return (
        f"model='{MODEL}', speculative_config=None, tokenizer='{MODEL}', skip_tokenizer_init=False, "
        "dtype=torch.bfloat16, max_seq_len=262144, tensor_parallel_size=1, "
        f"enforce_eager={eager}, kv_cache_dtype=auto, device_config=cuda, "
        "compilation_config={'mode': <CompilationMode.VLLM_COMPILE: 3>, "
        f"'cudagraph_mode': {mode_text}, 'cudagraph_capture_sizes': [1, 2, 4, 8], "
        f"'max_cudagraph_capture_size': {capture}, 'local_cache_dir': None}}"
    )


def _frame(rel: ReleaseLog, file: str, func: str, code: str) -> str:
    line = rel.frame_lines.get(func, 100)
    path = f"/usr/local/lib/python3.12/dist-packages/vllm/{file}"
    return f'  File "{path}", line {line}, in {func}\n    {code}'


def profiling_traceback(rel: ReleaseLog, error: str) -> str:
    frames = [
        (
            "v1/engine/core.py",
            "_initialize_kv_caches",
            "available_gpu_memory = self.model_executor.determine_available_memory()",
        ),
        (
            "v1/executor/abstract.py",
            "determine_available_memory",
            'return self.collective_rpc("determine_available_memory")',
        ),
        (
            "v1/worker/gpu_worker.py",
            "determine_available_memory",
            "cudagraph_memory_estimate = self.model_runner.profile_cudagraph_memory()",
        ),
        (
            "v1/worker/gpu_model_runner.py",
            "profile_cudagraph_memory",
            "self._init_minimal_kv_cache_for_profiling()",
        ),
        (
            "v1/worker/gpu_model_runner.py",
            "_init_minimal_kv_cache_for_profiling",
            rel.allocation_call,
        ),
        (
            "v1/worker/gpu_model_runner.py",
            "initialize_kv_cache",
            "kv_caches = self.initialize_kv_cache_tensors(",
        ),
        (
            "v1/worker/gpu_model_runner.py",
            "initialize_kv_cache_tensors",
            "kv_cache_raw_tensors = self._allocate_kv_cache_tensors(kv_cache_config)",
        ),
        ("v1/worker/gpu_model_runner.py", "_allocate_kv_cache_tensors", "tensor = torch.zeros("),
    ]
    return "\n".join(
        ["Traceback (most recent call last):", *(_frame(rel, *f) for f in frames), error]
    )


def profiling_capture_traceback(rel: ReleaseLog, error: str) -> str:
    """Out of memory while profile_cudagraph_memory captures graphs, its cache held."""
    head = profiling_traceback(rel, error).split("\n")[:9]  # down to profile_cudagraph_memory
    head[-1] = "    self._warmup_and_capture("
    warmup = _frame(rel, "v1/worker/gpu_model_runner.py", "_warmup_and_capture", "self._dummy_run(")
    return "\n".join([*head, warmup, error])


def capture_traceback(rel: ReleaseLog, error: str) -> str:
    frames = [
        (
            "v1/engine/core.py",
            "_initialize_kv_caches",
            "self.model_executor.initialize_from_config(kv_cache_configs)",
        ),
        (
            "v1/worker/gpu_worker.py",
            "compile_or_warm_up_model",
            "cuda_graph_memory_bytes = self.model_runner.capture_model()",
        ),
        ("v1/worker/gpu_model_runner.py", "capture_model", "self._capture_cudagraphs("),
        ("v1/worker/gpu_model_runner.py", "_capture_cudagraphs", "self._warmup_and_capture("),
    ]
    return "\n".join(
        ["Traceback (most recent call last):", *(_frame(rel, *f) for f in frames), error]
    )


CUDA_OOM = (
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 52.38 GiB. GPU 0 has a total "
    "capacity of 79.19 GiB of which 20.05 GiB is free."
)
CAPTURE_OOM = (
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total "
    "capacity of 79.19 GiB of which 1.12 GiB is free."
)
ENGINE = "EngineCore_DP0 pid=207"


@dataclass(frozen=True)
class Shape:
    name: str
    text: str
    verdict: str  # on an affected release
    fixed_verdict: str  # on a fixed one (0.26.0 and later)
    numbers: dict = field(default_factory=dict)  # numbers the verdict must report


def _start(
    emit: Emit, rel: ReleaseLog, seqs: int | None, capture: int | None, **config
) -> list[str]:
    lines = []
    if seqs is not None:
        lines += emit(
            "APIServer pid=1",
            "INFO",
            rel.non_default,
            (f"{{'model': '{MODEL}', 'max_num_seqs': {seqs}}}",),
            None,
        )
    lines += emit(ENGINE, "INFO", rel.engine, (rel.version, config_text(capture, **config)), None)
    return lines


def _profiling_count(emit: Emit, rel: ReleaseLog, blocks: int) -> list[str]:
    """The override line the profiling call logs, on releases that log it there."""
    return (
        emit(ENGINE, "INFO", rel.override, (0, blocks), None) if rel.profiling_logs_override else []
    )


def shapes(emit: Emit, rel: ReleaseLog) -> list[Shape]:
    """The log shapes, in ``rel``'s strings: half of them are not this bug."""
    hybrid = emit(ENGINE, "INFO", rel.block_size, (2096,), None)
    oom = emit(ENGINE, "ERROR", rel.failed, (), profiling_traceback(rel, CUDA_OOM))
    done = [
        *emit(
            ENGINE,
            "INFO",
            rel.profiling,
            ("PIECEWISE=51 (largest=512), FULL=35 (largest=256)",),
            None,
        ),
        *emit(ENGINE, "INFO", rel.estimate, (1.23,), None),
        *emit(ENGINE, "INFO", rel.available, ("31.50",), None),
    ]
    result = [
        Shape(
            "hybrid model, OOM in the profiling allocation",
            "\n".join(
                [*_start(emit, rel, 256, 512), *hybrid, *_profiling_count(emit, rel, 512), *oom]
            ),
            THIS_BUG,
            NOT_THIS_BUG,
            {
                "profiling_blocks": 512,
                "bound_blocks": 256,
                "max_num_seqs": 256,
                "block_size": 2096,
                "failed_allocation_bytes": int(52.38 * 2**30),
                "bound_allocation_bytes": int(52.38 * 2**30) * 256 // 512,
            },
        ),
        Shape(
            "OOM during graph capture after profiling",
            "\n".join(
                [
                    *_start(emit, rel, 256, 512),
                    *_profiling_count(emit, rel, 512),
                    *done,
                    *emit(ENGINE, "ERROR", rel.failed, (), capture_traceback(rel, CAPTURE_OOM)),
                ]
            ),
            NOT_THIS_BUG,
            NOT_THIS_BUG,
        ),
        Shape(
            "pessimistic CUDA-graph estimate leaves no KV cache",
            "\n".join(
                [
                    *_start(emit, rel, 256, 512),
                    *_profiling_count(emit, rel, 512),
                    *emit(ENGINE, "INFO", rel.profiling, ("PIECEWISE=51 (largest=512)",), None),
                    *emit(ENGINE, "INFO", rel.estimate, (9.80,), None),
                    *emit(ENGINE, "INFO", rel.available, ("-2.10",), None),
                    *emit(
                        ENGINE,
                        "ERROR",
                        rel.failed,
                        (),
                        "Traceback (most recent call last):\n"
                        + _frame(
                            rel,
                            "v1/engine/core.py",
                            "_initialize_kv_caches",
                            "kv_cache_configs = get_kv_cache_configs(",
                        )
                        + f"\nValueError: {rel.no_memory}",
                    ),
                ]
            ),
            NOT_THIS_BUG,
            NOT_THIS_BUG,
        ),
        Shape(
            "override equal to the bound (max_num_seqs above the capture size)",
            "\n".join(
                [*_start(emit, rel, 1024, 512), *hybrid, *_profiling_count(emit, rel, 512), *oom]
            ),
            NOT_THIS_BUG,
            NOT_THIS_BUG,
            {"profiling_blocks": 512, "bound_blocks": 512},
        ),
        Shape(
            "no profiling: kv_cache_memory_bytes",
            "\n".join(
                [
                    *_start(emit, rel, 256, 512),
                    *emit(ENGINE, "INFO", rel.skipped, (), None),
                    *emit(ENGINE, "INFO", rel.ready, (41.2,), None),
                ]
            ),
            NOT_THIS_BUG,
            NOT_THIS_BUG,
        ),
        Shape(
            "no profiling: enforce_eager",
            "\n".join(_start(emit, rel, 256, 512, eager=True, mode="NONE")),
            NOT_THIS_BUG,
            NOT_THIS_BUG,
        ),
        Shape(
            "max_num_seqs left at its default, INFO logging",
            "\n".join(
                [*_start(emit, rel, None, 512), *hybrid, *_profiling_count(emit, rel, 512), *oom]
            ),
            CANNOT_TELL,
            NOT_THIS_BUG,
        ),
        Shape(
            "OOM while graphs are captured for profiling, the per-token cache held",
            "\n".join(
                [
                    *_start(emit, rel, 256, 512),
                    *_profiling_count(emit, rel, 512),
                    *emit(ENGINE, "INFO", rel.profiling, ("PIECEWISE=51 (largest=512)",), None),
                    *emit(
                        ENGINE,
                        "ERROR",
                        rel.failed,
                        (),
                        profiling_capture_traceback(rel, CAPTURE_OOM),
                    ),
                ]
            ),
            THIS_BUG,
            NOT_THIS_BUG,
            # The failing allocation is a graph's, not the cache's: no bytes at the bound.
            {"profiling_blocks": 512, "bound_blocks": 256, "bound_allocation_bytes": None},
        ),
        Shape(
            "truncated before the failure",
            "\n".join([*_start(emit, rel, 256, 512), *hybrid]),
            CANNOT_TELL,
            CANNOT_TELL,
        ),
        Shape(
            "two tensor-parallel workers, interleaved, with Docker time stamps and colours",
            _interleaved(emit, rel),
            THIS_BUG,
            NOT_THIS_BUG,
            {"profiling_blocks": 512, "bound_blocks": 128},
        ),
    ]
    return result


def _interleaved(emit: Emit, rel: ReleaseLog) -> str:
    start = _start(emit, rel, 128, 512)
    workers = []
    for rank in (0, 1):
        proc = f"Worker_TP{rank} pid={300 + rank}"
        count = (
            emit(proc, "INFO", rel.override, (0, 512), None) if rel.profiling_logs_override else []
        )
        tb = emit(
            proc,
            "ERROR",
            Src("WorkerProc hit an exception.", "v1/executor/multiproc_executor.py", 1004),
            (),
            profiling_traceback(rel, CUDA_OOM),
        )
        workers.append(count + tb)
    mixed = [line for pair in zip(*workers) for line in pair]
    longest = max(workers, key=len)
    mixed += longest[len(mixed) // 2 :]
    coloured = [_docker(i, line) for i, line in enumerate([*start, *mixed])]
    return "\n".join(coloured)


CYAN, RESET = "\x1b[36m", "\x1b[0m"


def _docker(i: int, line: str) -> str:
    """A line as `docker logs -t` shows a coloured terminal's output."""
    if line.startswith("("):
        line = CYAN + line.replace(") ", ")" + RESET + " ", 1)
    return f"2026-12-01T09:14:{i % 60:02d}.{i:06d}Z {line}"


def verdict_of(text: str, **options) -> Verdict:
    return decide(collect(read_lines(io.BytesIO(text.encode()), "log")), **options)


SHAPES = shapes(plain_emit, V0_25_0)


def test_there_are_eight_shapes_or_more_and_half_are_not_this_bug():
    assert len(SHAPES) >= 8
    assert sum(s.verdict != THIS_BUG for s in SHAPES) >= len(SHAPES) / 2


@pytest.mark.parametrize("shape", SHAPES, ids=[s.name for s in SHAPES])
def test_each_shape_gets_its_verdict(shape: Shape):
    v = verdict_of(shape.text)
    assert v.kind == shape.verdict, v.summary
    assert (v.version, v.numbers["model"]) == ("0.25.0", MODEL)
    for key, value in shape.numbers.items():
        assert v.numbers.get(key) == value, (key, v.numbers)


@pytest.mark.parametrize("shape", SHAPES, ids=[s.name for s in SHAPES])
def test_each_shape_on_a_fixed_release(shape: Shape):
    v = verdict_of(shape.text.replace("(v0.25.0)", "(v0.26.0)"))
    assert v.kind == shape.fixed_verdict, v.summary
