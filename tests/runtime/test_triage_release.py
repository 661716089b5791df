"""`cgguard triage` on logs of the installed vLLM release: a real run, and lines built
from the release's own logger calls and formatter.

The real run starts the tiny Llama once, in a subprocess, with vLLM's own process
decoration and DEBUG logging, and without cgguard's plugin (so the log is vLLM's
alone). The CPU worker never profiles CUDA-graph memory, so the harness then calls
the runner's own ``_init_minimal_kv_cache_for_profiling`` in the worker, as the GPU
worker does at start-up: first with the default capture size, 512 (it fits), then
with a capture size whose per-token cache cannot be mapped at all (2**33 blocks of
64 KiB per layer, beyond any x86-64 address space), so the release's own
allocation fails the way an out-of-memory one does. A fixed release asks for the
bound both times and fails neither.

The GPU-only shapes (hybrid models, graph capture, TP workers) are built by
``tests/ops/test_triage_shapes.py`` from this release's logger format strings,
read from its installed source, and formatted by its own formatter.
"""

from __future__ import annotations

import ast
import io
import json
import logging
import subprocess
import sys
from pathlib import Path

import pytest

from cgguard.ops.triage.advice import cost_rank
from cgguard.ops.triage.verdict import CANNOT_TELL, COUNT_NEEDED, NOT_THIS_BUG, THIS_BUG
from cgguard.ops.release.workarounds import find_workarounds
from tests.conftest import REPO, installed_vllm_dir
from tests.ops.test_triage_shapes import V0_25_0, ReleaseLog, Src, shapes, verdict_of
from tests.runtime.conftest import RELEASE, VLLM_RELEASE, clean_env, write_tiny_llama

HUGE = 1 << 33  # blocks: 2**33 x 64 KiB per layer = 512 TiB, more than a process can map
DEFAULT_SEQS = 256  # what vLLM defaults max_num_seqs to here (its "Defaulting" line says)
STARTED, FITTED = "cgguard-harness: engine started", "cgguard-harness: 512-block cache fitted"

HARNESS = f"""
import sys
from vllm import LLM


def profile(worker, capture):
    runner = worker.model_runner
    import torch
    accelerator = getattr(torch, "accelerator", None)
    try:
        accelerator.synchronize()
    except Exception:  # a CUDA torch without a driver (see conftest.no_gpu_synchronize)
        accelerator.synchronize = accelerator.empty_cache = lambda *a, **k: None
    real, blocks = runner.kv_cache_config, runner.cache_config.num_gpu_blocks
    saved = runner.compilation_config.max_cudagraph_capture_size
    runner.compilation_config.max_cudagraph_capture_size = capture
    runner._cleanup_profiling_kv_cache()
    try:
        runner._init_minimal_kv_cache_for_profiling()
    finally:
        runner._cleanup_profiling_kv_cache()
        runner.compilation_config.max_cudagraph_capture_size = saved
        runner.initialize_kv_cache(real)
        runner.cache_config.num_gpu_blocks = blocks


def main():
    llm = LLM(model=sys.argv[1], load_format="dummy", skip_tokenizer_init=True, max_model_len=128,
              dtype="float32", enforce_eager=True, gpu_memory_utilization=0.2)
    print({STARTED!r}, flush=True)
    llm.collective_rpc(profile, args=(512,))
    print({FITTED!r}, flush=True)
    llm.collective_rpc(profile, args=({HUGE},))


if __name__ == "__main__":
    main()
"""


