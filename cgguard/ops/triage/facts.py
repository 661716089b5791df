"""What a vLLM start-up log says, line by line: the facts triage decides on.

Each fact keeps the line it came from. The phrases are the ones vLLM's own
logger calls print (0.18.0 to 0.32.0): the engine's config line, the block-size
line of hybrid models, the block-count override, the CUDA-graph profiling lines,
and Python tracebacks, which vLLM logs with its prefix on every line.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from cgguard.ops.triage.read import LogLine

# Frames of the start-up path, by what they say about where a failure happened.
PROFILING_ALLOCATION = "_init_minimal_kv_cache_for_profiling"
PROFILING_STEP = "profile_cudagraph_memory"
GRAPH_CAPTURE = ("capture_model", "_capture_cudagraphs")
FORWARD_PROFILE = ("profile_run",)
MODEL_LOAD = ("load_model",)
KV_CACHE_ALLOCATION = ("initialize_kv_cache", "_allocate_kv_cache_tensors", "_reshape_kv_cache")
_FRAMES_KEPT = {
    PROFILING_ALLOCATION,
    PROFILING_STEP,
    "determine_available_memory",
    *GRAPH_CAPTURE,
    *FORWARD_PROFILE,
    *MODEL_LOAD,
    *KV_CACHE_ALLOCATION,
    "initialize_kv_cache_tensors",
    "_initialize_kv_caches",
}
MAX_FAILURES = 64
_FAILING_LEVELS = (
    "ERROR",
    "CRITICAL",
    None,
)  # a log that keeps failing: the first ones are the cause

_VERSION = re.compile(r"Initializing a V1 LLM engine \(v(?P<v>[^)\s]+)\) with config: (?P<cfg>.*)")
_SERVER_VERSION = re.compile(r"vLLM API server version (?P<v>\S+)")
_MODEL = re.compile(r"\bmodel='(?P<m>[^']*)'")
_EAGER = re.compile(r"\benforce_eager=(?P<e>True|False)")
_CAPTURE = re.compile(r"'max_cudagraph_capture_size': (?P<n>\d+|None)")
_GRAPH_MODE = re.compile(r"'cudagraph_mode': <CUDAGraphMode\.(?P<mode>\w+)")
_SEQS_ARG = re.compile(r"'max_num_seqs': (?P<n>\d+)")
_CAPTURE_ARG = re.compile(r"'max_cudagraph_capture_size': (?P<n>\d+)")
_SEQS_DEFAULT = re.compile(r"Defaulting max_num_seqs to (?P<n>\d+)")
_BLOCK_SIZE = re.compile(r"Setting attention block size to (?P<n>\d+) tokens")
_OVERRIDE = re.compile(
    r"Overriding num_gpu_blocks=(?P<old>-?\d+) with num_gpu_blocks_override=(?P<new>\d+)"
)
_FRAME = re.compile(r'^\s*File "(?P<path>[^"]*)", line (?P<n>\d+), in (?P<func>\S+)')
_PROFILING_CALL = re.compile(r"initialize_kv_cache\(\s*minimal_config\b")
_EXCEPTION = re.compile(r"^(?P<type>[A-Za-z_][\w.]*(?:Error|Exception|Exit))(?::\s*(?P<text>.*))?$")
_OOM = re.compile(
    r"out of memory|OutOfMemoryError|can't allocate memory|Cannot allocate memory", re.I
)
_TRIED = re.compile(
    r"(?:Tried to allocate|tried to allocate) (?P<n>[\d.,]+)\s*(?P<unit>bytes|[KMGTP]i?B)?"
)
_GIB = re.compile(r"(?P<n>[\d.]+) GiB")

# Start-up stages vLLM logs, in the order they happen (after the profiling
# allocation: "profiling done" and later).
STAGE_PHRASES = (
    ("profiling_cache_built", "Initialized minimal KV cache for CUDA graph profiling"),
    ("profiling_capture", "Profiling CUDA graph memory:"),
    ("profiling_done", "Estimated CUDA graph memory:"),
    ("kv_cache_sized", "Available KV cache memory:"),
    ("kv_cache_sized", "GPU KV cache size:"),
    ("profiling_skipped", "skipped memory profiling"),
    ("graph_capture", "Capturing CUDA graph"),
    ("graph_capture_done", "Graph capturing finished"),
    ("engine_ready", "init engine (profile, create kv cache, warmup model) took"),
    ("engine_ready", "Starting vLLM API server"),
    ("engine_ready", "Application startup complete"),
)
_UNITS = {"bytes": 1, "KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12, "PB": 10**15}
_UNITS.update({"KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "TiB": 2**40, "PiB": 2**50})


@dataclass(frozen=True)
class Fact:
    line: int
    text: str  # the message, as the log has it (after prefixes)
    process: str


@dataclass(frozen=True)
class Override:
    fact: Fact
    old: int  # the count vLLM had (0 when it was asked for no memory: the profiling call)
    new: int


@dataclass(frozen=True)
class Failure:
    fact: Fact  # the exception line
    oom: bool
    frames: tuple[str, ...]  # start-up functions in its traceback, outermost first
    profiling_call_line: int | None  # the `initialize_kv_cache(minimal_config...` source line
    tried_bytes: int | None  # what the failing allocation asked for


@dataclass
class Facts:
    """What one start of vLLM (a banner to the next) logged."""

    first_line: int = 0  # the start's first line read (0: none yet)
    lines_read: int = 0
    version: Fact | None = None
    version_text: str | None = None
    model: str | None = None
    enforce_eager: bool | None = None
    capture_size: int | None = None  # the config line's max_cudagraph_capture_size
    capture_fact: Fact | None = None
    graph_mode: str | None = None
    max_num_seqs: int | None = None
    seqs_fact: Fact | None = None
    block_size: int | None = None
    block_fact: Fact | None = None
    overrides: list[Override] = field(default_factory=list)
    failures: list[Failure] = field(default_factory=list)
    stages: dict[str, list[Fact]] = field(default_factory=dict)
    free_gib: Fact | None = None  # vLLM's "Available KV cache memory: X GiB"

    # What marks where the next start begins (see ``_begins_a_start``).
    banner: bool = False
    args: bool = False
    engines: set[str] = field(default_factory=set)

    def first_stage(self, name: str, after: int = 0) -> Fact | None:
        return next((f for f in self.stages.get(name, []) if f.line > after), None)


@dataclass
class LogFacts:
    """A log's facts, one :class:`Facts` per start: a container restarted after a
    failure logs several starts in one file."""

    starts: list[Facts] = field(default_factory=list)
    lines_read: int = 0


def _process_name(process: str) -> str:
    """``EngineCore_DP0 pid=207`` -> ``EngineCore_DP0`` (a restarted container often
    reuses the pid, and a new one does not make a new start by itself)."""
    return process.split(" ", 1)[0]


def _begins_a_start(facts: Facts, text: str, process: str) -> bool:
    """Whether this line opens a new start of vLLM, given the current start's facts.

    A start logs the API server's banner, then its 'non-default args', then one
    'Initializing a V1 LLM engine' per engine process (one per data-parallel rank).
    A line of these that the current start has already logged opens the next."""
    if facts.first_line == 0:
        return False
    if _SERVER_VERSION.search(text):
        return facts.banner or facts.args or bool(facts.engines)
    if "non-default args" in text:
        return facts.args or bool(facts.engines)
    if _VERSION.search(text):
        return _process_name(process) in facts.engines
    return False


@dataclass
class _Traceback:
    frames: list[str] = field(default_factory=list)
    profiling_call_line: int | None = None


def _bytes(m: re.Match[str]) -> int | None:
    try:
        value = float(m.group("n").replace(",", ""))
    except ValueError:
        return None
    return int(value * _UNITS.get(m.group("unit") or "bytes", 1))


def _config(facts: Facts, fact: Fact, config: str) -> None:
    m = _MODEL.search(config)
    if m:
        facts.model = m.group("m")
    m = _EAGER.search(config)
    if m:
        facts.enforce_eager = m.group("e") == "True"
    m = _CAPTURE.search(config)
    if m:
        facts.capture_size = None if m.group("n") == "None" else int(m.group("n"))
        facts.capture_fact = fact
    m = _GRAPH_MODE.search(config)
    if m:
        facts.graph_mode = m.group("mode")


def _settings(facts: Facts, fact: Fact, text: str) -> None:
    m = _VERSION.search(text)
    if m:
        facts.engines.add(_process_name(fact.process))
        if facts.version is None:
            facts.version, facts.version_text = fact, m.group("v")
        _config(facts, fact, m.group("cfg"))
        return
    m = _SERVER_VERSION.search(text)
    if m:
        facts.banner = True
    if m and facts.version is None:
        facts.version, facts.version_text = fact, m.group("v")
    if "non-default args" in text:
        facts.args = True
        m = _SEQS_ARG.search(text)
        if m:
            facts.max_num_seqs, facts.seqs_fact = int(m.group("n")), fact
        m = _CAPTURE_ARG.search(text)
        if m and facts.capture_size is None:
            facts.capture_size, facts.capture_fact = int(m.group("n")), fact
        m = _MODEL.search(text.replace('"', "'"))
        if m and facts.model is None:
            facts.model = m.group("m")
    m = _SEQS_DEFAULT.search(text)
    if m and facts.seqs_fact is None:
        facts.max_num_seqs, facts.seqs_fact = int(m.group("n")), fact
    m = _BLOCK_SIZE.search(text)
    if m:
        facts.block_size, facts.block_fact = int(m.group("n")), fact


def collect(lines: Iterable[LogLine]) -> LogFacts:
    """The facts of a log's wanted lines (``read.read_lines``), start by start."""
    log = LogFacts()
    facts = Facts()
    tracebacks: dict[str, _Traceback] = {}
    for line in lines:
        log.lines_read = line.number
        text = line.message
        if _begins_a_start(facts, text, line.process):
            log.starts.append(facts)
            facts, tracebacks = Facts(), {}
        if facts.first_line == 0:
            facts.first_line = line.number
        facts.lines_read = line.number
        fact = Fact(line.number, text.strip(), line.process)
        _settings(facts, fact, text)
        m = _OVERRIDE.search(text)
        if m:
            facts.overrides.append(Override(fact, int(m.group("old")), int(m.group("new"))))
            continue
        for stage, phrase in STAGE_PHRASES:
            if phrase in text:
                facts.stages.setdefault(stage, [])
                if len(facts.stages[stage]) < MAX_FAILURES:
                    facts.stages[stage].append(fact)
                if stage == "kv_cache_sized" and facts.free_gib is None and _GIB.search(text):
                    facts.free_gib = fact
        if "Traceback (most recent call last)" in text:
            tracebacks[line.process] = _Traceback()
            continue
        frame = _FRAME.match(text)
        if frame:
            tb = tracebacks.setdefault(line.process, _Traceback())
            func = frame.group("func")
            if func in _FRAMES_KEPT and len(tb.frames) < 256:
                tb.frames.append(func)
            continue
        if _PROFILING_CALL.search(text):
            tb = tracebacks.setdefault(line.process, _Traceback())
            tb.profiling_call_line = line.number
            continue
        # vLLM logs some tracebacks as warnings (a step it goes on without): only an
        # error, or a bare traceback on standard error, is a failure.
        exc = _EXCEPTION.match(text.strip()) if line.level in _FAILING_LEVELS else None
        oom = bool(_OOM.search(text))
        if (exc or (oom and line.level in ("ERROR", "CRITICAL"))) and len(
            facts.failures
        ) < MAX_FAILURES:
            tb = tracebacks.pop(line.process, _Traceback())
            tried = _TRIED.search(text)
            facts.failures.append(
                Failure(
                    fact,
                    oom,
                    tuple(tb.frames),
                    tb.profiling_call_line,
                    _bytes(tried) if tried else None,
                )
            )
    log.starts.append(facts)
    return log
