"""benchmarks/run.py runs end to end on a small corpus and prints its table.

Only cgguard and grep are timed here (semgrep and Fixit would need their own
install); no time is asserted, only that every row is there and the findings are.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import PRE_FIX_RUNNER_EXPR, REPO, UPSTREAM_FIXED_RUNNER_EXPR

SCRIPT = REPO / "benchmarks" / "run.py"

# A runner shaped like vLLM's, carrying upstream's fix in its multi-line form; the
# script plants the old per-token formula into its buggy copy.
RUNNER = f'''"""A small stand-in for vllm/v1/worker/gpu_model_runner.py."""


class GPUModelRunner:
    def __init__(self, vllm_config):
        self.compilation_config = vllm_config.compilation_config
        self.cache_config = vllm_config.cache_config
        self.max_num_reqs = vllm_config.scheduler_config.max_num_seqs

    def _init_minimal_kv_cache_for_profiling(self) -> None:
        # the minimum number of blocks required is 1 block *per sequence*
        min_blocks = {UPSTREAM_FIXED_RUNNER_EXPR}
        saved_override = self.cache_config.num_gpu_blocks_override
        self.cache_config.num_gpu_blocks_override = min_blocks
        try:
            self.build()
        finally:
            self.cache_config.num_gpu_blocks_override = saved_override
'''


# The many-findings rows' file, smaller than the benchmark's 2,000 findings: the tests
# check the rows, not the speed, and CI's time is short.
MANY = 100


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(SCRIPT), "--many-findings", str(MANY), *args], capture_output=True, text=True,
        timeout=600,
    )


def _ratio_agrees(ratio: str, median: str, versus: str) -> bool:
    """Whether a row's ratio cell is its median over ``versus``'s, to the rounding of the
    three cells (the script divides the unrounded medians)."""
    def seconds(cell: str) -> float:
        number, unit = cell.split()
        return float(number) / (1000 if unit == "ms" else 1)

    expected = seconds(median) / seconds(versus)
    return abs(float(ratio.rstrip("×")) - expected) <= 0.05 + 0.01 * expected


def _table_row(stdout: str, label_start: str) -> list[str]:
    for line in stdout.splitlines():
        if line.startswith(f"| {label_start}"):
            return [cell.strip() for cell in line.strip().strip("|").split("|")]
    raise AssertionError(f"no table row starting {label_start!r} in:\n{stdout}")


@pytest.fixture
def small_corpus(tmp_path: Path) -> Path:
    corpus = tmp_path / "corpus"
    (corpus / "v1" / "worker").mkdir(parents=True)
    (corpus / "v1" / "worker" / "gpu_model_runner.py").write_text(RUNNER)
    (corpus / "__init__.py").write_text('"""Package."""\n')
    # Mentions the capture size in a per-token buffer: must stay silent.
    (corpus / "v1" / "buffers.py").write_text(
        "def table(cfg):\n    size = cfg.compilation_config.max_cudagraph_capture_size\n"
        "    return [0] * (size + 1)\n"
    )
    (corpus / "v1" / "plain.py").write_text(
        '"""A module with nothing for the rules."""\n\n' + "".join(f"VALUE_{i} = {i}\n" for i in range(40))
    )
    return corpus


DEFAULT = "(default: CGGUARD_JOBS unset)"
FORK = "as a fork's checkout (.git and pyproject.toml at its top)"
ONE_JOB = "(CGGUARD_JOBS=1)"
BUSY = ", one core busy"
PLUGIN = "cgguard check, plugin-like tree (1 file, nothing to parse)"


def test_prints_every_row_and_one_finding(small_corpus: Path, tmp_path: Path) -> None:
    work = tmp_path / "work"
    proc = _run("--tools", "cgguard,grep", "--repeat", "1", "--corpus", str(small_corpus), "--work", str(work))
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout

    assert "## Machine" in out and "- CPU:" in out and "- Python " in out
    assert re.search(r"- Corpus: corpus, 4 files, [\d,]+ lines", out), out
    assert "median of 1 runs" in out
    assert "| row | median | ratio | CPU (user+sys) | findings | files | target | pass |" in out

    # cgguard finds exactly the planted bug, in the tree and in the runner file alone,
    # by default and in one process, with a core free and with one kept busy.
    for busy in ("", BUSY):
        for jobs in (DEFAULT, ONE_JOB):
            assert _table_row(out, f"cgguard check, whole tree{busy} {jobs}")[4:6] == ["1", "4"]  # 1 finding, 4 files
            # The plugin-like tree: the corpus's biggest folder (v1/) less its files
            # holding a capture size (plain.py is left): nothing found, nothing parsed.
            assert _table_row(out, f"{PLUGIN}{busy} {jobs}")[4:6] == ["0", "1"]
        # The default's target sits on the one-process row: the default is not slower.
        one_job = _table_row(out, f"cgguard check, whole tree{busy} {ONE_JOB}")
        assert one_job[6] == "default ≤ this" and one_job[7] in ("pass", "**FAIL**")
        plugin_one_job = _table_row(out, f"{PLUGIN}{busy} {ONE_JOB}")
        assert plugin_one_job[6] == "default ≤ this" and plugin_one_job[7] in ("pass", "**FAIL**")
    # Targets are ratios measured in the same rounds, never absolute times (issue 37).
    assert _table_row(out, f"cgguard check, whole tree {DEFAULT}")[6] == ""
    libcst = _table_row(out, "python -c 'import libcst'")
    runner = _table_row(out, "cgguard check, runner file")
    assert runner[4] == "1" and runner[6] == "≤ 2.2× import libcst" and runner[7] in ("pass", "**FAIL**")
    fix = _table_row(out, "cgguard fix, runner file")
    assert fix[4] == "1" and fix[6] == "≤ 2.6× import libcst" and fix[7] in ("pass", "**FAIL**")  # one fix applied
    # Their ratio column is against `import libcst`, from the medians of the same rounds.
    assert _ratio_agrees(runner[2], runner[1], libcst[1]) and _ratio_agrees(fix[2], fix[1], libcst[1])
    assert _table_row(out, "cgguard findings on the buggy tree")[1:] == ["1", "", "", "", "", "exactly 1", "pass"]
    # grep finds the literal once in the tree, and once in the runner file.
    assert _table_row(out, "grep -rn")[4] == "1"
    assert _table_row(out, "grep -n literal, runner file")[4] == "1"
    # Files with nothing to parse (plain.py, padded with plain files to 5) give nothing;
    # the interpreter baseline has no count.
    noparse = _table_row(out, "cgguard check, 5 files with nothing to parse")
    assert noparse[4:7] == ["0", "5", ""]
    # Pre-commit's one-file run of a project's runner whose count comes from a
    # helper in another module (the project index finds it), and of a file of the same
    # project with nothing to parse (no index built): 1 finding and 0, the targets of the
    # runner row and of files with nothing to parse.
    project = _table_row(out, "cgguard check, one file that needs the project index")
    assert project[4:7] == ["1", "1", "≤ 2.2× import libcst; 1 finding"] and project[7] in ("pass", "**FAIL**")
    assert _ratio_agrees(project[2], project[1], libcst[1])
    plain = _table_row(out, "cgguard check, one file of the same project with nothing to parse")
    assert plain[4:8] == ["0", "1", "0 findings", "pass"]
    assert ("Project index rows: `project/` is the buggy tree as a fork's project (`pyproject.toml` at its "
            "root); its runner `corpus/v1/worker/gpu_model_runner.py` takes the per-token count from "
            "`cudagraph_capture_size()`, planted in `corpus/v1/worker/utils.py`") in out
    assert "The file with nothing to parse: `corpus/v1/plain.py`." in out
    # One large generated module that names the capture size and a sink,
    # read by the core and reported clean, without libcst; its target is against its floor
    # row (start-up and Python's parser alone on it), in the same rounds.
    large = _table_row(out, f"cgguard check, one {_large_kb()} module whose capture size feeds token buffers")
    assert large[4:7] == ["0", "1", "≤ 2× its floor (start-up and ast.parse); 0 findings; no libcst"], large
    assert large[7] in ("pass", "**FAIL**")
    floor = _table_row(out, f"python: read and ast.parse the {_large_kb()} module")
    assert _ratio_agrees(large[2], large[1], floor[1]), (large, floor)
    assert re.search(r"Large silent module: `large-silent/attention_backend.py`, 2[5-9]\d,\d{3} bytes written by "
                     r"`benchmarks/largesilent.py` .*; its check took \d+\.\d\d× its floor row \(start-up and "
                     r"Python's parser alone on it, `py_parse_large`\); libcst imported: (yes|no) ", out), out
    # One generated file with N findings (2,000 unless --many-findings says otherwise),
    # against `import libcst`, and with 2N against N (linear): every function's finding
    # counted, each ratio from the same rounds.
    many = _table_row(out, f"cgguard check, one generated file with {MANY} findings")
    assert many[4:7] == [str(MANY), "1", "≤ 12× import libcst"] and many[7] in ("pass", "**FAIL**"), many
    assert _ratio_agrees(many[2], many[1], libcst[1]), (many, libcst)
    double = _table_row(out, f"cgguard check, one generated file with {2 * MANY} findings")
    assert double[4:7] == [str(2 * MANY), "1", f"≤ 2.1× {MANY} findings"] and double[7] in ("pass", "**FAIL**")
    assert _ratio_agrees(double[2], double[1], many[1]), (double, many)
    generated = (work / "many-findings" / f"generated_{MANY}.py").read_text()
    assert generated.count("def plugin_profiling_blocks_") == MANY
    assert _table_row(out, "python -c pass")[4] == "–"
    assert _table_row(out, "python -c 'import libcst'")[4] == "–"  # the floor of a run that parses
    # The floor of any check that reads the large module as code: start-up and Python's
    # parser over it, quoted per MB beside what the target allows.
    assert floor[4:7] == ["–", "–", ""], floor
    peak = _table_row(out, "peak RSS of cgguard check, whole tree")
    assert re.fullmatch(r"\d+ MB", peak[1]) and peak[6] == "≤ 200 MB" and peak[7] in ("pass", "**FAIL**")
    assert re.search(
        r"Default against CGGUARD_JOBS=1 \(the median over rounds of default / one process, paired in each "
        r"round; .*\): whole tree \d\.\d\d, plugin-like tree \d\.\d\d, whole tree \(one core busy\) \d\.\d\d, "
        r"plugin-like tree \(one core busy\) \d\.\d\d\.", out), out
    assert "One core busy: a second Python process spins" in out
    assert "Plugin-like tree: the 1 file of the corpus's `v1/` holding no capture size" in out
    # On the original tree (upstream's fix, no planted bug) nothing is found.
    assert "Findings on the original tree (the bug not planted; one untimed run each): cgguard 0, grep 0." in out
    # The rules' example cases, per tool asked for: cgguard flags every flagged case
    # and nothing else; grep's literal misses some and hits strings.
    assert "## Findings on the rules' example cases" in out
    assert "| case | expected | cgguard | grep |" in out
    assert re.search(r"Flagged cases caught: cgguard (\d+)/\1, grep \d+/\d+\.", out), out
    assert re.search(r"false positives\): cgguard 0/\d+, grep [1-9]\d*/\d+\.", out), out
    # Project cases (folders of modules) are not in this table, and it says so.
    assert re.search(r"Single-file cases only: the \d+ project cases \(folders of several modules: "
                     r"[^)]*`CGG001/flagged/imports_project_helper/`.*\) are left out; `benchmarks/recall.py` runs them\.",
                     out), out
    # Every timed row has a median and a ratio.
    for label in ("cgguard check, whole tree", "grep -rn", "cgguard fix, runner file", "python -c pass",
                  "cgguard check, one file that needs the project index",
                  "cgguard check, one file of the same project with nothing to parse",
                  "python -c 'import libcst'", "python: read and ast.parse", PLUGIN,
                  f"cgguard check, whole tree{BUSY} {ONE_JOB}"):
        row = _table_row(out, label)
        assert re.fullmatch(r"\d+ ms|\d+\.\d\d s", row[1]), row
        assert re.fullmatch(r"\d+\.\d+×", row[2]), row
        assert re.fullmatch(r"\d+ ms|\d+\.\d\d s", row[3]), row
    # The buggy tree as a fork's checkout (.git and pyproject.toml at its top), checked and
    # fixed, beside the same files as a package; the fixed tree likewise: the same findings,
    # each fork row's ratio against its package row, and the memory of its check and fix.
    assert _table_row(out, "cgguard fix, whole tree as a package (fresh copy)")[4:6] == ["1", "4"]
    assert _table_row(out, "cgguard check, the fixed tree (no bug planted) as a package")[4:6] == ["0", "4"]
    for label, found in (("check, whole tree", "1"), ("fix, whole tree", "1"), ("check, the fixed tree", "0")):
        row = _table_row(out, f"cgguard {label} {FORK}")
        assert row[4:7] == [found, "4", "≤ 1.3× the package"] and row[7] in ("pass", "**FAIL**"), row
        assert re.fullmatch(r"\d+\.\d+×", row[2]), row
    for what, limit in (("check", "200"), ("fix", "250")):
        row = _table_row(out, f"peak RSS of cgguard {what}, whole tree {FORK}")
        assert re.fullmatch(r"\d+ MB", row[1]) and row[6:] == [f"≤ {limit} MB", "pass"], row
    assert "Fork rows: `fork/` and `fork-fixed/` hold the buggy and the original tree" in out
    assert (work / "fork" / ".git").is_dir() and (work / "fork" / "pyproject.toml").is_file()
    # Tools not asked for do not appear.
    timing = out.split("## Results")[1].split("## Findings on the rules")[0]
    rows = [line for line in timing.splitlines() if line.startswith("| ")]
    # header; the tree by default, in one process and with CGG001/CGG002 alone, grep; the
    # runner file (check, fix, grep); the project's runner and its file with nothing to parse; nothing to parse,
    # python -c pass and import libcst; the large silent module and parsing it alone; the
    # plugin-like tree twice; both trees twice more with one core busy; the fork's checkout
    # (the package's fix and fixed tree, the fork's check, fix and fixed tree); peak RSS of
    # the tree, of the fork's check and of its fix, and findings; the files with N and 2N
    # findings.
    assert len(rows) == 1 + 4 + 3 + 2 + 3 + 2 + 2 + 4 + 5 + 4 + 2
    two = _table_row(out, "cgguard check with CGG001/CGG002 alone")
    assert two[4] == "1" and two[6] == "every rule ≤ 1.5× this" and two[7] in ("pass", "**FAIL**"), two
    assert not [r for r in rows if r.startswith(("| semgrep", "| Fixit"))]


def test_builds_corpora_without_touching_the_source(small_corpus: Path, tmp_path: Path) -> None:
    before = (small_corpus / "v1" / "worker" / "gpu_model_runner.py").read_text()
    work = tmp_path / "work"
    proc = _run("--tools", "cgguard", "--quick", "--corpus", str(small_corpus), "--work", str(work))
    assert proc.returncode == 0, proc.stderr

    assert (small_corpus / "v1" / "worker" / "gpu_model_runner.py").read_text() == before
    assert (work / "tree" / "v1" / "worker" / "gpu_model_runner.py").read_text() == before
    buggy = (work / "tree-buggy" / "v1" / "worker" / "gpu_model_runner.py").read_text()
    assert f"min_blocks = {PRE_FIX_RUNNER_EXPR}\n" in buggy and "min(self.max_num_reqs" not in buggy
    assert (work / "runner" / "gpu_model_runner.py").read_text() == buggy
    # The project: the buggy tree under its package name, pyproject.toml at its root, the
    # runner's per-token line taking its count from the helper planted beside it.
    project = work / "project"
    assert (project / "pyproject.toml").is_file()
    assert (project / "corpus" / "v1" / "buffers.py").read_text() == (small_corpus / "v1" / "buffers.py").read_text()
    planted = (project / "corpus" / "v1" / "worker" / "gpu_model_runner.py").read_text()
    assert planted == buggy.replace(
        f"        min_blocks = {PRE_FIX_RUNNER_EXPR}\n",
        "        from corpus.v1.worker.utils import cudagraph_capture_size\n"
        "        min_blocks = cudagraph_capture_size(self.compilation_config) or 1\n",
    )
    helper = (project / "corpus" / "v1" / "worker" / "utils.py").read_text()
    assert "def cudagraph_capture_size(compilation_config) -> int:" in helper
    assert "    return compilation_config.max_cudagraph_capture_size\n" in helper
    # The fix row ran on a fresh copy of the runner, which it fixed; the runner stays buggy.
    fixed = (work / "fix" / "gpu_model_runner.py").read_text()
    assert "min(self.max_num_reqs," in fixed and f"= {PRE_FIX_RUNNER_EXPR}" not in fixed
    # The plugin-like tree: v1/ (the biggest folder) without its files naming a capture size.
    assert sorted(p.relative_to(work / "plugin").as_posix() for p in (work / "plugin").rglob("*.py")) == ["plain.py"]
    # --quick: one round, no tree-wide semgrep even if asked, no busy rows unless asked.
    assert "median of 1 runs" in proc.stdout
    assert BUSY not in proc.stdout and "One core busy" not in proc.stdout
    assert _table_row(proc.stdout, f"{PLUGIN} {ONE_JOB}")[4] == "0"


def _script_module():
    spec = importlib.util.spec_from_file_location("bench_run", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_the_busy_loop_spins_on_one_core_and_stops() -> None:
    bench = _script_module()
    with bench.spinning() as spin:
        pid = spin.proc.pid
        assert spin.proc.poll() is None
        assert os.sched_getaffinity(pid) == {bench.spin_cpu()}
        ticks = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        assert int(ticks[11]) + int(ticks[12]) > 0  # user + system clock ticks: it has been running
        state = ticks[0]
        assert state == "R", state  # running (or runnable), not sleeping
    assert spin.proc.poll() is not None  # killed and reaped


def test_corpus_without_runner_is_one_clear_error(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "a.py").write_text("x = 1\n")
    proc = _run("--tools", "cgguard", "--corpus", str(corpus), "--work", str(tmp_path / "work"))
    assert proc.returncode == 2
    assert proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("benchmarks/run.py: error: ")
    assert "gpu_model_runner.py: runner file not found in the corpus" in lines[0]
    assert "Traceback" not in proc.stderr


def test_unknown_tool_is_refused(small_corpus: Path, tmp_path: Path) -> None:
    proc = _run("--tools", "cgguard,ruff", "--corpus", str(small_corpus), "--work", str(tmp_path / "work"))
    assert proc.returncode == 2
    assert "unknown tool(s): ruff" in proc.stderr
    assert not (tmp_path / "work").exists()


def test_runner_without_the_formula_is_one_clear_error(small_corpus: Path, tmp_path: Path) -> None:
    runner = small_corpus / "v1" / "worker" / "gpu_model_runner.py"
    runner.write_text(RUNNER.replace(UPSTREAM_FIXED_RUNNER_EXPR, "4"))
    proc = _run("--tools", "cgguard", "--corpus", str(small_corpus), "--work", str(tmp_path / "work"))
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert lines[-1] == (
        f"benchmarks/run.py: error: {runner}: expected upstream's formula (or the old line) once, "
        "found the formula 0 times"
    )
    assert "Traceback" not in proc.stderr and proc.stdout == ""
    # Nothing half-built is taken for a finished corpus next time.
    assert not (tmp_path / "work" / "corpus.stamp").exists()


def test_a_baseline_checkout_is_timed_beside_this_one(small_corpus: Path, tmp_path: Path) -> None:
    # The repository itself stands in for an older checkout: same rows, same findings.
    proc = _run("--tools", "cgguard", "--quick", "--no-busy", "--corpus", str(small_corpus),
                "--work", str(tmp_path / "work"), "--baseline", str(REPO))
    assert proc.returncode == 0, proc.stderr
    rev = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
                         capture_output=True, text=True).stdout.strip()
    base = f"cgguard {rev} (baseline)"
    tree = _table_row(proc.stdout, f"{base} check, whole tree")
    assert tree[4:6] == ["1", "4"]
    # CGG001/CGG002 alone is no slower than the baseline's check (which has those rules),
    # the ratio of this checkout's row over the baseline's, both from the same rounds.
    assert tree[6] == "CGG001/CGG002 alone ≤ 1.05× this" and tree[7] in ("pass", "**FAIL**"), tree
    two_rules = _table_row(proc.stdout, "cgguard check with CGG001/CGG002 alone")
    assert _ratio_agrees(tree[2], tree[1], two_rules[1]), (tree, two_rules)
    assert _table_row(proc.stdout, f"{base} check, runner file")[4] == "1"
    assert _table_row(proc.stdout, f"{base} fix, runner file")[4] == "1"  # one fix applied, to its own copy
    files = re.search(r"\| cgguard check, (\d+) files with nothing to parse", proc.stdout).group(1)
    assert _table_row(proc.stdout, f"{base} check, {files} files with nothing to parse")[4:6] == ["0", files]
    assert _table_row(proc.stdout, f"{base} check, one {_large_kb()} module whose capture size")[4:6] == ["0", "1"]
    # The fork's checkout too, its ratios against this checkout's package rows.
    for label, found in (("check, whole tree", "1"), ("fix, whole tree", "1"), ("check, the fixed tree", "0")):
        row = _table_row(proc.stdout, f"{base} {label} {FORK}")
        assert row[4:6] == [found, "4"] and re.fullmatch(r"\d+\.\d+×", row[2]), row


def test_a_baseline_that_is_no_checkout_is_one_clear_error(small_corpus: Path, tmp_path: Path) -> None:
    proc = _run("--tools", "cgguard", "--quick", "--corpus", str(small_corpus), "--work", str(tmp_path / "work"),
                "--baseline", str(tmp_path))
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert lines[-1] == f"benchmarks/run.py: error: {tmp_path}: --baseline needs a cgguard checkout (no cgguard/cli.py there)"
    assert "Traceback" not in proc.stderr


def test_the_large_silent_module_is_generated_to_size_and_names_what_screens_look_for() -> None:
    """The module is Python of 250-300 KB, the same on every run, and holds both a capture
    size and a sink word: no byte screen can settle it, the core must read it."""
    from cgguard.static.rules.configs import CAPTURE_SIZE_BLOCKS

    spec = importlib.util.spec_from_file_location("largesilent", REPO / "benchmarks" / "largesilent.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    text = module.module_text()
    assert 250_000 <= len(text.encode()) <= 300_000
    assert text == module.module_text()
    compile(text, "attention_backend.py", "exec")
    assert "max_cudagraph_capture_size" in text and CAPTURE_SIZE_BLOCKS.mentions_sink_word(text)
    assert "return max(capture_size or 0," in text  # a max() token capacity
    assert "torch.zeros(capture_size + 1," in text  # token buffers sized by the capture size


def test_fixit_with_cgguards_rule_that_cannot_import_is_one_clear_error(
    small_corpus: Path, tmp_path: Path
) -> None:
    # The tools' environment exists and lists a fixit command, but its Python cannot
    # import Fixit: `python -m fixit` would exit 1, as Fixit does with findings, and the
    # row would time an import error as a clean run. The script refuses before timing.
    work = tmp_path / "work"
    venv = work / "venv-tools"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    (venv / "bin" / "fixit").write_text("#!/bin/sh\nexit 0\n")
    proc = _run("--quick", "--no-busy", "--tools", "cgguard,fixit-cgguard", "--corpus", str(small_corpus),
                "--work", str(work))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    last = proc.stderr.strip().splitlines()[-1]
    assert last == (
        f"benchmarks/run.py: error: {venv / 'bin' / 'python'} cannot run cgguard's rule through Fixit "
        f"(ModuleNotFoundError: No module named 'fixit'); remove {venv} to have it installed again"
    ), last
    assert "Traceback" not in proc.stderr
    assert "| Fixit with cgguard's rule" not in proc.stdout


def test_each_ratio_target_divides_two_medians_of_the_same_rounds() -> None:
    """The ratio targets (issue 37) on rows with known samples: each is the ratio of two
    rows' medians over the rounds they both ran in, met or missed at its bound, and a
    target whose rows did not run is not judged (semgrep is not installed for the tests)."""
    bench = _script_module()

    def row(key: str, *walls: float):
        r = bench.Row(key, key, "tree", ["true"], bench.no_count, bench.no_count)
        r.samples = [bench.Sample(wall=w, cpu=w, rss_kb=0, rc=0, stdout="", stderr="") for w in walls]
        return r

    # Three rounds each: the medians are the middle values, whatever the order.
    rows = [row("cg_tree", 1.0, 1.3, 1.2), row("cg_tree_two_rules", 0.9, 1.0, 1.1),
            row("sg_tree", 30.0, 21.0, 25.0), row("py_libcst", 0.25, 0.2, 0.3),
            row("cg_runner", 0.5, 0.6, 0.4), row("cg_fix", 0.7, 0.65, 0.66),
            row("cg_many", 2.4, 2.5, 2.6), row("cg_many_double", 5.0, 5.3, 5.2)]
    checks = bench.ratio_checks(rows)
    assert checks["cg_tree_two_rules"] == (pytest.approx(1.2), True)  # every rule / CGG001-2 ≤ 1.5
    assert checks["sg_tree"] == (pytest.approx(25.0 / 1.2), True)  # semgrep / cgguard ≥ 20
    assert checks["cg_runner"] == (pytest.approx(2.0), True)  # ≤ 2.2× import libcst
    assert checks["cg_fix"] == (pytest.approx(2.64), False)  # over 2.6× import libcst
    assert checks["cg_many"] == (pytest.approx(10.0), True)  # ≤ 12× import libcst
    assert checks["cg_many_double"] == (pytest.approx(5.2 / 2.5), True)  # ≤ 2.1× the 2,000
    assert "cb_tree" not in checks  # no --baseline: nothing to judge
    # semgrep only 19× slower than every rule: missed.
    rows[2].samples = rows[2].samples[:1] + [bench.Sample(19 * 1.2, 0, 0, 0, "", "")] * 2
    assert bench.ratio_checks(rows)["sg_tree"] == (pytest.approx(19.0), False)
    # A baseline: this checkout's CGG001/CGG002 over the baseline's check, at most 1.05.
    rows.append(row("cb_tree", 0.95, 0.96, 0.97))
    assert bench.ratio_checks(rows)["cb_tree"] == (pytest.approx(1.0 / 0.96), True)
    rows[-1].samples = rows[-1].samples[:1]  # 0.95: CGG001/CGG002 alone 1.053× the baseline
    assert bench.ratio_checks(rows)["cb_tree"] == (pytest.approx(1.0 / 0.95), False)


def _large_kb() -> str:
    """The large silent module's size as the script's rows print it (``270 KB``)."""
    spec = importlib.util.spec_from_file_location("largesilent", REPO / "benchmarks" / "largesilent.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return f"{len(module.module_text().encode()) / 1000:.0f} KB"