@pytest.fixture(scope="module")
def real_log(tmp_path_factory) -> str:
    """The whole log of one harness run (standard output and error, as they came)."""
    folder = tmp_path_factory.mktemp("triage-run")
    model = write_tiny_llama(folder / "tiny-llama")
    script = folder / "harness.py"
    script.write_text(HARNESS)
    env = clean_env(
        VLLM_LOGGING_LEVEL="DEBUG", VLLM_ALLOW_INSECURE_SERIALIZATION="1", VLLM_PLUGINS=""
    )
    proc = subprocess.run(
        [sys.executable, str(script), str(model)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=600,
    )
    (folder / "vllm.log").write_text(proc.stdout)
    assert STARTED in proc.stdout and FITTED in proc.stdout, proc.stdout[-4000:]
    assert (proc.returncode != 0) is RELEASE.affected, proc.stdout[-4000:]
    return proc.stdout


def _upto(log: str, marker: str) -> str:
    return log[: log.index(marker)]


def test_real_start_up_without_profiling_is_not_this_bug(real_log):
    v = verdict_of(_upto(real_log, STARTED))
    assert v.kind == NOT_THIS_BUG, v.summary
    assert "enforce_eager=True" in v.summary
    assert v.version == VLLM_RELEASE


def test_real_profiling_cache_that_fits_is_not_this_bugs_failure(real_log):
    v = verdict_of(_upto(real_log, FITTED))
    if RELEASE.affected:
        # Nothing after the cache says how profiling went: the capture it starved
        # may still fail, which would be this bug.
        assert v.kind == CANNOT_TELL, v.summary
        assert "but no line after it was recognised" in v.summary
    else:
        assert v.kind == NOT_THIS_BUG, v.summary
    assert "was built and fit" in v.summary
    assert v.numbers["max_num_seqs"] == DEFAULT_SEQS
    # Left at its default, max_num_seqs shows only in a DEBUG line.
    [seqs] = [e for e in v.evidence if e.what.startswith("max_num_seqs")]
    assert seqs.text.startswith(f"Defaulting max_num_seqs to {DEFAULT_SEQS}")
    assert " DEBUG " in f" {real_log.splitlines()[seqs.line - 1]}"
    if release_log().profiling_logs_override:
        # The release logs the per-token count of the profiling call itself.
        assert (v.numbers["profiling_blocks"], v.numbers["bound_blocks"]) == (512, DEFAULT_SEQS)
        assert f"(512 blocks where {DEFAULT_SEQS} suffice)" in v.summary
    else:
        assert "Overriding num_gpu_blocks" not in _upto(real_log, FITTED)
        assert v.numbers["profiling_blocks"] is None


def test_real_failure_in_the_releases_own_profiling_allocation(real_log, tmp_path):
    if not RELEASE.affected:
        # A fixed release asked for min(256, 2**33) = 256 blocks, which fit.
        v = verdict_of(real_log)
        assert v.kind == NOT_THIS_BUG and "was built and fit" in v.summary, v.summary
        return
    v = verdict_of(real_log)
    lines = real_log.splitlines()
    [failure] = [e for e in v.evidence if e.what.startswith("out of memory")]
    assert "inside _init_minimal_kv_cache_for_profiling" in failure.what
    assert "can't allocate memory" in lines[failure.line - 1]
    if release_log().profiling_logs_override:
        assert v.kind == THIS_BUG, v.summary
        assert (v.numbers["profiling_blocks"], v.numbers["bound_blocks"]) == (HUGE, DEFAULT_SEQS)
        [count] = [e for e in v.evidence if e.what.startswith("the profiling KV cache")]
        assert f"num_gpu_blocks_override={HUGE}" in lines[count.line - 1]
        options: tuple[str, ...] = ()
    else:
        # The release does not log the count, and the harness set the capture size
        # after the config line was logged: triage needs to be told.
        assert v.kind == CANNOT_TELL and v.needs == COUNT_NEEDED, v.summary
        v = verdict_of(real_log, capture_size=HUGE)
        assert v.kind == THIS_BUG and v.numbers["bound_blocks"] == DEFAULT_SEQS, v.summary
        options = ("--max-cudagraph-capture-size", str(HUGE))
    path = tmp_path / "vllm.log"
    path.write_text(real_log)
    proc = subprocess.run(
        [sys.executable, "-m", "cgguard", "triage", str(path), "--format", "json", *options],
        capture_output=True,
        text=True,
        timeout=120,
        env=clean_env(),
    )
    assert proc.returncode == 1, proc.stderr
    document = json.loads(proc.stdout)
    # The log's release is the one installed here: its own settings, cheapest first.
    found = find_workarounds(str(installed_vllm_dir())).found
    assert found
    expected = [w.setting for w in sorted(found, key=cost_rank)]
    assert [s["action"] for s in document["advice"][2:]] == expected
    assert VLLM_RELEASE in document["advice_note"]


# --- lines built from the release's own logger calls ---------------------------------

LOG_METHODS = {"debug", "info", "warning", "error", "exception", "info_once", "warning_once"}


def _sources(phrase: str, root: Path) -> list[tuple[str, ast.Module]]:
    found = []
    for path in sorted(root.rglob("*.py")):
        text = path.read_text(encoding="utf-8", errors="replace")
        if phrase in text:
            found.append((str(path.relative_to(root)), ast.parse(text)))
    return found


def _text_of(node: ast.AST, values: str = "20.00") -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):  # an f-string: its values filled in
        return "".join(p.value if isinstance(p, ast.Constant) else values for p in node.values)
    return None


