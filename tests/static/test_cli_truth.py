"""What the CLI says is true: summaries, exit codes, warnings, help, messages.

Each test runs the real CLI the way a new user would.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.conftest import REPO, run_cgguard
from tests.robustness.conftest import cgguard

BUGGY = (
    "class ForkModelRunner:\n"
    "    def _init_minimal_kv_cache_for_profiling(self):\n"
    "        min_blocks = self.compilation_config.max_cudagraph_capture_size or 1\n"
    "        self.cache_config.num_gpu_blocks_override = min_blocks\n"
)
# CGG002: a suggestion only, so `cgguard fix` leaves it in place.
SUGGESTION_ONLY = (
    "def at_least_sixteen(vllm_config):\n"
    "    min_blocks = max(16, vllm_config.compilation_config.max_cudagraph_capture_size)\n"
    "    vllm_config.cache_config.num_gpu_blocks_override = min_blocks\n"
)
CLEAN = "def f(x):\n    return x + 1\n"
HINT_001 = "Run `cgguard rule CGG001` for why and how to fix."
HINT_002 = "Run `cgguard rule CGG002` for why and how to fix."


def _write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


# ---- fix --diff -------------------------------------------------------------------


def test_fix_diff_exits_1_and_says_what_it_would_fix_and_what_would_remain(tmp_path):
    _write(tmp_path, {"runner.py": BUGGY, "suggest.py": SUGGESTION_ONLY, "clean.py": CLEAN})
    diff = run_cgguard("fix", "--diff", "runner.py", cwd=tmp_path)
    assert diff.returncode == 1  # a CI gate on --diff fails while the finding is on disk
    assert "+            min(self.max_num_reqs," in diff.stdout
    assert diff.stdout.splitlines()[-1] == "Would fix 1 finding. No findings would remain in 1 file checked."
    assert (tmp_path / "runner.py").read_text() == BUGGY
    both = run_cgguard("fix", "--diff", "runner.py", "suggest.py", cwd=tmp_path)
    assert both.returncode == 1
    assert both.stdout.splitlines()[-1] == (
        f"Would fix 1 finding. 1 finding would remain in 2 files checked. {HINT_002}"
    )
    clean = run_cgguard("fix", "--diff", "clean.py", cwd=tmp_path)
    assert (clean.returncode, clean.stdout) == (0, "Would fix 0 findings. No findings would remain in 1 file checked.\n")


def test_fix_exits_0_when_nothing_remains_1_when_findings_remain_2_on_errors(tmp_path):
    _write(tmp_path, {"runner.py": BUGGY, "suggest.py": SUGGESTION_ONLY})
    fixed = run_cgguard("fix", "runner.py", cwd=tmp_path)
    assert (fixed.returncode, fixed.stdout) == (0, "Fixed 1 finding. No findings remain in 1 file checked.\n")
    _write(tmp_path, {"runner.py": BUGGY})
    remains = run_cgguard("fix", "runner.py", "suggest.py", cwd=tmp_path)
    assert remains.returncode == 1
    assert remains.stdout.splitlines()[-1] == f"Fixed 1 finding. 1 finding remains in 2 files checked. {HINT_002}"
    broken = run_cgguard("fix", "suggest.py", "missing.py", cwd=tmp_path)
    assert broken.returncode == 2
    assert broken.stdout.splitlines()[-1] == (
        f"Fixed 0 findings. 1 finding remains in 1 file checked. 1 error. {HINT_002}"
    )


def test_fix_diff_keeps_machine_reports_off_the_diffs_stream(tmp_path):
    _write(tmp_path, {"runner.py": BUGGY})
    mixed = run_cgguard("fix", "--diff", "--format", "json", "runner.py", cwd=tmp_path)
    assert (mixed.returncode, mixed.stdout) == (2, "")
    assert mixed.stderr.count("\n") == 1 and "--output-file" in mixed.stderr
    apart = run_cgguard("fix", "--diff", "--format", "json", "-o", "report.json", "runner.py", cwd=tmp_path)
    assert apart.returncode == 1
    assert apart.stdout.startswith("--- a/runner.py")
    assert json.loads((tmp_path / "report.json").read_text()) == []  # nothing would remain
    assert (tmp_path / "runner.py").read_text() == BUGGY


# ---- a fix that cannot be written ------------------------------------------------------


def test_a_failed_write_leaves_its_finding_counted_as_remaining(tmp_path):
    (tmp_path / "ro").mkdir()
    (tmp_path / "ro" / "runner.py").write_text(BUGGY)
    os.chmod(tmp_path / "ro", 0o555)
    try:
        result = cgguard("fix", "ro", cwd=tmp_path, unprivileged=True)
    finally:
        os.chmod(tmp_path / "ro", 0o755)
    assert result.returncode == 2
    assert result.stderr.startswith("ro/runner.py: error: could not write the fixed file: permission denied")
    assert result.stderr.count("\n") == 1
    # The finding is still on disk, where the report points.
    assert result.stdout.splitlines() == [
        result.stdout.splitlines()[0],
        f"Fixed 0 findings. 1 finding remains in 1 file checked. 1 error. {HINT_001}",
    ]
    assert result.stdout.startswith("ro/runner.py:3:22: CGG001 ")
    assert (tmp_path / "ro" / "runner.py").read_text() == BUGGY


# ---- nothing to check ---------------------------------------------------------------


@pytest.mark.parametrize("command", ["check", "fix"])
def test_nothing_to_check_is_one_warning_and_exit_0(tmp_path, command):
    _write(tmp_path, {
        "docs/notes.txt": "not Python\n",
        "gen/made.py": BUGGY,
        "pyproject.toml": '[tool.cgguard]\nextend-exclude = ["gen/*.py"]\n',
    })
    (tmp_path / "empty").mkdir()
    warning = "warning: no Python files to check in this folder (none found)"
    for folder in ("empty", "docs"):  # empty, no Python
        result = run_cgguard(command, folder, cwd=tmp_path)
        assert result.returncode == 0, (folder, result.stdout, result.stderr)
        assert result.stderr == f"{folder}: {warning}\n"
        assert "0 files checked" in result.stdout and "error" not in result.stdout
    # Every file excluded: the folder named was not checked, an error that says why
    # (tests/workflow/test_nothing_checked.py has the details).
    excluded = run_cgguard(command, "gen", cwd=tmp_path)
    assert excluded.returncode == 2
    assert excluded.stderr.startswith("gen: error: nothing checked: its only Python file is excluded by `gen/*.py`")
    # The default path, `.`, in a folder without Python files.
    result = run_cgguard(command, cwd=tmp_path / "docs")
    assert (result.returncode, result.stderr) == (0, f".: {warning}\n")
    # Every named file excluded (--force-exclude, as pre-commit runs it).
    forced = run_cgguard(command, "--force-exclude", "gen/made.py", cwd=tmp_path)
    assert (forced.returncode, forced.stderr) == (0, "cgguard: warning: no Python files to check\n")


def test_for_doctor_a_folder_without_python_still_leaves_the_answer_open(tmp_path):
    # `check` warns and exits 0; doctor cannot call such a tree "not affected".
    (tmp_path / "empty").mkdir()
    result = run_cgguard("doctor", "--path", "empty", cwd=tmp_path)
    assert result.returncode == 2
    assert "in 0 files checked" in result.stdout
    assert result.stderr.startswith("empty: error: no Python files to check in this folder")


# ---- a missing path -------------------------------------------------------------------


def test_a_missing_path_is_an_error_not_a_checked_file(tmp_path):
    _write(tmp_path, {"clean.py": CLEAN})
    alone = run_cgguard("check", "nope", cwd=tmp_path)
    assert alone.returncode == 2
    assert alone.stderr == "nope: error: no such file or directory\n"
    assert alone.stdout == "No findings in 0 files checked. 1 error.\n"
    with_file = run_cgguard("check", "nope.py", "clean.py", cwd=tmp_path)
    assert with_file.stdout == "No findings in 1 file checked. 1 error.\n"
    # A file that cannot be parsed is not a checked file either.
    _write(tmp_path, {"broken.py": "cfg.num_gpu_blocks_override = self.max_cudagraph_capture_size or (\n"})
    broken = run_cgguard("check", "broken.py", "clean.py", cwd=tmp_path)
    assert broken.stdout == "No findings in 1 file checked. 1 error.\n"


# ---- syntax errors: which files are parsed ------------------------------------------------


def test_syntax_errors_are_reported_in_the_files_cgguard_parses_as_the_linter_page_says(tmp_path):
    _write(tmp_path, {
        "mentions.py": (
            "def f(self):\n    n = self.compilation_config.max_cudagraph_capture_size or 1\n"
            "    self.cache_config.num_gpu_blocks_override = n\n    def (\n"
        ),
        # A block-named local and a kernel's ``num_blocks=`` are no sink: no sink word.
        "no_sink.py": (
            "def f(self):\n    n = self.compilation_config.max_cudagraph_capture_size or 1\n"
            "    blocks = n\n    launch(grid, num_blocks=blocks)\n    def (\n"
        ),
        "plain.py": "def f(:\n",
        # ``capture_size`` and ``batch_sizes`` are parts of the sources' names, not one.
        "near.py": "def f(capture_size, batch_sizes):\n    blocks = capture_size\n    def (\n",
    })
    parsed = run_cgguard("check", "mentions.py", cwd=tmp_path)
    assert parsed.returncode == 2
    assert parsed.stderr.startswith("mentions.py: error: syntax error at line 4")
    # A file that never mentions a capture size is not parsed: nothing in it can be a finding.
    unparsed = run_cgguard("check", "plain.py", cwd=tmp_path)
    assert (unparsed.returncode, unparsed.stderr) == (0, "")
    # Nor is one that holds only part of a source's name: a source names it whole.
    near = run_cgguard("check", "near.py", cwd=tmp_path)
    assert (near.returncode, near.stderr) == (0, ""), near.stderr
    linter_page = " ".join((REPO / "docs" / "linter.md").read_text(encoding="utf-8").split())
    for name in ("max_cudagraph_capture_size", "max_capture_size", "cudagraph_capture_sizes",
                 "cudagraph_batch_sizes"):
        assert f"`{name}`" in linter_page[linter_page.index("## Which files are parsed"):]
    # A file that mentions one but no sink word is parsed only where another module of its
    # project could complete a flow with it: not outside any project ...
    no_sink = run_cgguard("check", "no_sink.py", cwd=tmp_path)
    assert (no_sink.returncode, no_sink.stderr) == (0, ""), no_sink.stderr
    # ... nor in a project whose modules it cannot be (its path is no module name) and
    # whose modules it does not import ...
    no_sink_text = (tmp_path / "no_sink.py").read_text()
    _write(tmp_path / "proj", {
        "pyproject.toml": "[project]\nname = 'proj'\n",
        "pkg/__init__.py": "",
        "pkg/helpers.py": "def set_count(cfg, n):\n    cfg.num_gpu_blocks_override = n\n",
        "pkg/no_sink.py": no_sink_text,
        "my-scripts/no_sink.py": no_sink_text,
        "my-scripts/importer.py": "from pkg.helpers import set_count\n" + no_sink_text,
    })
    # ... nor as a module of its project that no module naming a sink word imports, when it
    # calls no function of the project whose parameter reaches a sink ...
    for command in ("check", "fix"):
        for unparsed_path in ("no_sink.py", "proj/my-scripts/no_sink.py", "proj/pkg/no_sink.py"):
            script = run_cgguard(command, unparsed_path, cwd=tmp_path)
            assert (script.returncode, script.stderr) == (0, ""), (command, script.stderr)
    # ... but where it names such a function (``set_count``, a helper there that allocates),
    # or a module naming a sink word imports it (its helper may be the count), it is parsed,
    # and its syntax error reported.
    (tmp_path / "proj" / "pkg" / "profiling.py").write_text(
        "from pkg.no_sink import f\n\n\ndef g(cfg):\n    cfg.num_gpu_blocks_override = f(cfg)\n"
    )
    for parsed_path in ("proj/pkg/no_sink.py", "proj/my-scripts/importer.py"):
        for command in ("check", "fix"):
            in_project = run_cgguard(command, parsed_path, cwd=tmp_path)
            assert in_project.returncode == 2, (parsed_path, command, in_project.stderr)
            assert in_project.stderr.startswith(f"{parsed_path}: error: "), in_project.stderr
            assert "syntax error at line" in in_project.stderr
    # The words the page lists are the model's sink words.
    from cgguard.static.rules.configs import CAPTURE_SIZE_BLOCKS
    parsed_section = linter_page[linter_page.index("## Which files are parsed"):]
    assert all(f"`{word}`" in parsed_section for word in CAPTURE_SIZE_BLOCKS.sink_words)
    assert "`my-scripts/tool.py`" in parsed_section
    # The linter page's exit-code section says exactly that, instead of promising 2 for any
    # unparsable file.
    linter = (REPO / "docs" / "linter.md").read_text(encoding="utf-8")
    exit_codes = linter[linter.index("## Exit codes"):linter.index("## Which files are checked")]
    assert "unparsable file" not in exit_codes
    assert "never mentions a capture size is not parsed" in " ".join(exit_codes.split())


# ---- files that are not Python ---------------------------------------------------------


@pytest.mark.parametrize("command", ["check", "fix"])
def test_a_named_file_that_is_not_python_is_skipped_with_a_warning(tmp_path, command):
    _write(tmp_path, {
        "README.md": "# Notes\n\nmin_blocks = self.compilation_config.max_cudagraph_capture_size or 1\n",
        "notes.txt": "hello\n",
        "tool": "#!/usr/bin/env python3\n" + BUGGY,   # a Python script without a suffix
        "runner.pyi": CLEAN,
    })
    result = run_cgguard(command, "README.md", "notes.txt", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    reason = "warning: not a Python file (no .py or .pyi suffix, no python shebang); skipped"
    assert result.stderr.splitlines() == [f"README.md: {reason}", f"notes.txt: {reason}"]
    assert "0 files checked" in result.stdout
    script = run_cgguard(command, "tool", "runner.pyi", cwd=tmp_path)
    assert script.stderr == ""
    assert "in 2 files checked" in script.stdout
    if command == "check":
        assert script.returncode == 1 and script.stdout.startswith("tool:4:22: CGG001 ")
    else:
        assert script.returncode == 0 and "min(self.max_num_reqs," in (tmp_path / "tool").read_text()


# ---- scripts/check-release ------------------------------------------------------------


def _offline_index(folder: Path, wheel_version: str | None = None) -> dict:
    """pip settings that see only ``folder`` (no network), holding a tiny vllm wheel if asked."""
    folder.mkdir()
    if wheel_version:
        dist = f"vllm-{wheel_version}.dist-info"
        with zipfile.ZipFile(folder / f"vllm-{wheel_version}-py3-none-any.whl", "w") as z:
            z.writestr("vllm/__init__.py", "")
            z.writestr("vllm/v1/worker/gpu_model_runner.py", BUGGY)
            z.writestr(f"{dist}/METADATA", f"Metadata-Version: 2.1\nName: vllm\nVersion: {wheel_version}\n")
            z.writestr(f"{dist}/WHEEL", "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
            z.writestr(f"{dist}/RECORD", "")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    env.update({"PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(folder), "PIP_DISABLE_PIP_VERSION_CHECK": "1",
                "PATH": f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"})
    return env


def test_check_release_says_in_one_line_when_a_version_cannot_be_downloaded(tmp_path):
    env = _offline_index(tmp_path / "index")
    result = subprocess.run([str(REPO / "scripts" / "check-release"), "9.9.9"], capture_output=True, text=True,
                            env=env, timeout=300, cwd=tmp_path)
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr == (
        "scripts/check-release: error: cannot download vLLM 9.9.9: No matching distribution found for vllm==9.9.9\n"
    )
    usage = subprocess.run([str(REPO / "scripts" / "check-release")], capture_output=True, text=True, env=env)
    assert usage.returncode == 2 and usage.stderr.count("\n") == 1 and "usage:" in usage.stderr


def test_check_release_runs_cgguard_on_a_downloaded_release(tmp_path):
    env = _offline_index(tmp_path / "index", "0.25.0")
    result = subprocess.run([str(REPO / "scripts" / "check-release"), "0.25.0"], capture_output=True, text=True,
                            env=env, timeout=300, cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    assert result.stdout.startswith("vllm/v1/worker/gpu_model_runner.py:3:22: CGG001 ")
    assert result.stderr == "vLLM 0.25.0: 2 Python files\n"


# ---- --help ------------------------------------------------------------------------------


def test_help_gives_each_command_a_whole_one_line_description():
    result = run_cgguard("--help", env={"COLUMNS": "80"})
    assert result.returncode == 0
    commands = result.stdout[result.stdout.index("Commands:\n") + len("Commands:\n"):].splitlines()
    names = [line.split()[0] for line in commands]
    assert names == ["check", "config", "doctor", "estimate", "fix", "rule", "triage"]  # one line each
    for line in commands:
        assert len(line) <= 80 and "..." not in line and line.endswith("."), line


def test_check_help_names_what_every_rule_reports():
    # check reports every rule, not only the per-token block counts: its help says so.
    from cgguard.static.rules.configs import CONFIGURATIONS

    result = run_cgguard("check", "--help", env={"COLUMNS": "100"})
    assert result.returncode == 0
    text = " ".join(result.stdout.split())
    assert "Report counts in the wrong unit" in text
    codes = {code for c in CONFIGURATIONS for code in c.codes}
    assert codes == {"CGG001", "CGG002", "CGG003"}
    assert "CGG001 and CGG002: per-token profiling block counts." in text
    assert "CGG003: a count of tokens where a count of requests belongs, or the reverse" in text


# ---- short messages, the why elsewhere, the hint ----------------------------------------


def test_findings_are_short_lines_and_the_summary_points_to_cgguard_rule(tmp_path):
    _write(tmp_path, {"runner.py": BUGGY, "suggest.py": SUGGESTION_ONLY})
    result = run_cgguard("check", ".", cwd=tmp_path)
    assert result.returncode == 1
    *lines, summary = result.stdout.splitlines()
    assert len(lines) == 2
    for line in lines:
        message = re.match(r"^[^:]+:\d+:\d+: CGG\d{3} (.*)$", line).group(1)
        assert len(message) <= 120, message
    runner = next(line for line in lines if line.startswith("runner.py"))
    assert "min(self.max_num_reqs," in runner  # what to write instead
    assert summary == (
        "Found 2 findings (1 fixable with `cgguard fix`) in 2 files checked. "
        "Run `cgguard rule CODE` (CGG001, CGG002) for why and how to fix."
    )
    # The longer why: in `full` and in `cgguard rule`.
    full = run_cgguard("check", "--format", "full", "runner.py", cwd=tmp_path).stdout
    assert "  = why: `max_cudagraph_capture_size` counts tokens." in full
    assert "  = help: `cgguard rule CGG001`" in full
    assert "counts **tokens**" in run_cgguard("rule", "CGG001").stdout
    # The linter page shows exactly this output.
    from tests.workflow.conftest import readme_snippet

    (tmp_path / "only").mkdir()
    (tmp_path / "only" / "runner.py").write_text(BUGGY)
    assert run_cgguard("check", "runner.py", cwd=tmp_path / "only").stdout == readme_snippet("check-output", "docs/linter.md")
    # No finding, no hint.
    _write(tmp_path, {"runner.py": CLEAN, "suggest.py": CLEAN})
    assert "cgguard rule" not in run_cgguard("check", "runner.py", "suggest.py", cwd=tmp_path).stdout


# ---- outside git: the same files from any working directory --------------------------------


@pytest.mark.parametrize("marker", ["pyproject.toml", "cgguard.toml", ".git"])
def test_outside_git_the_root_gitignore_applies_from_any_working_directory(tmp_path, marker):
    root = _write(tmp_path / "proj", {
        ".gitignore": "generated_*.py\n",
        "sub/generated_a.py": BUGGY,
        "sub/deep/runner.py": BUGGY,
    })
    # A root marker with no settings in it; `.git` as a plain folder git cannot use.
    (root / marker).mkdir() if marker == ".git" else (root / marker).write_text("")
    env = {"GIT_CEILING_DIRECTORIES": str(tmp_path), "GIT_DIR": str(tmp_path / "no-such-git-dir")}
    runs = {
        "from the root": run_cgguard("check", "sub", cwd=root, env=env),
        "from the folder": run_cgguard("check", ".", cwd=root / "sub", env=env),
        "from elsewhere": run_cgguard("check", "proj/sub", cwd=tmp_path, env=env),
        "from below": run_cgguard("check", "..", cwd=root / "sub" / "deep", env=env),
    }
    for where, result in runs.items():
        assert result.returncode == 1, (where, result.stderr)
        found = [line.split(":", 1)[0] for line in result.stdout.splitlines() if ": CGG001 " in line]
        assert len(found) == 1 and found[0].endswith("deep/runner.py"), (where, result.stdout)
        assert result.stdout.splitlines()[-1].startswith("Found 1 finding (1 fixable with `cgguard fix`) in 1 file")
