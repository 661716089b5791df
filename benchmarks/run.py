#!/usr/bin/env python3
"""Speed benchmark for cgguard: cgguard against semgrep, Fixit and grep.

Run it with the project's interpreter, which has cgguard installed:

    .venv/bin/python benchmarks/run.py                 # everything, 5 repetitions
    .venv/bin/python benchmarks/run.py --quick         # 1 repetition, no warm-up, no tree-wide semgrep, no busy rows
    .venv/bin/python benchmarks/run.py --no-busy       # everything but the rows beside a busy core
    .venv/bin/python benchmarks/run.py --tools cgguard,grep --repeat 3
    .venv/bin/python benchmarks/run.py --fixit-tree    # also Fixit over the whole tree, once (minutes)

What it does (standard library only):

1. Builds the corpora under ``--work`` (default ``benchmarks/.work``, gitignored):
   ``tree`` (the .py/.pyi files of the corpus, by default the installed vLLM package,
   found without importing vLLM), ``tree-buggy`` (the same with the old per-token
   formula planted in the runner), ``runner/`` (that runner file alone),
   ``noparse/`` (files with nothing for any rule to look at), ``plugin/`` (a
   plugin-sized tree with nothing to parse: the files of the corpus's biggest
   top-level folder that hold no capture size), and ``project/`` (the buggy tree
   as a fork's project, ``pyproject.toml`` at its root, whose runner takes the
   per-token count from a helper in another module: a one-file run of the runner
   needs the project index), ``fork/`` and ``fork-fixed/`` (the buggy tree and the
   original one as a fork's checkout: ``vllm/`` under a folder with ``.git``, made by
   ``git init``, and ``pyproject.toml``), and ``large-silent/`` (one generated module of
   about 270 KB, :mod:`largesilent`, whose capture size only counts tokens).
2. Installs semgrep and Fixit into ``<work>/venv-tools`` when they are asked for and
   missing (skipped when present).
3. Runs every row once untimed (page cache, byte-code), then ``--repeat`` rounds of
   all rows interleaved, so noise from the shared machine spreads over every tool.
   cgguard runs twice on each tree, by default and with ``CGGUARD_JOBS=1`` (one
   process); with ``--busy`` (the default for a full run) those rows run once more
   while another process spins on one core, started before and stopped after each
   round's busy rows.
4. Runs each tree-wide tool once more, untimed, on the original tree (no bug
   planted), to show false positives.
5. Prints the machine, a Markdown table of medians with ratios, targets and
   pass/fail, and finding counts per tool, ready to paste into docs/performance.md.

Exit code: 0 when every command ran as expected, 2 when one failed (its output is
shown), 1 with ``--strict`` when a target was missed.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.metadata
import importlib.util
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

HERE = Path(__file__).resolve().parent
# Each rule's documented example cases: rules/<CODE>/cases/{flagged,silent}/*.pycase.
RULE_CASES = HERE.parent / "rules"
RULES = HERE / "rules"
DEFAULT_WORK = HERE / ".work"
# fixit-cgguard and codemod: cgguard's own rule through Fixit and libcst's codemod CLI
# (cgguard.ecosystem). The codemod runs with this interpreter (cgguard and libcst); Fixit
# is not in .venv (its click pin conflicts with vLLM's), so fixit-cgguard runs with the
# tools' environment's Fixit and this checkout's cgguard on PYTHONPATH.
ALL_TOOLS = ("cgguard", "semgrep", "fixit", "grep", "fixit-cgguard", "codemod")
# Where the runner lives inside a vLLM package.
DEFAULT_RUNNER = "v1/worker/gpu_model_runner.py"
FIXIT_SPEC = "fixit==2.2.1"
SEMGREP_SPEC = "semgrep"

# Upstream's fix (vLLM PR #48483), in any formatting, and the line it replaced.
FIXED_FORMULA = re.compile(
    r"\(\s*min\(\s*self\.max_num_reqs\s*,\s*self\.compilation_config\.max_cudagraph_capture_size\s*,?\s*\)"
    r"\s*or\s+1\s*\)"
)
BUGGY_FORMULA = "self.compilation_config.max_cudagraph_capture_size or 1"
# What grep looks for: the literal of the buggy formula.
GREP_LITERAL = "max_cudagraph_capture_size or 1"
# Files with none of these words give no rule anything to parse.
_PARSE_WORDS = ("capture", "batch_sizes", "cudagraph")
NOPARSE_FILES = 20
# cgguard's byte prefilter (cgguard/static/driver/prefilter.py): a file without
# these is settled on its bytes, never parsed.
CAPTURE_NEEDLES = (b"capture_size", b"batch_sizes")
# Bump when the layout of the work folder changes: older work folders are rebuilt.
CORPUS_LAYOUT = "5 (fork/, fork-fixed/, tree-fixed/)"
# The project corpus: the runner's profiling count comes from this helper,
# planted at the end of the module beside the runner (vLLM's ``v1/worker/utils.py``);
# its second function uses it as a per-token size, so not every use is a block count
# and the finding stays at the runner's use (cgguard/static/driver/project.py).
PROJECT_HELPER_MODULE = "utils.py"
PROJECT_HELPER = "cudagraph_capture_size"
PROJECT_HELPER_CODE = f'''

def {PROJECT_HELPER}(compilation_config) -> int:
    """The largest batch size CUDA graphs are captured for."""
    return compilation_config.max_cudagraph_capture_size


def cudagraph_buffer_rows(compilation_config) -> int:
    """Rows of a per-token buffer that holds the largest captured batch."""
    return {PROJECT_HELPER}(compilation_config) + 1
'''

# Targets: ratios of medians taken in the same rounds (against a floor row, a baseline
# commit or semgrep), never absolute times: on a shared machine an absolute time measures
# the machine (issue 37).
# semgrep running taint rules of equal reach (benchmarks/rules/semgrep.yml, one rule for
# each of cgguard's) over the whole tree takes at least this many times cgguard's every rule.
TARGET_SEMGREP_RATIO = 20.0
# The runner file's check and fix: at most these many times `python -c "import libcst"`
# (start-up and the parser's import, the floor of any run that writes a fix).
TARGET_RUNNER_CHECK_RATIO = 2.2
TARGET_RUNNER_FIX_RATIO = 2.6
# A one-file run that needs the project index is the same pre-commit call on the same
# runner file as the runner row, so it keeps the runner check's target (and its 1 finding);
# a file with nothing to parse never builds the index: its target is its 0 findings.
TARGET_PROJECT_RUNNER_RATIO = TARGET_RUNNER_CHECK_RATIO
# One file with this many findings (a generated plugin module, MANY_FINDINGS_FUNCTION once
# per finding): its check at most this many times `import libcst`, and twice the findings at
# most this many times as long (linear).
MANY_FINDINGS = 2_000
TARGET_MANY_FINDINGS_RATIO = 12.0
TARGET_MANY_FINDINGS_LINEAR = 2.1
# CGG001/CGG002 alone over the whole tree against the --baseline commit's check (which has
# those two rules only): no slower. The ratio of the two medians may be up to this much
# above 1, the allowance for noise of the default-against-one-process target below.
TARGET_VS_BASELINE = 1.05
TARGET_PEAK_RSS_MB = 200.0
# A fork's checkout (``.git`` and ``pyproject.toml`` at its top: every module a module of
# the project) costs about what the same files cost as a package: check and fix of the
# buggy tree, and check of the fixed one, at most this many times the package's, in the
# same rounds; and the peak memory of its check and its fix at most these.
TARGET_FORK_RATIO = 1.3
TARGET_FORK_CHECK_MB = 200.0
TARGET_FORK_FIX_MB = 250.0
# One large module that names the capture size and a sink but reports
# nothing is read by the core on Python's own tree: its check takes at most this many times
# its floor row (start-up and Python's parser alone on it), and libcst is never imported.
LARGE_SILENT_NAME = "attention_backend.py"
TARGET_LARGE_SILENT_RATIO = 2.0
# The floor under any check that reads that module as code: start-up and Python's parser.
PARSE_ONLY = "import ast, sys; ast.parse(open(sys.argv[1], 'rb').read())"
# The generated module with many findings: a plugin's profiling helper, once per finding
# (the function tests/robustness/test_generated_files.py times for linear growth), each
# function's count the capture size, stored as the cache's block override: one CGG001
# finding with a fix each.
MANY_FINDINGS_FUNCTION = (
    "def plugin_profiling_blocks_{i}(vllm_config):\n"
    "    compilation_config = vllm_config.compilation_config\n"
    "    num_blocks = compilation_config.max_cudagraph_capture_size or 16\n"
    "    vllm_config.cache_config.num_gpu_blocks_override = num_blocks\n\n\n"
)
# The default (CGGUARD_JOBS unset) is never slower than one process.
# Rows that take the same path in both runs differ by noise alone: the median of the
# per-round ratios default / one process may be up to this much above 1.
TARGET_DEFAULT_VS_ONE_JOB = 1.05
# Every rule (the default selection, CGG001-CGG003) over the whole tree: at most this many
# times CGG001/CGG002 alone, in the same rounds (issue 37).
TARGET_ALL_RULES_RATIO = 1.5


class BenchError(Exception):
    """A problem that stops the benchmark; the message is one line for the user."""


# ---- corpora -----------------------------------------------------------------


def default_corpus() -> Path:
    """The installed vLLM package's folder, found without importing vLLM."""
    spec = importlib.util.find_spec("vllm")
    if spec is None or not spec.submodule_search_locations:
        raise BenchError("vLLM is not installed in this interpreter; pass --corpus DIR")
    return Path(list(spec.submodule_search_locations)[0])