def logger_call(
    phrase: str, *, needs_percent: bool = False, avoid: str = "[XPU]", root: Path | None = None
) -> Src:
    """The release's logger call whose message holds ``phrase`` (the shortest such
    message, where there are several: the plain form of the line), read from the
    release at ``root`` (the installed one by default)."""
    root = root or installed_vllm_dir()
    found: list[Src] = []
    for rel, tree in _sources(phrase, root):
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                continue
            if node.func.attr not in LOG_METHODS or not node.args:
                continue
            fmt = _text_of(node.args[0])
            if fmt is None and isinstance(node.args[0], ast.Name):
                fmt = _assigned_text(tree, node.args[0].id, phrase)
            if fmt and phrase in fmt and avoid not in fmt and ("%" in fmt or not needs_percent):
                found.append(Src(fmt, rel, node.lineno))
    assert found, f"vLLM at {root} has no logger call saying {phrase!r}"
    return min(found, key=lambda src: len(src.fmt))


def _assigned_text(tree: ast.Module, name: str, phrase: str) -> str | None:
    """The text assigned to ``name`` (``msg = (f"..." ...)``), when it holds ``phrase``."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == name for t in node.targets
        ):
            text = _text_of(node.value)
            if text and phrase in text:
                return text
    return None


def _string_holding(phrase: str, root: Path) -> str:
    for _, tree in _sources(phrase, root):
        for node in ast.walk(tree):
            text = _text_of(node, "X")
            if text and phrase in text:
                return text
    raise AssertionError(f"vLLM at {root} has no string saying {phrase!r}")


def _functions(rel: str, root: Path) -> dict[str, ast.FunctionDef]:
    tree = ast.parse((root / rel).read_text(encoding="utf-8"))
    return {n.name: n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}


def release_log(root: Path | None = None, version: str = VLLM_RELEASE) -> ReleaseLog:
    """A release's start-up logging, read from its source at ``root`` (by default
    the installed release's)."""
    root = root or installed_vllm_dir()

    def said(phrase: str, **options) -> Src:
        return logger_call(phrase, root=root, **options)

    override = said("Overriding num_gpu_blocks=")
    kv_utils = _functions(override.file, root)
    enclosing = next(
        f.name
        for f in kv_utils.values()
        if f.lineno <= override.line <= (f.end_lineno or f.lineno)
        and not any(
            g is not f and f.lineno < g.lineno <= override.line <= (g.end_lineno or 0)
            for g in kv_utils.values()
        )
    )
    runner = _functions("v1/worker/gpu_model_runner.py", root)
    allocation = runner["_init_minimal_kv_cache_for_profiling"]
    source = (root / "v1/worker/gpu_model_runner.py").read_text().splitlines()
    [call] = [
        n
        for n in ast.walk(allocation)
        if isinstance(n, ast.Call)
        and isinstance(n.func, ast.Attribute)
        and n.func.attr == "initialize_kv_cache"
    ]
    frame_lines = {name: f.lineno for name, f in runner.items()}
    frame_lines.update(
        {name: f.lineno for name, f in _functions("v1/worker/gpu_worker.py", root).items()}
    )
    frame_lines["_init_minimal_kv_cache_for_profiling"] = call.lineno
    return ReleaseLog(
        version=version,
        engine=said("Initializing a V1 LLM engine"),
        non_default=said("non-default args"),
        block_size=said("to ensure that attention page size is >= mamba page size"),
        override=override,
        profiling=said("Profiling CUDA graph memory"),
        estimate=said("Estimated CUDA graph memory", needs_percent=True),
        available=said("Available KV cache memory"),
        failed=said("EngineCore failed to start"),
        ready=said("init engine (profile, create kv cache, warmup model) took", needs_percent=True),
        skipped=said("skipped memory profiling"),
        no_memory=_string_holding("No available memory for the cache blocks", root),
        # The profiling call asks get_kv_cache_config_from_groups for its config; the
        # releases that log the count there do it in may_override_num_blocks.
        profiling_logs_override=enclosing == "may_override_num_blocks",
        allocation_call=source[call.lineno - 1].strip(),
        frame_lines=frame_lines,
    )


def vllm_emit():
    """Format lines as this release does: its logger's formatter and process prefix
    (0.32.0 puts the prefix in the log format; earlier releases wrap the stream)."""
    from vllm.logger import _DATE_FORMAT, _FORMAT
    from vllm.logging_utils import NewLineFormatter

    formatter = NewLineFormatter(_FORMAT, _DATE_FORMAT)
    prefix_in_format = "%(vllm_process_name)s" in _FORMAT
    root = installed_vllm_dir()

    def emit(process: str, level: str, src: Src, args: tuple, tb: str | None) -> list[str]:
        record = logging.LogRecord(
            "vllm",
            getattr(logging, level),
            str(root / src.file),
            src.line,
            src.fmt,
            args or None,
            None,
        )
        if tb:
            record.exc_text = tb
        name, _, pid = (process or "MainProcess pid=1").partition(" pid=")
        out = io.StringIO()
        if prefix_in_format:
            record.vllm_process_name, record.process = name, int(pid)
        elif process:
            from vllm.utils.system_utils import _add_prefix

            _add_prefix(out, name, int(pid))  # type: ignore[arg-type]
        out.write(formatter.format(record) + "\n")
        return out.getvalue().rstrip("\n").split("\n")

    return emit


