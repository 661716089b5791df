"""`cgguard doctor --path`'s advice does what it says: the command it prints, run exactly
as printed (real CLI, in a subprocess), makes the next doctor run say "Not affected",
also where the tree's config excludes the file or a comment suppresses the line, which
a plain `cgguard fix TREE` leaves alone. And the ways around the bug without a code
change are the ones the tree's own vLLM start-up code shows."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import PRE_FIX_RUNNER_EXPR, REPO, UPSTREAM_FIXED_RUNNER_EXPR

RUNNER = Path("vllm/v1/worker/gpu_model_runner.py")
# vLLM's start-up files the workarounds are read from (the installed, fixed 0.32.0's
# real ones are copied into the trees below).
STARTUP_FILES = (
    "v1/worker/gpu_worker.py",
    "config/vllm.py",
    "engine/arg_utils.py",
    "v1/cudagraph_dispatcher.py",
)
COMMAND = re.compile(r"Run `([^`]+)`")


@pytest.fixture(scope="module")
def buggy_runner_text(vllm_dir: Path) -> str:
    text = (vllm_dir / "v1" / "worker" / "gpu_model_runner.py").read_text(encoding="utf-8")
    assert text.count(UPSTREAM_FIXED_RUNNER_EXPR) == 1, "installed runner changed shape"
    return text.replace(UPSTREAM_FIXED_RUNNER_EXPR, PRE_FIX_RUNNER_EXPR)


def env() -> dict:
    e = {k: v for k, v in os.environ.items() if k not in ("CGGUARD_MODE", "VLLM_PLUGINS")}
    e["PYTHONPATH"] = str(REPO)  # the cgguard of this checkout
    return e


def cgguard(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "cgguard", *args], capture_output=True, text=True, env=env(), cwd=cwd, timeout=600
    )


def run_printed(command: str, cwd: Path) -> subprocess.CompletedProcess:
    """Run a `cgguard ...` command line as a shell user would type it."""
    argv = shlex.split(command)
    assert argv[0] == "cgguard", command
    return cgguard(*argv[1:], cwd=cwd)


def tree(tmp_path: Path, runner_text: str, *, runner_at: Path = RUNNER, config: str | None = None) -> Path:
    root = tmp_path / "fork"
    (root / runner_at).parent.mkdir(parents=True)
    (root / runner_at).write_text(runner_text, encoding="utf-8")
    if config is not None:
        (root / "pyproject.toml").write_text(config, encoding="utf-8")
    return root


def suppress(runner_text: str, comment: str) -> str:
    line = f"min_blocks = {PRE_FIX_RUNNER_EXPR}"
    assert runner_text.count(line) == 1
    return runner_text.replace(line, f"{line}  {comment}")


CASES = {
    "plain": dict(),
    "excluded": dict(runner_at=Path("legacy") / RUNNER, config='[tool.cgguard]\nextend-exclude = ["legacy"]\n'),
    "ignored": dict(config='[tool.cgguard]\nignore = ["CGG001"]\n'),
    "per-file-ignores": dict(config='[tool.cgguard]\nper-file-ignores = { "vllm/v1/**" = ["CGG001"] }\n'),
    "noqa": dict(comment="# noqa: CGG001"),
    "cgguard-ignore": dict(comment="# cgguard: ignore[CGG001]"),
}
LEFT_OUT_BECAUSE = {
    "plain": None,
    "excluded": 'excluded by `extend-exclude = ["legacy"]` in {root}/pyproject.toml',
    "ignored": "CGG001 is left out by `select`/`ignore` in {root}/pyproject.toml",
    "per-file-ignores": "`per-file-ignores` in {root}/pyproject.toml ignore CGG001 there",
    "noqa": "suppressed by `# noqa: CGG001` on line {line}",
    "cgguard-ignore": "suppressed by `# cgguard: ignore[CGG001]` on line {line}",
}


@pytest.mark.parametrize("case", list(CASES))
def test_the_printed_command_makes_the_next_doctor_run_say_not_affected(tmp_path, buggy_runner_text, case):
    spec = dict(CASES[case])
    comment = spec.pop("comment", None)
    text = suppress(buggy_runner_text, comment) if comment else buggy_runner_text
    root = tree(tmp_path, text, **spec)
    runner = root / spec.get("runner_at", RUNNER)
    line = next(n for n, t in enumerate(text.splitlines(), 1) if f"min_blocks = {PRE_FIX_RUNNER_EXPR}" in t)

    before = cgguard("doctor", "--path", str(root))
    assert before.returncode == 1, before.stdout + before.stderr
    assert "AFFECTED: 1 per-token profiling block count" in before.stdout
    [command] = COMMAND.findall(before.stdout)
    because = LEFT_OUT_BECAUSE[case]
    if because is None:
        assert command == f"cgguard fix {root}"
        assert "would leave out" not in before.stdout
    else:
        # Doctor names what `cgguard fix TREE` leaves out, where, and why ...
        expected = because.format(root=root, line=line)
        assert f"`cgguard fix {root}` alone would leave out 1: {runner}:{line} ({expected})." in before.stdout
        if "suppressed" in because:  # no `cgguard fix` form reaches a suppressed line
            assert command == f"cgguard doctor --path {root} --fix"
        else:  # settings only: the file named, every configuration file ignored
            assert command == f"cgguard fix --isolated {runner}"
        # ... which is true: run as is, it changes nothing and doctor still says affected.
        plain = cgguard("fix", str(root))
        if case == "excluded":  # its only Python file excluded: nothing checked is an error
            assert plain.returncode == 2, plain.stdout + plain.stderr
            assert "nothing checked" in plain.stderr
        else:
            assert plain.returncode == 0, plain.stdout + plain.stderr
        assert runner.read_text(encoding="utf-8") == text
        assert cgguard("doctor", "--path", str(root)).returncode == 1
    # JSON carries the same command and what is left out.
    out = json.loads(cgguard("doctor", "--path", str(root), "--format", "json").stdout)
    assert out["fix"]["command"] == command and out["fix"]["fixes"] == 1
    assert [(x["path"], x["line"]) for x in out["fix"]["left_out"]] == ([] if because is None else [(str(runner), line)])

    done = run_printed(command, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    after = cgguard("doctor", "--path", str(root))
    assert after.returncode == 0, after.stdout + after.stderr
    assert "Not affected: no per-token profiling block count" in after.stdout
    # The fix is upstream's line, wherever the comment was.
    assert "min(self.max_num_reqs, self.compilation_config.max_cudagraph_capture_size)" in runner.read_text(
        encoding="utf-8"
    )


def test_unsafe_fix_is_advised_with_its_flag(tmp_path):
    # A worker mixin shows no request count: its fix assumes self.max_num_reqs (unsafe).
    root = tmp_path / "plugin"
    root.mkdir()
    (root / "mixin.py").write_text(
        "class ProfilingMixin:\n"
        "    def _init_minimal_kv_cache_for_profiling(self):\n"
        "        self.cache_config.num_gpu_blocks_override = self.compilation_config.max_cudagraph_capture_size\n"
    )
    before = cgguard("doctor", "--path", str(root))
    assert before.returncode == 1
    [command] = COMMAND.findall(before.stdout)
    assert command == f"cgguard fix {root} --unsafe-fixes"
    # The reason doctor gives is the one `cgguard check --format full` gives for that fix.
    full = cgguard("check", "--format", "full", str(root)).stdout
    [reason] = re.findall(r"= fix \(unsafe\): .* \(unsafe: (.*)\)$", full, re.M)
    assert "nothing shows that this class has" in reason
    assert f"1 of these fixes is marked unsafe: {root / 'mixin.py'}:3 ({reason}). Review the change." in before.stdout
    assert run_printed(command, cwd=tmp_path).returncode == 0
    assert cgguard("doctor", "--path", str(root)).returncode == 0


def test_no_command_when_no_fix_exists_only_what_to_edit(tmp_path):
    root = tmp_path / "lib"
    root.mkdir()
    (root / "build.py").write_text(
        "def profiling_blocks(compilation_config, cache_config):\n"
        "    num_blocks = compilation_config.max_cudagraph_capture_size or 1\n"
        "    cache_config.num_gpu_blocks_override = num_blocks\n"
    )
    proc = cgguard("doctor", "--path", str(root))
    assert proc.returncode == 1
    assert COMMAND.findall(proc.stdout) == []
    assert "cgguard fix" not in proc.stdout
    assert f"No automatic fix for {root / 'build.py'}:2: edit it by hand (`num_blocks` counts one block" in proc.stdout
    out = json.loads(cgguard("doctor", "--path", str(root), "--format", "json").stdout)
    assert out["fix"]["command"] is None and [b["line"] for b in out["fix"]["by_hand"]] == [2]


def test_doctor_fix_needs_a_path_and_unsafe_fixes_needs_fix(tmp_path):
    for args, message in (
        (["--fix"], "--fix works on a source tree named with --path"),
        (["--path", str(tmp_path), "--unsafe-fixes"], "--unsafe-fixes goes with --fix"),
    ):
        proc = cgguard("doctor", *args)
        assert proc.returncode == 2
        assert proc.stderr.count("\n") == 1 and message in proc.stderr and "Traceback" not in proc.stderr


def test_empty_folder_is_no_answer_not_a_clean_bill(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    proc = cgguard("doctor", "--path", str(empty))
    assert proc.returncode == 2
    assert "Not affected" not in proc.stdout
    assert (
        f"No answer: no per-token profiling block count in 0 files checked, because no Python file was found "
        f"in {empty}." in proc.stdout
    )
    assert "Nothing was checked" in proc.stdout
    out = json.loads(cgguard("doctor", "--path", str(empty), "--format", "json").stdout)
    assert out["affected"] is None and out["files_checked"] == 0


# ---- ways around the bug without a code change --------------------------------------


def startup_tree(tmp_path: Path, runner_text: str, vllm_dir: Path) -> Path:
    root = tree(tmp_path, runner_text)
    for rel in STARTUP_FILES:
        (root / "vllm" / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(vllm_dir / rel, root / "vllm" / rel)
    return root


def line_of(path: Path, needle: str) -> int:
    return next(n for n, t in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if needle in t)


def if_above(path: Path, needle: str) -> int:
    """The line of the `if (` whose condition holds ``needle`` on a later line."""
    lines = path.read_text(encoding="utf-8").splitlines()
    n = line_of(path, needle)
    while not lines[n - 1].strip().startswith("if "):
        n -= 1
    return n


def test_workarounds_are_read_from_the_trees_own_startup_code(tmp_path, buggy_runner_text, vllm_dir):
    root = startup_tree(tmp_path, buggy_runner_text, vllm_dir)
    worker = root / "vllm/v1/worker/gpu_worker.py"
    kv_line = line_of(worker, "if kv_cache_memory_bytes := self.cache_config.kv_cache_memory_bytes:")
    gate_line = if_above(worker, "current_platform.is_cuda_alike() or current_platform.is_xpu()")
    eager_line = line_of(root / "vllm/config/vllm.py", "self.compilation_config.cudagraph_mode = CUDAGraphMode.NONE")
    dispatcher = root / "vllm/v1/cudagraph_dispatcher.py"
    dispatch_line = if_above(dispatcher, "or num_tokens > max_size")

    proc = subprocess.run(
        [sys.executable, "-m", "cgguard", "doctor", "--path", str(root)],
        capture_output=True, text=True, env=env(), timeout=600,
    )
    assert proc.returncode == 1, proc.stderr
    block = proc.stdout.split("Without a code change: ", 1)[1]
    assert block.splitlines() == [
        "this vLLM profiles CUDA-graph memory (and builds the per-token cache) only when "
        "`( current_platform.is_cuda_alike() or current_platform.is_xpu() ) and "
        "self.vllm_config.compilation_config.cudagraph_mode != CUDAGraphMode.NONE` "
        f"({worker}:{gate_line}); these settings skip or shrink it:",
        "  --kv-cache-memory-bytes BYTES: determine_available_memory() returns before it profiles CUDA-graph "
        "memory. Cost: you size the KV cache by hand; vLLM no longer fits it to gpu_memory_utilization. "
        f"({worker}:{kv_line})",
        f"  --enforce-eager: sets cudagraph_mode to NONE ({root}/vllm/config/vllm.py:{eager_line}), so "
        "profile_cudagraph_memory() is not called. Cost: no CUDA graphs and no torch.compile: slower decode. "
        f"({worker}:{gate_line})",
        """  --compilation-config '{"cudagraph_mode": "NONE"}': profile_cudagraph_memory() runs only when """
        f"cudagraph_mode is not NONE. Cost: no CUDA graphs: slower decode. ({worker}:{gate_line})",
        "  --max-cudagraph-capture-size N: the profiling cache takes at most N blocks (the per-token count above is the "
        f"capture size). Cost: batches of more than N tokens run without CUDA graphs. ({dispatcher}:{dispatch_line})",
    ]
    out = json.loads(
        subprocess.run(
            [sys.executable, "-m", "cgguard", "doctor", "--path", str(root), "--format", "json"],
            capture_output=True, text=True, env=env(), timeout=600,
        ).stdout
    )
    w = out["workarounds"]
    assert w["evidence"] == f"{worker}:{gate_line}"
    assert [s["setting"] for s in w["settings"]] == [
        "--kv-cache-memory-bytes BYTES",
        "--enforce-eager",
        """--compilation-config '{"cudagraph_mode": "NONE"}'""",
        "--max-cudagraph-capture-size N",
    ]
    assert all(s["cost"] for s in w["settings"])


def test_a_gate_on_enforce_eager_only_offers_no_cudagraph_mode(tmp_path, buggy_runner_text, vllm_dir):
    # vLLM 0.18.0's worker profiles graph memory under `not enforce_eager and not
    # is_rocm()`: cudagraph_mode NONE does not skip it there, so it is not offered.
    root = startup_tree(tmp_path, buggy_runner_text, vllm_dir)
    worker = root / "vllm/v1/worker/gpu_worker.py"
    text = worker.read_text(encoding="utf-8")
    gate = re.search(
        r"if \(\n\s+current_platform\.is_cuda_alike\(\) or current_platform\.is_xpu\(\)\n\s+\) and "
        r"self\.vllm_config\.compilation_config\.cudagraph_mode != CUDAGraphMode\.NONE:",
        text,
    )
    assert gate, "installed gpu_worker.py changed shape"
    worker.write_text(
        text[: gate.start()] + "if not self.model_config.enforce_eager and not current_platform.is_rocm():"
        + text[gate.end():],
        encoding="utf-8",
    )
    out = json.loads(
        subprocess.run(
            [sys.executable, "-m", "cgguard", "doctor", "--path", str(root), "--format", "json"],
            capture_output=True, text=True, env=env(), timeout=600,
        ).stdout
    )
    settings = {s["setting"]: s for s in out["workarounds"]["settings"]}
    assert list(settings) == ["--kv-cache-memory-bytes BYTES", "--enforce-eager", "--max-cudagraph-capture-size N"]
    assert settings["--enforce-eager"]["effect"] == "profile_cudagraph_memory() runs only without enforce_eager"
    assert out["workarounds"]["profiling_condition"] == (
        "not self.model_config.enforce_eager and not current_platform.is_rocm()"
    )


def test_without_startup_code_nothing_is_claimed(tmp_path, buggy_runner_text):
    root = tree(tmp_path, buggy_runner_text)
    proc = subprocess.run(
        [sys.executable, "-m", "cgguard", "doctor", "--path", str(root)],
        capture_output=True, text=True, env=env(), timeout=600,
    )
    assert proc.returncode == 1
    assert "--kv-cache-memory-bytes" not in proc.stdout and "--enforce-eager" not in proc.stdout
    assert (
        f"Without a code change: cannot tell: no v1/worker/gpu_worker.py (vLLM's start-up code) under {root / 'vllm'}, "
        "so no setting is confirmed to skip the per-token cache." in proc.stdout
    )


SMALL_RUNNER = (
    "class GPUModelRunner:\n"
    "    def _init_minimal_kv_cache_for_profiling(self):\n"
    "        min_blocks = self.compilation_config.max_cudagraph_capture_size or 1{comment}\n"
    "        self.cache_config.num_gpu_blocks_override = min_blocks\n"
)


def test_excluded_and_suppressed_together_take_doctor_fix(tmp_path):
    root = tmp_path / "fork"
    (root / "legacy").mkdir(parents=True)
    (root / "legacy" / "a.py").write_text(SMALL_RUNNER.format(comment=""))
    (root / "b.py").write_text(SMALL_RUNNER.format(comment="  # noqa"))
    (root / "pyproject.toml").write_text('[tool.cgguard]\nexclude = ["legacy"]\n')
    before = cgguard("doctor", "--path", str(root))
    assert before.returncode == 1
    assert "AFFECTED: 2 per-token profiling block counts" in before.stdout
    [command] = COMMAND.findall(before.stdout)
    assert command == f"cgguard doctor --path {root} --fix"
    assert (
        f"`cgguard fix {root}` alone would leave out 2: {root}/b.py:3 (suppressed by `# noqa` on line 3); "
        f'{root}/legacy/a.py:3 (excluded by `exclude = ["legacy"]` in {root}/pyproject.toml).'
    ) in before.stdout
    done = run_printed(command, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Fixed 2 per-token counts; diagnosing again." in done.stderr
    assert "Not affected" in done.stdout
    assert cgguard("doctor", "--path", str(root)).returncode == 0


def test_a_broken_config_is_gone_around_with_isolated(tmp_path):
    root = tmp_path / "fork"
    root.mkdir()
    (root / "r.py").write_text(SMALL_RUNNER.format(comment=""))
    (root / "pyproject.toml").write_text("[tool.cgguard]\nbogus = 1\n")
    assert cgguard("fix", str(root)).returncode == 2  # what a plain fix does here
    before = cgguard("doctor", "--path", str(root))
    assert before.returncode == 1
    [command] = COMMAND.findall(before.stdout)
    assert command == f"cgguard fix --isolated {root}/r.py"
    assert f"{root}/r.py:3 (`cgguard fix {root}` stops at a configuration error: " in before.stdout
    assert run_printed(command, cwd=tmp_path).returncode == 0
    assert cgguard("doctor", "--path", str(root)).returncode == 0


def test_unsafe_reason_for_a_capture_size_checked_for_none(tmp_path):
    # The class shows its request count, but the file checks the capture size for
    # None: the fix is unsafe for that reason, not for an assumed request count.
    root = tmp_path / "plugin"
    root.mkdir()
    (root / "runner.py").write_text(
        "class Runner:\n"
        "    def __init__(self):\n"
        "        self.max_num_reqs = 4\n"
        "    def _init_minimal_kv_cache_for_profiling(self):\n"
        "        if self.compilation_config.max_cudagraph_capture_size is None:\n"
        "            pass\n"
        "        min_blocks = self.compilation_config.max_cudagraph_capture_size or 1\n"
        "        self.cache_config.num_gpu_blocks_override = min_blocks\n"
    )
    before = cgguard("doctor", "--path", str(root))
    full = cgguard("check", "--format", "full", str(root)).stdout
    [reason] = re.findall(r"= fix \(unsafe\): .* \(unsafe: (.*)\)$", full, re.M)
    assert "min() with None raises" in reason
    assert f"({reason}). Review the change." in before.stdout
    assert "request count is assumed" not in before.stdout


def test_header_counts_every_finding_it_lists(tmp_path):
    root = tmp_path / "plugin"
    root.mkdir()
    per_token = "        self.cache_config.num_gpu_blocks_override = self.compilation_config.max_cudagraph_capture_size\n"
    with_max = (
        "        self.cache_config.num_gpu_blocks_override = "
        "max(self.compilation_config.max_cudagraph_capture_size or 1, self.max_num_reqs)\n"
    )
    head = "class R:\n    max_num_reqs = 4\n    def _init_minimal_kv_cache_for_profiling(self):\n"
    (root / "a.py").write_text(head + per_token)
    (root / "b.py").write_text(head + with_max)
    out = cgguard("doctor", "--path", str(root)).stdout
    listed = [line for line in out.splitlines() if re.match(r"  \S+:\d+:\d+: CGG00\d ", line)]
    assert len(listed) == 2
    assert "AFFECTED: 1 per-token profiling block count and 1 review note (CGG002) in 2 files checked:" in out
    (root / "a.py").unlink()
    out = cgguard("doctor", "--path", str(root)).stdout
    assert "Not affected: no per-token profiling block count in 1 file checked.\n1 review note (CGG002):\n" in out


def test_other_rules_findings_are_named_by_their_rule(tmp_path):
    """A CGG003 finding (a token count where a request count belongs) is listed under its own
    name, not as CGG002's review note, and does not make a tree affected."""
    root = tmp_path / "plugin"
    root.mkdir()
    (root / "caps.py").write_text(
        "def cap_capture_sizes(compilation_config, num_mamba_cache_blocks):\n"
        "    if compilation_config.max_cudagraph_capture_size > num_mamba_cache_blocks:\n"
        "        compilation_config.max_cudagraph_capture_size = num_mamba_cache_blocks\n"
    )
    proc = cgguard("doctor", "--path", str(root))
    assert "Not affected: no per-token profiling block count in 1 file checked.\n1 unit finding (CGG003):\n" in proc.stdout
    assert "review note" not in proc.stdout
    assert "Review the CGG003 findings:" in proc.stdout