def _source_files(root: Path) -> list[Path]:
    files = []
    for folder, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        files.extend(Path(folder) / n for n in sorted(names) if n.endswith((".py", ".pyi")))
    return files


def _fingerprint(root: Path, files: list[Path]) -> str:
    total = sum(f.stat().st_size for f in files)
    newest = max((f.stat().st_mtime_ns for f in files), default=0)
    return f"{root.resolve()}\n{len(files)} {total} {newest}\nlayout {CORPUS_LAYOUT}\n"


@dataclasses.dataclass
class Corpora:
    source: Path
    tree: Path
    buggy: Path
    runner: Path  # the buggy runner file, alone in its folder
    noparse: Path
    plugin: Path  # a plugin-sized tree with nothing to parse
    plugin_from: str  # which folder of the corpus it was taken from
    project: Path  # the buggy tree as a fork's project (pyproject.toml at its root)
    project_runner: Path  # its runner, which imports the per-token helper from another module
    project_plain: Path  # a file of that project with nothing to parse
    fork: Path  # the buggy tree as a fork's checkout: <fork>/<package>/, .git and pyproject.toml
    fork_fixed: Path  # the original (fixed) tree as a fork's checkout
    fixed_package: Path  # the original tree as a package: a folder no module name can hold
    large_silent: Path  # one large generated module with nothing to report (largesilent.py)
    many_findings: dict[int, Path]  # generated modules by their number of findings
    files: int
    lines: int
    runner_lines: int
    noparse_files: int
    noparse_bytes: int
    plugin_files: int
    large_silent_bytes: int


def build_corpora(source: Path, work: Path, runner_rel: str, many_findings: int = MANY_FINDINGS) -> Corpora:
    if not source.is_dir():
        raise BenchError(f"{source}: corpus is not a directory")
    files = _source_files(source)
    if not files:
        raise BenchError(f"{source}: no Python files in the corpus")
    runner_src = source / runner_rel
    if not runner_src.is_file():
        raise BenchError(f"{runner_src}: runner file not found in the corpus (see --runner)")
    work.mkdir(parents=True, exist_ok=True)
    # Fixit (through trailrunner) skips files the enclosing project's .gitignore
    # lists, and the repository ignores benchmarks/.work: this marker makes the
    # work folder a project root of its own, with no ignores and no Fixit config.
    (work / "pyproject.toml").write_text(
        "# Marks this folder as its own project root for the tools benchmarks/run.py runs.\n"
        "[tool.fixit]\nroot = true\n"
    )
    stamp = work / "corpus.stamp"
    tree, buggy = work / "tree", work / "tree-buggy"
    runner_dir, noparse, plugin = work / "runner", work / "noparse", work / "plugin"
    project = work / "project"
    project_runner = project / source.name / runner_rel
    fork, fork_fixed, fixed_package = work / "fork", work / "fork-fixed", work / "tree-fixed"
    fingerprint = _fingerprint(source, files)
    fresh = stamp.is_file() and stamp.read_text() == fingerprint
    if not fresh:
        _log(f"building corpora from {source} ({len(files)} files) in {work}")
        stamp.unlink(missing_ok=True)
        for d in (tree, buggy, runner_dir, noparse, plugin, project, fork, fork_fixed, fixed_package):
            shutil.rmtree(d, ignore_errors=True)
        for f in files:
            dest = tree / f.relative_to(source)
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(f, dest)
        shutil.copytree(tree, buggy)
        planted = plant_bug((buggy / runner_rel).read_text(encoding="utf-8"), runner_src)
        (buggy / runner_rel).write_text(planted, encoding="utf-8")
        runner_dir.mkdir()
        shutil.copyfile(buggy / runner_rel, runner_dir / Path(runner_rel).name)
        _build_noparse(tree, noparse)
        (work / "plugin.from").write_text(_build_plugin(tree, plugin))
        (work / "project.plain").write_text(_build_project(buggy, project, source.name, runner_rel))
        _build_fork(buggy, fork, source.name)
        _build_fork(tree, fork_fixed, source.name)
        # ``tree/`` sits in the work folder's project under a name a module can have
        # (``tree.vllm...``): the package rows use folders whose names no module can have.
        shutil.copytree(tree, fixed_package)
        stamp.write_text(fingerprint)
    lines = sum(_count_lines(f) for f in _source_files(buggy))
    runner = runner_dir / Path(runner_rel).name
    large_silent = _write_large_silent(work / "large-silent")
    many = {n: _write_many_findings(work / "many-findings", n) for n in (many_findings, 2 * many_findings)}
    return Corpora(
        source=source,
        tree=tree,
        buggy=buggy,
        runner=runner,
        noparse=noparse,
        plugin=plugin,
        plugin_from=_read(work / "plugin.from"),
        project=project,
        project_runner=project_runner,
        project_plain=project / _read(work / "project.plain"),
        fork=fork,
        fork_fixed=fork_fixed,
        fixed_package=fixed_package,
        large_silent=large_silent,
        many_findings=many,
        files=len(files),
        lines=lines,
        runner_lines=_count_lines(runner),
        noparse_files=len(_source_files(noparse)),
        noparse_bytes=sum(f.stat().st_size for f in _source_files(noparse)),
        plugin_files=len(_source_files(plugin)),
        large_silent_bytes=large_silent.stat().st_size,
    )


def plant_bug(text: str, path: Path) -> str:
    """Replace upstream's bounded formula by the per-token one (0.18.0 - 0.25.x)."""
    planted, n = FIXED_FORMULA.subn(BUGGY_FORMULA, text)
    if n == 1:
        return planted
    if n == 0 and f"= {BUGGY_FORMULA}" in text:
        return text  # the corpus already carries the bug (a vLLM before 0.26.0)
    raise BenchError(f"{path}: expected upstream's formula (or the old line) once, found the formula {n} times")


def plant_helper_call(text: str, path: Path, module: str) -> str:
    """The buggy runner taking its per-token count from ``module``'s helper instead:
    ``min_blocks = self.compilation_config.max_cudagraph_capture_size or 1`` becomes
    ``min_blocks = cudagraph_capture_size(self.compilation_config) or 1``, imported on
    the line above, inside the method (as vLLM's method already imports)."""
    at = text.find(f"= {BUGGY_FORMULA}")
    if at < 0 or text.count(f"= {BUGGY_FORMULA}") != 1:
        raise BenchError(f"{path}: expected the planted per-token line once")
    start = text.rfind("\n", 0, at) + 1
    indent = text[start:len(text) - len(text[start:].lstrip(" \t"))]
    call = f"{PROJECT_HELPER}(self.compilation_config) or 1"
    return (text[:start] + f"{indent}from {module} import {PROJECT_HELPER}\n"
            + text[start:at] + f"= {call}" + text[at + len(f"= {BUGGY_FORMULA}"):])


def _build_project(buggy: Path, dest: Path, package: str, runner_rel: str) -> str:
    """A fork's project: ``pyproject.toml`` and the buggy tree as package ``package``,
    its runner importing the per-token helper from the module beside it. Returns the
    path (under ``dest``) of a file of the project with nothing to parse."""
    pkg = dest / package
    shutil.copytree(buggy, pkg)
    (dest / "pyproject.toml").write_text(f'[project]\nname = "{package}-fork"\nversion = "0"\n')
    runner = pkg / runner_rel
    helper = runner.parent / PROJECT_HELPER_MODULE
    helper.write_text(_read(helper) + PROJECT_HELPER_CODE, encoding="utf-8")
    module = ".".join([package, *Path(runner_rel).parent.parts, Path(PROJECT_HELPER_MODULE).stem])
    runner.write_text(plant_helper_call(runner.read_text(encoding="utf-8"), runner, module), encoding="utf-8")
    for f in _source_files(pkg):  # the first file with nothing for any rule (nor the index)
        text = f.read_text(encoding="utf-8", errors="replace")
        if len(text) >= 200 and not any(w in text for w in _PARSE_WORDS) and not _PROJECT_WORDS.search(text):
            return f.relative_to(dest).as_posix()
    plain = pkg / "plain.py"  # a corpus too small to give one
    plain.write_text('"""Nothing to look at."""\n\nVALUE = 1\n')
    return plain.relative_to(dest).as_posix()


def _build_fork(tree: Path, dest: Path, package: str) -> None:
    """A fork's checkout as users have it: the tree as package ``package`` under a folder
    that ``git init`` made a repository, with a ``pyproject.toml`` beside it."""
    shutil.copytree(tree, dest / package)
    (dest / "pyproject.toml").write_text(f'[project]\nname = "{package}"\nversion = "0"\n')
    git_init(dest)