def _vllm_0_25_0_source() -> Path:
    """vLLM 0.25.0's package folder: the installed one in its environment, else the one
    in the repository's .venv-vllm-0.25.0 (scripts/test builds it before any suite)."""
    if V0_25_0.version == VLLM_RELEASE:
        return installed_vllm_dir()
    found = sorted((REPO / ".venv-vllm-0.25.0").glob("lib/python3*/site-packages/vllm"))
    assert found, "vLLM 0.25.0's environment is missing: run scripts/vllm-envs 0.25.0"
    return found[-1]


def test_the_unit_tests_strings_are_vllm_0_25_0s():
    """tests/ops copies 0.25.0's logger strings; they must be the release's own."""
    ours, theirs = V0_25_0, release_log(_vllm_0_25_0_source(), V0_25_0.version)
    for name in (
        "engine",
        "non_default",
        "block_size",
        "override",
        "profiling",
        "estimate",
        "available",
        "failed",
        "ready",
    ):
        a, b = getattr(ours, name), getattr(theirs, name)
        assert (a.fmt, a.file, a.line) == (b.fmt, b.file, b.line), name
    assert theirs.skipped.fmt.startswith(ours.skipped.fmt.split("20.00 GiB")[0].split("78.50")[0])
    assert ours.no_memory == theirs.no_memory
    assert ours.profiling_logs_override is theirs.profiling_logs_override
    assert ours.allocation_call == theirs.allocation_call


def _shapes():
    return shapes(vllm_emit(), release_log())


def test_built_shapes_get_their_verdicts_on_this_release():
    results = []
    for shape in _shapes():
        v = verdict_of(shape.text)
        expected = shape.verdict if RELEASE.affected else shape.fixed_verdict
        results.append((shape.name, v.kind, expected, v.summary))
        if RELEASE.affected and v.kind == expected:
            for key, value in shape.numbers.items():
                assert v.numbers.get(key) == value, (shape.name, key, v.numbers)
    wrong = [r for r in results if r[1] != r[2]]
    assert not wrong, wrong
    assert len(results) >= 8 and sum(r[2] != THIS_BUG for r in results) >= len(results) / 2


def test_real_log_shape_matches_the_release_source(real_log):
    """What the built shapes assume of this release is what its real run logged."""
    fitted = _upto(real_log, FITTED)
    logs_count = "Overriding num_gpu_blocks=0 with num_gpu_blocks_override=512" in fitted
    assert logs_count is (release_log().profiling_logs_override and RELEASE.affected)
    assert f"Initializing a V1 LLM engine (v{VLLM_RELEASE})" in real_log
    # vLLM's process decoration is on the engine's lines.
    assert "(EngineCore" in real_log


def _non_default_args_line(model: str, **engine_args) -> str:
    """The 'non-default args' line this release's own code logs for these arguments."""
    import importlib

    from vllm.engine.arg_utils import EngineArgs
    from vllm.logger import _DATE_FORMAT, _FORMAT
    from vllm.logging_utils import NewLineFormatter

    src = release_log().non_default
    module = importlib.import_module("vllm." + src.file[: -len(".py")].replace("/", "."))
    records: list[logging.LogRecord] = []
    handler = logging.Handler()
    handler.emit = records.append  # type: ignore[method-assign]
    # The handler listens on the module's own logger, at INFO whatever this test
    # process's logging configuration says (vLLM logs the line at INFO).
    module_logger = module.logger
    level = module_logger.level
    module_logger.addHandler(handler)
    module_logger.setLevel(logging.INFO)
    try:
        module.log_non_default_args(EngineArgs(model=model, **engine_args))
    finally:
        module_logger.removeHandler(handler)
        module_logger.setLevel(level)
    [record] = [r for r in records if "non-default args" in r.getMessage()]
    if "%(vllm_process_name)s" in _FORMAT:
        record.vllm_process_name, record.process = "APIServer", 1
    return NewLineFormatter(_FORMAT, _DATE_FORMAT).format(record)


def test_the_releases_non_default_args_line_shows_max_num_seqs_only_when_set(tiny_llama):
    from cgguard.ops.triage.facts import collect
    from cgguard.ops.triage.read import read_lines

    def seqs(line: str) -> int | None:
        [start] = collect(read_lines(io.BytesIO(line.encode()), "log")).starts
        return start.max_num_seqs

    assert seqs(_non_default_args_line(str(tiny_llama), max_num_seqs=7)) == 7
    assert seqs(_non_default_args_line(str(tiny_llama), max_model_len=128)) is None