def git_init(folder: Path) -> None:
    try:
        proc = subprocess.run(["git", "init", "-q", str(folder)], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise BenchError(f"`git init {folder}` failed: {exc}") from None
    if proc.returncode != 0:
        raise BenchError(f"`git init {folder}` failed: {proc.stderr.strip()}")


def fresh_tree(tree: Path, dest: Path) -> Callable[[], None]:
    """A ``prepare`` that puts a fresh copy of ``tree`` at ``dest`` (a fix rewrites it)."""

    def prepare() -> None:
        shutil.rmtree(dest, ignore_errors=True)
        shutil.copytree(tree, dest)

    return prepare


# Words that make a file an importer the project index may serve (a block count, a
# profiling run: cgguard/static/rules/model.py's SINK_WORDS): the plain file has none.
_PROJECT_WORDS = re.compile(r"blocks|available_memory|profil|kv_cache_config|minimal_kv_cache", re.IGNORECASE)


def _build_noparse(tree: Path, dest: Path) -> None:
    dest.mkdir(parents=True)
    picked = 0
    for f in _source_files(tree):
        text = f.read_text(encoding="utf-8", errors="replace")
        if len(text) < 200 or any(w in text for w in _PARSE_WORDS):
            continue
        shutil.copyfile(f, dest / f"{picked:02d}_{f.name}")
        picked += 1
        if picked == NOPARSE_FILES:
            return
    for i in range(picked, 5):  # a corpus too small to give any: write plain ones
        (dest / f"plain_{i}.py").write_text(f'"""Nothing to look at."""\n\nVALUE_{i} = {i}\n')


def _write_large_silent(dest: Path) -> Path:
    """The large module with nothing to report, written when missing or changed (it does
    not depend on the corpus, so it is not part of the corpus stamp)."""
    spec = importlib.util.spec_from_file_location("largesilent", HERE / "largesilent.py")
    assert spec is not None and spec.loader is not None
    largesilent = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(largesilent)
    path = dest / LARGE_SILENT_NAME
    text = largesilent.module_text()
    if not path.is_file() or path.read_text(encoding="utf-8") != text:
        dest.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return path


def _write_many_findings(dest: Path, n: int) -> Path:
    """The generated module with ``n`` findings (MANY_FINDINGS_FUNCTION ``n`` times), written
    when missing or changed (it does not depend on the corpus either)."""
    path = dest / f"generated_{n}.py"
    text = "".join(MANY_FINDINGS_FUNCTION.format(i=i) for i in range(n))
    if not path.is_file() or path.read_text(encoding="utf-8") != text:
        dest.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return path


def _build_plugin(tree: Path, dest: Path) -> str:
    """A stand-in for a hardware plugin's tree with nothing to parse (vllm-ascend, say).

    The files of the corpus's biggest top-level folder (by file count; vLLM's
    ``model_executor/``) that hold no capture size, in their folders: plugin-sized,
    real code, and the byte screen settles every file. Returns where they came from.
    """
    folders = [d for d in sorted(tree.iterdir()) if d.is_dir()]
    sizes = {d: len(_source_files(d)) for d in folders}
    source = max(folders, key=lambda d: sizes[d], default=tree)
    picked = 0
    for f in _source_files(source):
        if any(n in f.read_bytes() for n in CAPTURE_NEEDLES):
            continue
        target = dest / f.relative_to(source)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(f, target)
        picked += 1
    if not picked:  # a corpus too small to give any: one plain file
        dest.mkdir(parents=True, exist_ok=True)
        (dest / "plain.py").write_text('"""Nothing to look at."""\n\nVALUE = 1\n')
    return f"{source.relative_to(tree)}/" if source != tree else "the corpus"


def _count_lines(path: Path) -> int:
    with open(path, "rb") as fh:
        return fh.read().count(b"\n")


# ---- comparison tools ---------------------------------------------------------


def tools_venv(work: Path) -> Path:
    return work / "venv-tools"


def ensure_tools(work: Path, tools: set[str]) -> None:
    """Install semgrep and/or Fixit into their own venv; nothing when already there."""
    venv = tools_venv(work)
    wanted = {"semgrep": SEMGREP_SPEC, "fixit": FIXIT_SPEC}
    needed = {"fixit" if t == "fixit-cgguard" else t for t in tools}
    missing = [spec for t, spec in wanted.items() if t in needed and not (venv / "bin" / t).exists()]
    if missing:
        if not (venv / "bin" / "python").exists():
            _log(f"creating {venv}")
            _run_setup([sys.executable, "-m", "venv", str(venv)])
        _log(f"installing {' '.join(missing)} into {venv} (a few minutes the first time)")
        _run_setup([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", *missing])
    if "fixit-cgguard" in tools:
        # A missing module exits 1, as Fixit does with findings: ask before timing it.
        python = venv / "bin" / "python"
        proc = subprocess.run([str(python), "-c", "import fixit, cgguard.ecosystem.fixit"],
                              capture_output=True, text=True, env=checkout_environment())
        if proc.returncode != 0:
            said = (proc.stderr.strip().splitlines() or [f"exit {proc.returncode}"])[-1]
            raise BenchError(f"{python} cannot run cgguard's rule through Fixit ({said}); "
                             f"remove {venv} to have it installed again")


def checkout_environment() -> dict[str, str]:
    """The environment that makes this checkout's cgguard importable from another venv."""
    return dict(os.environ, PYTHONPATH=str(HERE.parent))


def _run_setup(cmd: list[str]) -> None:
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-5:]
        raise BenchError(f"`{' '.join(cmd)}` failed (rc {proc.returncode}): {' | '.join(tail)}")


def semgrep_environment() -> dict[str, str]:
    # Without these semgrep looks for a newer version over the network first (a
    # minute and a half to time out on a machine without one) and sends metrics.
    return dict(os.environ, SEMGREP_ENABLE_VERSION_CHECK="0", SEMGREP_SEND_METRICS="off")


def cgguard_command() -> list[str]:
    """The `cgguard` entry point installed beside this interpreter (what pre-commit runs)."""
    script = Path(sys.executable).parent / "cgguard"
    if not script.exists():
        raise BenchError(f"{script}: no cgguard entry point beside this interpreter; run with .venv/bin/python")
    return [str(script)]


def check_baseline(folder: Path) -> Path:
    """An older cgguard checkout to time beside this one: its package must import from there."""
    folder = folder.resolve()
    if not (folder / "cgguard" / "cli.py").is_file():
        raise BenchError(f"{folder}: --baseline needs a cgguard checkout (no cgguard/cli.py there)")
    import compileall

    if not compileall.compile_dir(str(folder / "cgguard"), quiet=1):
        raise BenchError(f"{folder}: cannot write the bytecode of the baseline's cgguard package")
    return folder


def baseline_label(folder: Path) -> str:
    """The baseline's commit, as git names it (or its folder)."""
    try:
        out = subprocess.run(["git", "-C", str(folder), "rev-parse", "--short", "HEAD"],
                             capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return folder.name
    return out.stdout.strip() or folder.name


def baseline_rows(c: Corpora, folder: Path, work: Path) -> list[Row]:
    """The same cgguard rows for an older checkout, run from its folder (``python -m cgguard``
    imports that checkout's package first), in the same rounds as this one's."""
    rev = baseline_label(folder)
    cmd = [sys.executable, "-m", "cgguard"]
    fix_dir = work / "fix-baseline"
    fix_target = fix_dir / c.runner.name

    def fresh_copy() -> None:
        fix_dir.mkdir(exist_ok=True)
        shutil.copyfile(c.runner, fix_target)

    env = _jobs_env(None)
    return [
        # The baseline's default: the rules it has (CGG001/CGG002), against this checkout's
        # run of those rules alone.
        Row("cb_tree", f"cgguard {rev} (baseline) check, whole tree", "tree", [*cmd, "check", str(c.buggy)],
            count_cgguard, files_cgguard, cwd=folder, env=env, versus="cg_tree_two_rules",
            target=f"CGG001/CGG002 alone ≤ {TARGET_VS_BASELINE:g}× this"),
        Row("cb_runner", f"cgguard {rev} (baseline) check, runner file", "runner", [*cmd, "check", str(c.runner)],
            count_cgguard, files_cgguard, cwd=folder, env=env),
        Row("cb_fix", f"cgguard {rev} (baseline) fix, runner file (fresh copy)", "runner",
            [*cmd, "fix", str(fix_target)], count_fixed, files_cgguard, cwd=folder, env=env, prepare=fresh_copy),
        Row("cb_noparse", f"cgguard {rev} (baseline) check, {c.noparse_files} files with nothing to parse",
            "noparse", [*cmd, "check", str(c.noparse)], count_cgguard, files_cgguard, cwd=folder, env=env),
        Row("cb_large_silent", f"cgguard {rev} (baseline) check, {_large_silent_label(c)}", "large",
            [*cmd, "check", str(c.large_silent)], count_cgguard, files_cgguard, cwd=folder, env=env),
        *fork_rows(c, cmd, work, rev, cwd=folder, env=env),
    ]


def compile_cgguard() -> None:
    """Write the bytecode of the cgguard package being measured, as installing it from a
    wheel does. An editable install run with PYTHONDONTWRITEBYTECODE set (as on these
    machines) would otherwise compile every changed module from source on each run:
    tens of milliseconds that no installed copy pays."""
    import compileall

    import cgguard

    folder = Path(cgguard.__file__).parent
    if not compileall.compile_dir(str(folder), quiet=1):
        raise BenchError(f"{folder}: cannot write the bytecode of the cgguard package")


def tool_version(cmd: list[str], env: dict[str, str] | None = None) -> str:
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env)
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    text = (out.stdout or out.stderr).strip().splitlines()
    return text[-1].strip() if text else "unknown"


# ---- measuring ---------------------------------------------------------------


@dataclasses.dataclass
class Sample:
    wall: float
    cpu: float  # user + system seconds of the child and the children it waited for
    rss_kb: int
    rc: int
    stdout: str
    stderr: str


def measure(cmd: list[str], *, cwd: Path | None = None, env: dict[str, str] | None = None) -> Sample:
    """Run ``cmd`` once: wall time of the child alone and its own peak RSS (wait4)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, stdin=subprocess.DEVNULL, cwd=cwd, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        return Sample(
            wall=wall,
            cpu=usage.ru_utime + usage.ru_stime,
            rss_kb=usage.ru_maxrss,
            rc=proc.returncode,
            stdout=out.read().decode("utf-8", "replace"),
            stderr=err.read().decode("utf-8", "replace"),
        )


@dataclasses.dataclass
class Row:
    key: str
    label: str
    group: str  # tree | runner | noparse | plugin (+ "-busy"): ratios are against cgguard's row of the group
    cmd: list[str]
    count: Callable[[Sample], int | None]  # findings (or fixes) the tool reported
    files: Callable[[Sample], int | None]  # files the tool says it checked
    ok_rcs: tuple[int, ...] = (0, 1)
    cwd: Path | None = None
    env: dict[str, str] | None = None
    prepare: Callable[[], None] | None = None  # untimed, before each run (a fresh copy to fix)
    once: bool = False  # too slow to repeat: one timed run, no warm-up
    busy: bool = False  # timed while another process keeps one core busy (--busy)
    target: str = ""
    samples: list[Sample] = dataclasses.field(default_factory=list)
    note: str = ""
    versus: str = ""  # the key of the row its ratio is against (default: cgguard's row of its group)

    @property
    def tool(self) -> str:
        """The tool's name as the tables show it."""
        return {"cg": "cgguard", "sg": "semgrep", "fx": "Fixit", "grep": "grep", "py": "python",
                "fc": "Fixit (cgguard rule)", "cm": "codemod (cgguard)",
                "cb": "cgguard (baseline)"}[self.key.split("_")[0]]

    @property
    def median(self) -> float | None:
        return statistics.median(s.wall for s in self.samples) if self.samples else None

    @property
    def median_cpu(self) -> float | None:
        return statistics.median(s.cpu for s in self.samples) if self.samples else None


_CGGUARD_FINDING = re.compile(r"^\S.*:\d+:\d+: CGG\d{3} ", re.M)
_FIXED = re.compile(r"Fixed (\d+) finding")
_FILES_CHECKED = re.compile(r"in (\d+) files? checked")
_FIXIT_FINDING = re.compile(r"@\d+:\d+ PerTokenProfilingBlocks: ", re.M)
_FIXIT_CGGUARD_FINDING = re.compile(r"@\d+:\d+ CGG\d{3}: ", re.M)
_CODEMOD_WARNING = re.compile(r"^WARNING: \d+:\d+: CGG\d{3} ", re.M)
_CODEMOD_FILES = re.compile(r"Finished codemodding (\d+) files")


def files_cgguard(s: Sample) -> int | None:
    m = _FILES_CHECKED.search(s.stdout)
    return int(m.group(1)) if m else None


def files_semgrep(s: Sample) -> int | None:
    import json

    try:
        return len(json.loads(s.stdout)["paths"]["scanned"])
    except (ValueError, KeyError, TypeError):
        return None


def semgrep_errors(s: Sample) -> int:
    import json

    try:
        return len(json.loads(s.stdout)["errors"])
    except (ValueError, KeyError, TypeError):
        return 0


_FIXIT_FILES = re.compile(r"(\d+) files? (?:clean|checked)")


def files_fixit(s: Sample) -> int | None:
    m = _FIXIT_FILES.search(s.stderr) or _FIXIT_FILES.search(s.stdout)
    return int(m.group(1)) if m else None


def count_cgguard(s: Sample) -> int:
    return len(_CGGUARD_FINDING.findall(s.stdout))


def count_fixed(s: Sample) -> int | None:
    m = _FIXED.search(s.stdout)
    return int(m.group(1)) if m else None


def count_semgrep(s: Sample) -> int | None:
    import json

    try:
        return len(json.loads(s.stdout)["results"])
    except (ValueError, KeyError, TypeError):
        return None


def count_fixit(s: Sample) -> int:
    return len(_FIXIT_FINDING.findall(s.stdout))


def count_fixit_cgguard(s: Sample) -> int:
    return len(_FIXIT_CGGUARD_FINDING.findall(s.stdout))


def count_codemod(s: Sample) -> int:
    return len(_CODEMOD_WARNING.findall(s.stderr))


def files_codemod(s: Sample) -> int | None:
    m = _CODEMOD_FILES.search(s.stderr)
    return int(m.group(1)) if m else None


def count_lines(s: Sample) -> int:
    return len([l for l in s.stdout.splitlines() if l.strip()])


def no_count(s: Sample) -> None:
    return None


def _jobs_env(jobs: str | None) -> dict[str, str]:
    """This environment with CGGUARD_JOBS set to ``jobs``, or unset (cgguard's default)."""
    env = {k: v for k, v in os.environ.items() if k != "CGGUARD_JOBS"}
    if jobs is not None:
        env["CGGUARD_JOBS"] = jobs
    return env


def _files(n: int) -> str:
    return f"{n} file" if n == 1 else f"{n} files"


DEFAULT_JOBS = "default: CGGUARD_JOBS unset"
ONE_JOB = "CGGUARD_JOBS=1"
BUSY = "one core busy"


def default_vs_one_job_rows(c: Corpora, cg: list[str], busy: bool) -> list[Row]:
    """cgguard on each tree by default and in one process, and with ``busy``
    the same again beside a process spinning on one core."""
    trees = [("tree", "whole tree", c.buggy),
             ("plugin", f"plugin-like tree ({_files(c.plugin_files)}, nothing to parse)", c.plugin)]
    rows: list[Row] = []
    for spin in (False, True) if busy else (False,):
        for name, label, folder in trees:
            key, group, where = f"cg_{name}", name, label
            if spin:
                key, group, where = f"{key}_busy", f"{name}-busy", f"{label}, {BUSY}"
            rows.append(Row(key, f"cgguard check, {where} ({DEFAULT_JOBS})", group, [*cg, "check", str(folder)],
                            count_cgguard, files_cgguard, env=_jobs_env(None), busy=spin))
            rows.append(Row(f"{key}_jobs1", f"cgguard check, {where} ({ONE_JOB})", group,
                            [*cg, "check", str(folder)], count_cgguard, files_cgguard, env=_jobs_env("1"),
                            busy=spin, target="default ≤ this"))
    return rows


def build_rows(
    c: Corpora, tools: set[str], work: Path, quick: bool, fixit_tree: bool, busy: bool, baseline: Path | None = None
) -> list[Row]:
    cg = cgguard_command()
    venv_bin = tools_venv(work) / "bin"
    semgrep = [
        str(venv_bin / "semgrep"), "scan", "--config", str(RULES / "semgrep.yml"), "--json", "--quiet",
        "--metrics=off", "--disable-version-check", "--no-git-ignore",
    ]
    # semgrep reads .semgrepignore from the folder it runs in; an empty one there
    # stops its default ignores (tests/ folders ...) so it scans what cgguard scans.
    semgrep_cwd = work / "semgrep-cwd"
    semgrep_cwd.mkdir(exist_ok=True)
    (semgrep_cwd / ".semgrepignore").write_text("")
    semgrep_env = semgrep_environment()
    fixit_env = dict(os.environ, PYTHONPATH=str(RULES))
    fixit = [str(venv_bin / "fixit"), "--rules", "fixit_rule", "lint"]
    fix_dir = work / "fix"
    fix_target = fix_dir / c.runner.name

    def fresh_copy() -> None:
        fix_dir.mkdir(exist_ok=True)
        shutil.copyfile(c.runner, fix_target)

    rows: list[Row] = []
    default_vs_one_job = default_vs_one_job_rows(c, cg, busy) if "cgguard" in tools else []
    rows += [r for r in default_vs_one_job if r.group == "tree"]
    if "cgguard" in tools:
        rows.append(Row("cg_tree_two_rules", "cgguard check with CGG001/CGG002 alone (--select), whole tree", "tree",
                        [*cg, "check", "--select", "CGG001,CGG002", str(c.buggy)], count_cgguard, files_cgguard,
                        env=_jobs_env(None), target=f"every rule ≤ {TARGET_ALL_RULES_RATIO:g}× this"))
    if "semgrep" in tools and not quick:
        rows.append(Row("sg_tree", "semgrep, whole tree (taint rules for CGG001-CGG003)", "tree",
                        [*semgrep, str(c.buggy)], count_semgrep, files_semgrep, cwd=semgrep_cwd, env=semgrep_env,
                        target=f"≥ {TARGET_SEMGREP_RATIO:g}× cgguard (every rule)"))
    if "fixit" in tools and fixit_tree:
        rows.append(Row("fx_tree", "Fixit, whole tree", "tree", [*fixit, str(c.buggy)],
                        count_fixit, files_fixit, env=fixit_env, once=True, note="one run"))
    if "grep" in tools:
        rows.append(Row("grep_tree", f"grep -rn '{GREP_LITERAL}', whole tree", "tree",
                        ["grep", "-rn", "--include=*.py", "-F", GREP_LITERAL, str(c.buggy)], count_lines, no_count))
    if "cgguard" in tools:
        rows.append(Row("cg_runner", "cgguard check, runner file", "runner", [*cg, "check", str(c.runner)],
                        count_cgguard, files_cgguard, versus="py_libcst",
                        target=f"≤ {TARGET_RUNNER_CHECK_RATIO:g}× import libcst"))
        rows.append(Row("cg_fix", "cgguard fix, runner file (fresh copy)", "runner", [*cg, "fix", str(fix_target)],
                        count_fixed, files_cgguard, prepare=fresh_copy, versus="py_libcst",
                        target=f"≤ {TARGET_RUNNER_FIX_RATIO:g}× import libcst"))
    if "semgrep" in tools:
        rows.append(Row("sg_runner", "semgrep, runner file", "runner", [*semgrep, str(c.runner)],
                        count_semgrep, files_semgrep, cwd=semgrep_cwd, env=semgrep_env))
    if "fixit" in tools:
        rows.append(Row("fx_runner", "Fixit, runner file", "runner", [*fixit, str(c.runner)],
                        count_fixit, files_fixit, env=fixit_env))
    if "fixit-cgguard" in tools:
        rows.append(Row("fc_runner", "Fixit with cgguard's rule (cgguard.ecosystem.fixit), runner file", "runner",
                        [str(venv_bin / "python"), "-m", "fixit", "--rules", "cgguard.ecosystem.fixit", "lint",
                         str(c.runner)], count_fixit_cgguard, files_fixit, env=checkout_environment()))
    if "codemod" in tools:
        cm_dir = work / "codemod"
        cm_target = cm_dir / c.runner.name

        def fresh_codemod_copy() -> None:
            cm_dir.mkdir(exist_ok=True)
            shutil.copyfile(c.runner, cm_target)

        rows.append(Row("cm_fix", "libcst codemod with cgguard's fix (cgguard.ecosystem.codemod), runner file (fresh copy)",
                        "runner", [sys.executable, "-m", "libcst.tool", "codemod", "-x", "--no-format",
                                   "cgguard.ecosystem.codemod.BoundProfilingBlocks", str(cm_target)],
                        count_codemod, files_codemod, ok_rcs=(0,), cwd=cm_dir, prepare=fresh_codemod_copy))
    if "grep" in tools:
        rows.append(Row("grep_runner", "grep -n literal, runner file", "runner",
                        ["grep", "-n", "-F", GREP_LITERAL, str(c.runner)], count_lines, no_count))
    if "cgguard" in tools:
        # pre-commit passes the runner alone; its count comes from a helper in
        # another module of the project, which only the project index shows.
        rows.append(Row("cg_project", "cgguard check, one file that needs the project index (the project's runner)",
                        "project", [*cg, "check", str(c.project_runner)], count_cgguard, files_cgguard,
                        versus="py_libcst", target=f"≤ {TARGET_PROJECT_RUNNER_RATIO:g}× import libcst; 1 finding"))
        rows.append(Row("cg_project_plain", "cgguard check, one file of the same project with nothing to parse "
                        "(no index built)", "project", [*cg, "check", str(c.project_plain)], count_cgguard,
                        files_cgguard, target="0 findings"))
        rows.append(Row("cg_noparse", f"cgguard check, {c.noparse_files} files with nothing to parse", "noparse",
                        [*cg, "check", str(c.noparse)], count_cgguard, files_cgguard))
        rows.append(Row("cg_large_silent", f"cgguard check, {_large_silent_label(c)}", "large",
                        [*cg, "check", str(c.large_silent)], count_cgguard, files_cgguard, versus="py_parse_large",
                        target=f"≤ {TARGET_LARGE_SILENT_RATIO:g}× its floor (start-up and ast.parse); 0 findings; "
                               "no libcst"))
        # Many findings in one file: each finding's cost (its message and its fix laid out),
        # against the floor of a run that parses with libcst, and twice as many (linear).
        few, many = sorted(c.many_findings)
        rows.append(Row("cg_many", f"cgguard check, one generated file with {few:,} findings", "many",
                        [*cg, "check", str(c.many_findings[few])], count_cgguard, files_cgguard,
                        versus="py_libcst", target=f"≤ {TARGET_MANY_FINDINGS_RATIO:g}× import libcst"))
        rows.append(Row("cg_many_double", f"cgguard check, one generated file with {many:,} findings", "many",
                        [*cg, "check", str(c.many_findings[many])], count_cgguard, files_cgguard,
                        versus="cg_many", target=f"≤ {TARGET_MANY_FINDINGS_LINEAR:g}× {few:,} findings"))
    if "cgguard" in tools:
        rows += fork_rows(c, cg, work)
    if baseline is not None:
        rows += baseline_rows(c, baseline, work)
    # The floor under every cgguard row: the interpreter's start-up, and the import of
    # the parser any run that parses something pays.
    rows.append(Row("py_pass", "python -c pass (interpreter start-up)", "noparse",
                    [sys.executable, "-c", "pass"], no_count, no_count, ok_rcs=(0,)))
    rows.append(Row("py_libcst", "python -c 'import libcst' (start-up and the parser's import)", "noparse",
                    [sys.executable, "-c", "import libcst"], no_count, no_count, ok_rcs=(0,)))
    if "cgguard" in tools:
        # The floor under any check that reads the large module as code: start-up, and
        # Python's own parser over the whole file (nothing else: no import of cgguard).
        rows.append(Row("py_parse_large", f"python: read and ast.parse the {c.large_silent_bytes / 1000:.0f} KB "
                        "module (start-up and Python's parser)", "large",
                        [sys.executable, "-c", PARSE_ONLY, str(c.large_silent)], no_count, no_count, ok_rcs=(0,)))
    rows += [r for r in default_vs_one_job if r.group != "tree"]
    return rows


FORK = "as a fork's checkout (.git and pyproject.toml at its top)"


def fork_rows(
    c: Corpora, cg: list[str], work: Path, rev: str = "", cwd: Path | None = None,
    env: dict[str, str] | None = None,
) -> list[Row]:
    """The buggy tree as a fork's checkout, checked and fixed, beside the same tree as a
    package; the fixed tree as a fork's checkout beside it as a package. ``rev``: the rows
    of a baseline checkout (``cg`` run from its folder ``cwd``), which take their ratios
    against this one's package rows."""
    package = c.source.name
    name = f"cgguard {rev} (baseline)" if rev else "cgguard"
    key = "cb" if rev else "cg"
    suffix = "-baseline" if rev else ""
    fix_package, fix_fork = work / f"fix-tree{suffix}", work / f"fix-fork{suffix}"
    fix_fork.mkdir(exist_ok=True)
    (fix_fork / "pyproject.toml").write_text(_read(c.fork / "pyproject.toml"))
    if not (fix_fork / ".git").is_dir():
        git_init(fix_fork)
    ratio = f"≤ {TARGET_FORK_RATIO:g}× the package" if not rev else ""
    rows: list[Row] = []
    env = env if env is not None else _jobs_env(None)
    if not rev:
        rows.append(Row("cg_tree_fix", "cgguard fix, whole tree as a package (fresh copy)", "fork",
                        [*cg, "fix", str(fix_package / package)], count_fixed, files_cgguard, env=env,
                        prepare=fresh_tree(c.buggy, fix_package / package), versus="cg_tree_fix"))
        rows.append(Row("cg_fixed", "cgguard check, the fixed tree (no bug planted) as a package", "fork",
                        [*cg, "check", str(c.fixed_package)], count_cgguard, files_cgguard, env=env,
                        versus="cg_fixed"))
    rows += [
        Row(f"{key}_fork", f"{name} check, whole tree {FORK}", "fork", [*cg, "check", str(c.fork)],
            count_cgguard, files_cgguard, cwd=cwd, env=env, versus="cg_tree", target=ratio),
        Row(f"{key}_fork_fix", f"{name} fix, whole tree {FORK} (fresh copy)", "fork",
            [*cg, "fix", str(fix_fork)], count_fixed, files_cgguard, cwd=cwd, env=env, versus="cg_tree_fix",
            prepare=fresh_tree(c.fork / package, fix_fork / package), target=ratio),
        Row(f"{key}_fork_fixed", f"{name} check, the fixed tree {FORK}", "fork",
            [*cg, "check", str(c.fork_fixed)], count_cgguard, files_cgguard, cwd=cwd, env=env,
            versus="cg_fixed", target=ratio),
    ]
    return rows


def _large_silent_label(c: Corpora) -> str:
    return (f"one {c.large_silent_bytes / 1000:.0f} KB module whose capture size feeds token buffers and a "
            "max() capacity (nothing to report)")


def large_silent_imports_libcst(rows: list[Row], c: Corpora) -> bool | None:
    """Whether ``cgguard check`` on the large silent module imports libcst: one untimed
    run with Python's import-time report, which lists every module any process imports
    (None when the row was not run)."""
    row = next((r for r in rows if r.key == "cg_large_silent"), None)
    if row is None:
        return None
    s = measure(row.cmd, cwd=row.cwd, env=dict(row.env or os.environ, PYTHONPROFILEIMPORTTIME="1"))
    if s.rc not in row.ok_rcs:
        raise BenchError(f"{row.label}: `{' '.join(row.cmd)}` exited {s.rc} with the import-time report on")
    return _LIBCST_IMPORT.search(s.stderr) is not None


_LIBCST_IMPORT = re.compile(r"^import time:\s+\d+ \|\s+\d+ \|\s*libcst\s*$", re.MULTILINE)


def run_rows(rows: list[Row], repeat: int, warmup: bool) -> None:
    def run_one(row: Row) -> Sample:
        if row.prepare:
            row.prepare()
        s = measure(row.cmd, cwd=row.cwd, env=row.env)
        if s.rc not in row.ok_rcs:
            detail = (s.stderr.strip() or s.stdout.strip()).splitlines()[-8:]
            raise BenchError(
                f"{row.label}: `{' '.join(row.cmd)}` exited {s.rc}:\n    " + "\n    ".join(detail)
            )
        return s

    def timed(row: Row, i: int) -> None:
        if row.once and row.samples:
            return
        _log(f"round {i + 1}/{repeat}: {row.label}")
        row.samples.append(run_one(row))
        _log(f"    {row.samples[-1].wall:.3f} s")

    if warmup:
        for row in rows:
            if not row.once:
                _log(f"warm-up: {row.label}")
                run_one(row)
    quiet = [r for r in rows if not r.busy]
    busy = [r for r in rows if r.busy]
    for i in range(repeat):
        # Every other round backwards: no row always runs right after the same other one.
        step = 1 if i % 2 == 0 else -1
        for row in quiet[::step]:
            timed(row, i)
        if busy:
            with spinning():
                for row in busy[::step]:
                    timed(row, i)


SPIN_SETTLE_S = 0.3  # the spinning process's start-up, before the first busy row


def spin_cpu() -> int:
    """The core the busy loop is pinned to: the last one this process may use."""
    return max(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 0


class spinning:
    """Another process keeping one core busy (a pure-Python busy loop, pinned to
    :func:`spin_cpu` where the platform allows): the "one core busy" rows run beside it."""

    def __enter__(self) -> "spinning":
        code = "while True:\n    pass\n"
        if hasattr(os, "sched_setaffinity"):
            code = f"import os\nos.sched_setaffinity(0, {{{spin_cpu()}}})\n" + code
        self.proc = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.DEVNULL)
        time.sleep(SPIN_SETTLE_S)
        if self.proc.poll() is not None:
            raise BenchError(f"the busy loop exited at once (rc {self.proc.returncode})")
        return self

    def __exit__(self, *exc) -> None:
        self.proc.kill()
        self.proc.wait()


# ---- report ------------------------------------------------------------------


def machine_lines(c: Corpora, tools: set[str], work: Path) -> list[str]:
    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = ""
    try:
        kb = int(re.search(r"MemTotal:\s+(\d+)", Path("/proc/meminfo").read_text()).group(1))
        mem = f", {kb / 1024 / 1024:.0f} GiB RAM"
    except (OSError, AttributeError):
        pass
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    venv_bin = tools_venv(work) / "bin"
    # "cgguard 0.1.0 (commit abc123)": the version and, from a checkout, its commit.
    versions = [f"cgguard {tool_version([*cgguard_command(), '--version']).removeprefix('cgguard ')}"]
    if "semgrep" in tools:
        versions.append(f"semgrep {tool_version([str(venv_bin / 'semgrep'), '--version'], semgrep_environment())}")
    if "fixit" in tools:
        versions.append(f"Fixit {tool_version([str(venv_bin / 'fixit'), '--version']).split()[-1]}")
    if "grep" in tools:
        grep = subprocess.run(["grep", "--version"], capture_output=True, text=True).stdout.splitlines()
        versions.append(grep[0] if grep else "grep")
    load = ""
    if hasattr(os, "getloadavg"):
        load = "; load average at the end: " + ", ".join(f"{x:.2f}" for x in os.getloadavg()) + " (1, 5, 15 min)"
    return [
        f"- CPU: {cpu}, {usable} usable cores (of {os.cpu_count()}){mem}{load}",
        f"- OS: {platform.platform()}",
        f"- Python {platform.python_version()} ({sys.executable})",
        f"- Tools: {', '.join(versions)}",
        f"- Corpus: {corpus_name(c.source)}, {c.files} files, {c.lines:,} lines "
        f"(from {c.source}); runner file {c.runner_lines:,} lines with the bug planted",
    ]


def corpus_name(source: Path) -> str:
    """"vLLM <version>" when the corpus is a vLLM package, else the folder's name."""
    m = re.search(r"""__version__\s*=\s*version\s*=\s*['"]([^'"]+)""", _read(source / "_version.py"))
    if m:
        return f"vLLM {m.group(1)}"
    try:
        dists = importlib.metadata.packages_distributions().get(source.name, [])
        for dist in dists:
            d = importlib.metadata.distribution(dist)
            if Path(d.locate_file(source.name)).resolve() == source.resolve():
                return f"vLLM {d.version} ({dist})"
    except Exception:  # metadata is best effort; the path is printed anyway
        pass
    return source.name


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except OSError:
        return ""


def _fmt_s(v: float | None) -> str:
    if v is None:
        return "–"
    return f"{v * 1000:.0f} ms" if v < 1 else f"{v:.2f} s"


def _distinct(values) -> str:
    """The values seen over the rounds ("1", or "1, 2" when a tool was not stable)."""
    seen = sorted({v for v in values if v is not None})
    return ", ".join(map(str, seen)) if seen else "–"


def _fmt_ratio(r: float) -> str:
    return f"{r:.2f}×" if r < 1 else f"{r:.1f}×"


def count_clean_tree(rows: list[Row], c: Corpora) -> dict[str, str]:
    """Findings of each tree-wide tool on the original tree (bug not planted): one untimed run.

    The planted bug is the only one a tool should report; anything on the original
    tree is a false positive (vLLM 0.26.0 and later carry upstream's fix).
    """
    counts: dict[str, str] = {}
    for row in rows:
        if row.group != "tree" or row.once or row.key.endswith("_jobs1"):
            continue
        cmd = [str(c.tree) if part == str(c.buggy) else part for part in row.cmd]
        _log(f"original tree: {row.label}")
        s = measure(cmd, cwd=row.cwd, env=row.env)
        if s.rc not in row.ok_rcs:
            raise BenchError(f"{row.label} on the original tree: `{' '.join(cmd)}` exited {s.rc}")
        n = row.count(s)
        counts[row.tool] = "–" if n is None else str(n)
    return counts


# Per-file report lines of each tool: the file path is group 1.
_PER_FILE = {
    "cgguard": re.compile(r"^(\S.*?):\d+:\d+: CGG\d{3} ", re.M),
    "Fixit": re.compile(r"^(\S.*?)@\d+:\d+ PerTokenProfilingBlocks: ", re.M),
    "Fixit (cgguard rule)": re.compile(r"^(\S.*?)@\d+:\d+ CGG\d{3}: ", re.M),
    "grep": re.compile(r"^(.*?):\d+:", re.M),
}


def _per_file(tool: str, s: Sample) -> dict[str, int]:
    if tool == "semgrep":
        import json

        try:
            paths = [r["path"] for r in json.loads(s.stdout)["results"]]
        except (ValueError, KeyError, TypeError):
            raise BenchError("semgrep on the rule cases: output is not the JSON expected") from None
    else:
        paths = _PER_FILE[tool].findall(s.stdout)
    counts: dict[str, int] = {}
    for p in paths:
        counts[Path(p).name] = counts.get(Path(p).name, 0) + 1
    return counts


def check_rule_cases(rows: list[Row], work: Path) -> str:
    """Each tool once on the rules' example cases: which it flags, which it leaves alone.

    Shows whether the semgrep and Fixit rules really are equivalent to cgguard's
    (the speed comparison is only fair if they are), and what grep's literal misses.
    """
    cases = sorted(p for p in RULE_CASES.glob("*/cases/*/*.pycase") if not p.name.endswith(".fixed.pycase"))
    # Project cases (rules/<CODE>/cases/<kind>/<folder>/, several modules) need the
    # files laid out as a project; benchmarks/recall.py does that, this table does not.
    projects = sorted(p for p in RULE_CASES.glob("*/cases/*/*") if p.is_dir())
    if not cases:
        return f"\nNo rule cases found under {RULE_CASES}: the findings comparison was not run.\n"
    dest = work / "cases"
    shutil.rmtree(dest, ignore_errors=True)
    dest.mkdir()
    expected: dict[str, str] = {}
    for p in cases:
        code, kind = p.parts[-4], p.parts[-2]
        name = f"{code}_{kind}_{p.name.removesuffix('.pycase')}.py"
        shutil.copyfile(p, dest / name)
        expected[name] = kind
    per_tool: dict[str, dict[str, int]] = {}
    for row in rows:
        if row.group != "runner" or row.key in ("cg_fix", "cm_fix") or row.key.startswith("cb_"):
            continue
        tool = row.tool
        if tool == "grep":
            cmd = ["grep", "-rn", "--include=*.py", "-F", GREP_LITERAL, str(dest)]
        else:
            cmd = [*row.cmd[:-1], str(dest)]
        _log(f"rule cases: {tool}")
        s = measure(cmd, cwd=row.cwd, env=row.env)
        if s.rc not in row.ok_rcs:
            raise BenchError(f"{tool} on the rule cases: `{' '.join(cmd)}` exited {s.rc}")
        per_tool[tool] = _per_file(tool, s)
    tools = list(per_tool)
    out = ["", "## Findings on the rules' example cases", "",
           f"`rules/<CODE>/cases/`: {sum(k == 'flagged' for k in expected.values())} files each rule must flag, "
           f"{sum(k == 'silent' for k in expected.values())} it must leave alone. Reports per file (semgrep "
           "reports each sink a flow reaches, so it can count more than one per bug). Single-file cases only"
           + (f": the {len(projects)} project cases (folders of several modules: "
              + ", ".join(f"`{p.parts[-4]}/{p.parts[-2]}/{p.name}/`" for p in projects)
              + ") are left out; `benchmarks/recall.py` runs them." if projects else "."), "",
           "| case | expected | " + " | ".join(tools) + " |", "|---|---|" + "---:|" * len(tools)]
    for name, kind in expected.items():
        cells = [str(per_tool[t].get(name, 0)) for t in tools]
        out.append(f"| {name[:-3]} | {kind} | " + " | ".join(cells) + " |")
    flagged = [n for n, k in expected.items() if k == "flagged"]
    silent = [n for n, k in expected.items() if k == "silent"]
    caught = ", ".join(f"{t} {sum(1 for n in flagged if per_tool[t].get(n))}/{len(flagged)}" for t in tools)
    noisy = ", ".join(f"{t} {sum(1 for n in silent if per_tool[t].get(n))}/{len(silent)}" for t in tools)
    out += ["", f"Flagged cases caught: {caught}. Silent cases with a report (false positives): {noisy}."]
    return "\n".join(out) + "\n"


def report(
    rows: list[Row], c: Corpora, tools: set[str], work: Path, repeat: int, clean: dict[str, str],
    large_libcst: bool | None = None,
) -> tuple[str, bool]:
    by_key = {r.key: r for r in rows}
    # Each group's ratios are against cgguard's (default) row of that group.
    ref = {r.group: r for r in reversed(rows) if r.key.startswith("cg_") and not r.key.endswith("_jobs1")}
    checks: dict[str, bool] = {}
    one_job = {}  # group -> median over rounds of default / one process
    for row in rows:
        if row.key.endswith("_jobs1") and ref.get(row.group):
            one_job[row.group] = paired_ratio(ref[row.group], row)
            checks[row.key] = one_job[row.group] <= TARGET_DEFAULT_VS_ONE_JOB
    cg_tree = by_key.get("cg_tree")


    def ratio_of(key: str, versus: str) -> float | None:
        return median_ratio(by_key.get(key), by_key.get(versus))

    checks.update({carrier: met for carrier, (_, met) in ratio_checks(rows).items()})
    few, many = sorted(c.many_findings)
    for key, n in (("cg_many", few), ("cg_many_double", many)):
        if key in checks:  # every function's finding, no more
            checks[key] = checks[key] and {count_cgguard(s) for s in by_key[key].samples} == {n}
    if "cg_project" in by_key:
        # Speed and the finding: the runner's count is the only flow the index must show.
        found = {count_cgguard(s) for s in by_key["cg_project"].samples}
        r = ratio_of("cg_project", "py_libcst")
        checks["cg_project"] = r is not None and r <= TARGET_PROJECT_RUNNER_RATIO and found == {1}
        found = {count_cgguard(s) for s in by_key["cg_project_plain"].samples}
        checks["cg_project_plain"] = found == {0}
    fork_found = {"cg_fork": {1}, "cg_fork_fix": {1}, "cg_fork_fixed": {0}}
    for key, expected in fork_found.items():
        row = by_key.get(key)
        if row and by_key.get(row.versus) and row.median is not None:
            found = {row.count(s) for s in row.samples}
            checks[key] = row.median / by_key[row.versus].median <= TARGET_FORK_RATIO and found == expected
    large = by_key.get("cg_large_silent")
    large_ratio = ratio_of("cg_large_silent", "py_parse_large")
    if large and large_ratio is not None:
        found = {count_cgguard(s) for s in large.samples}
        checks["cg_large_silent"] = (large_ratio <= TARGET_LARGE_SILENT_RATIO and found == {0}
                                     and large_libcst is False)

    out = ["## Machine", "", *machine_lines(c, tools, work), "",
           f"## Results (median of {repeat} runs, wall seconds, cold: no cache from an earlier run)", "",
           "| row | median | ratio | CPU (user+sys) | findings | files | target | pass |",
           "|---|---:|---:|---:|---:|---:|---|---|"]
    for row in rows:
        base = by_key.get(row.versus) if row.versus else ref.get(row.group)
        ratio = "1.0×" if row is base else (_fmt_ratio(row.median / base.median) if base and base.median else "–")
        found = _distinct(row.count(s) for s in row.samples)
        files = _distinct(row.files(s) for s in row.samples)
        errors = max((semgrep_errors(s) for s in row.samples), default=0) if row.key.startswith("sg_") else 0
        if errors:
            found += f" ({errors} errors)"
        verdict = "" if row.key not in checks else ("pass" if checks[row.key] else "**FAIL**")
        label = row.label + (f" ({row.note})" if row.note else "")
        out.append(f"| {label} | {_fmt_s(row.median)} | {ratio} | {_fmt_s(row.median_cpu)} | {found} | {files} "
                   f"| {row.target} | {verdict} |")
    if cg_tree:
        peak_mb = max(s.rss_kb for s in cg_tree.samples) / 1024
        checks["rss"] = peak_mb <= TARGET_PEAK_RSS_MB
        out.append(f"| peak RSS of cgguard check, whole tree | {peak_mb:.0f} MB | | | | | ≤ {TARGET_PEAK_RSS_MB:.0f} MB "
                   f"| {'pass' if checks['rss'] else '**FAIL**'} |")
        for key, what, limit in (("cg_fork", "check", TARGET_FORK_CHECK_MB),
                                 ("cg_fork_fix", "fix", TARGET_FORK_FIX_MB)):
            if key in by_key:
                peak_mb = max(s.rss_kb for s in by_key[key].samples) / 1024
                checks[f"rss_{key}"] = peak_mb <= limit
                out.append(f"| peak RSS of cgguard {what}, whole tree {FORK} | {peak_mb:.0f} MB | | | | | "
                           f"≤ {limit:.0f} MB | {'pass' if checks[f'rss_{key}'] else '**FAIL**'} |")
        found = {count_cgguard(s) for s in cg_tree.samples}
        checks["findings"] = found == {1}
        out.append(f"| cgguard findings on the buggy tree | {', '.join(map(str, sorted(found)))} | | | | | exactly 1 "
                   f"| {'pass' if checks['findings'] else '**FAIL**'} |")
    out += ["", "Ratio: against the row the target names (`import libcst`, the floor row, CGG001/CGG002 alone, "
            "the baseline, the package), both medians from the same rounds; on rows without such a target, "
            "against cgguard's row of the same group.",
            "Findings: cgguard counts findings (one per flow, at its origin); `cgguard fix` counts fixes "
            "applied; semgrep counts taint results (origin and each sink it reaches); Fixit counts reports; "
            "grep counts matching lines. Files: how many files the tool says it checked. CPU: median user+system "
            "seconds of the process and its children (less sensitive than wall time to other load on the machine)."]
    if one_job:
        out.append(f"Default against {ONE_JOB} (the median over rounds of default / one process, paired in "
                   f"each round; the target allows up to {TARGET_DEFAULT_VS_ONE_JOB:.2f}, the noise between "
                   "runs that take the same path): "
                   + ", ".join(f"{_GROUP_NAMES[g]} {r:.2f}" for g, r in one_job.items()) + ".")
    if any(r.busy for r in rows):
        out.append(f"{BUSY.capitalize()}: a second Python process spins (`while True: pass`, pinned to CPU "
                   f"{spin_cpu()}) from before the first to after the last such row of each round.")
    if by_key.get("cg_plugin"):
        out.append(f"Plugin-like tree: the {_files(c.plugin_files)} of the corpus's `{c.plugin_from}` holding no "
                   "capture size (a stand-in for a hardware "
                   "plugin's tree, such as vllm-ascend, where cgguard parses nothing).")
    if by_key.get("cg_project"):
        out.append(f"Project index rows: `{c.project.name}/` is the buggy tree as a fork's project "
                   f"(`pyproject.toml` at its root); its runner `{c.project_runner.relative_to(c.project)}` takes "
                   f"the per-token count from `{PROJECT_HELPER}()`, planted in "
                   f"`{c.project_runner.parent.relative_to(c.project)}/{PROJECT_HELPER_MODULE}` (which also uses "
                   "it as a per-token size, so the finding stays in the runner); each row is `cgguard check` on "
                   f"one file, as pre-commit runs it. The file with nothing to parse: "
                   f"`{c.project_plain.relative_to(c.project)}`. Target and pass include the finding count "
                   "(1 and 0).")
    if by_key.get("cg_fork"):
        out.append(f"Fork rows: `{c.fork.name}/` and `{c.fork_fixed.name}/` hold the buggy and the original tree "
                   f"as package `{c.source.name}/` of a fork's checkout (`git init` and a `pyproject.toml` at the "
                   "top, so every module is a module of the project); each row's ratio is against the same files "
                   "as a package in the same rounds (the whole-tree row, the package fix row, the fixed tree as a "
                   f"package). Targets: at most {TARGET_FORK_RATIO:g}× that, and the finding counts (1 finding, "
                   "1 fix, 0 findings).")
    if large and large_ratio is not None:
        out.append(f"Large silent module: `{c.large_silent.parent.name}/{c.large_silent.name}`, "
                   f"{c.large_silent_bytes:,} bytes written by `benchmarks/largesilent.py` (an attention backend "
                   "whose capture size sizes token buffers and a max() token capacity, beside KV-cache shapes, "
                   "block tables and a profiling block count bounded as upstream's fix does); its check "
                   f"took {large_ratio:.2f}× its floor row (start-up and Python's parser "
                   f"alone on it, `py_parse_large`); libcst imported: {'yes' if large_libcst else 'no'} (one "
                   "untimed run with PYTHONPROFILEIMPORTTIME=1). Target and pass include all three (the ratio, "
                   "0 findings, no libcst).")
    if by_key.get("cg_many"):
        out.append(f"Many findings: `many-findings/generated_N.py`, a plugin's profiling helper "
                   f"(`plugin_profiling_blocks_<i>`) written N times, each one CGG001 finding with a fix; the "
                   f"{few:,}-finding row against `import libcst`, the {many:,}-finding row against the "
                   f"{few:,}-finding one (linear growth). Target and pass include the finding count (one per function).")
    if clean:
        out.append("Findings on the original tree (the bug not planted; one untimed run each): "
                   + ", ".join(f"{tool} {n}" for tool, n in clean.items()) + ".")
    if "fixit" in tools and "fx_tree" not in by_key:
        out.append("Fixit runs on the runner file only (it takes minutes on the tree); `--fixit-tree` adds a "
                   "single tree run.")
    return "\n".join(out) + "\n", all(checks.values())


# The ratio targets: the row that shows the target, the two rows whose medians' ratio it
# bounds, and the bound (at most, or at least).
RATIO_TARGETS: tuple[tuple[str, str, str, str, float], ...] = (
    ("cg_tree_two_rules", "cg_tree", "cg_tree_two_rules", "≤", TARGET_ALL_RULES_RATIO),
    ("sg_tree", "sg_tree", "cg_tree", "≥", TARGET_SEMGREP_RATIO),
    ("cb_tree", "cg_tree_two_rules", "cb_tree", "≤", TARGET_VS_BASELINE),
    ("cg_runner", "cg_runner", "py_libcst", "≤", TARGET_RUNNER_CHECK_RATIO),
    ("cg_fix", "cg_fix", "py_libcst", "≤", TARGET_RUNNER_FIX_RATIO),
    ("cg_many", "cg_many", "py_libcst", "≤", TARGET_MANY_FINDINGS_RATIO),
    ("cg_many_double", "cg_many_double", "cg_many", "≤", TARGET_MANY_FINDINGS_LINEAR),
)


def median_ratio(row: Row | None, versus: Row | None) -> float | None:
    """The ratio of two rows' medians (the rounds interleave every row, so both medians come
    from the same rounds); None when either row did not run."""
    if row is None or versus is None or row.median is None or not versus.median:
        return None
    return row.median / versus.median


def ratio_checks(rows: list[Row]) -> dict[str, tuple[float, bool]]:
    """Each ratio target whose rows ran: the row showing it -> (the ratio, whether it is met)."""
    by_key = {r.key: r for r in rows}
    checks = {}
    for carrier, key, versus, op, bound in RATIO_TARGETS:
        r = median_ratio(by_key.get(key), by_key.get(versus))
        if r is not None:
            checks[carrier] = (r, r <= bound if op == "≤" else r >= bound)
    return checks


_GROUP_NAMES = {"tree": "whole tree", "plugin": "plugin-like tree", "tree-busy": f"whole tree ({BUSY})",
                "plugin-busy": f"plugin-like tree ({BUSY})"}


def paired_ratio(default: Row, one_job: Row) -> float:
    """Median over rounds of default / one process: rows of one round ran back to back,
    under the same load, so each round's ratio is fairer than a ratio of medians."""
    return statistics.median(d.wall / j.wall for d, j in zip(default.samples, one_job.samples))


def _log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--repeat", type=int, default=None, help="timed rounds (default 5; 1 with --quick)")
    p.add_argument("--tools", default=",".join(ALL_TOOLS), help="comma list of " + ",".join(ALL_TOOLS))
    p.add_argument("--corpus", type=Path, default=None, help="source tree (default: the installed vLLM package)")
    p.add_argument("--runner", default=DEFAULT_RUNNER, help=f"runner file inside the corpus (default {DEFAULT_RUNNER})")
    p.add_argument("--work", type=Path, default=DEFAULT_WORK, help="where corpora and tool venv go")
    p.add_argument("--quick", action="store_true", help="1 round, no warm-up, no tree-wide semgrep")
    p.add_argument("--fixit-tree", action="store_true", help="also run Fixit over the whole tree, once")
    p.add_argument("--many-findings", type=int, default=MANY_FINDINGS, metavar="N",
                   help=f"findings in the generated file of the many-findings rows, and twice that in the second "
                        f"(default {MANY_FINDINGS:,}, what the target is set for)")
    p.add_argument("--strict", action="store_true", help="exit 1 when a target is missed")
    p.add_argument("--baseline", type=Path, default=None,
                   help="an older cgguard checkout (git worktree add DIR REV) timed beside this one in the same "
                        "rounds: whole tree, runner check and fix, files with nothing to parse")
    p.add_argument("--busy", action=argparse.BooleanOptionalAction, default=None,
                   help="also time cgguard on each tree, by default and with CGGUARD_JOBS=1, while another "
                        "process keeps one core busy (default: on, off with --quick)")
    args = p.parse_args(argv)
    tools = {t.strip() for t in args.tools.split(",") if t.strip()}
    unknown = tools - set(ALL_TOOLS)
    if unknown:
        p.error(f"unknown tool(s): {', '.join(sorted(unknown))} (choose from {', '.join(ALL_TOOLS)})")
    args.tools = tools
    if args.repeat is None:
        args.repeat = 1 if args.quick else 5
    if args.busy is None:
        args.busy = not args.quick
    if args.repeat < 1:
        p.error("--repeat must be at least 1")
    if args.many_findings < 1:
        p.error("--many-findings must be at least 1")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        corpus = args.corpus or default_corpus()
        work = args.work.resolve()
        c = build_corpora(corpus.resolve(), work, args.runner, args.many_findings)
        ensure_tools(work, args.tools)
        compile_cgguard()
        baseline = check_baseline(args.baseline) if args.baseline is not None else None
        rows = build_rows(c, args.tools, work, args.quick, args.fixit_tree, args.busy, baseline)
        run_rows(rows, args.repeat, warmup=not args.quick)
        clean = count_clean_tree(rows, c)
        large_libcst = large_silent_imports_libcst(rows, c)
        table, met = report(rows, c, args.tools, work, args.repeat, clean, large_libcst)
        table += check_rule_cases(rows, work)
    except BenchError as exc:
        print(f"benchmarks/run.py: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("benchmarks/run.py: interrupted", file=sys.stderr)
        return 130
    sys.stdout.write(table)
    return 1 if args.strict and not met else 0


if __name__ == "__main__":
    sys.exit(main())
