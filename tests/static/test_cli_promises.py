"""What the command line promises around the edges of a run, through the real CLI:

- unsafe fixes: one label for both kinds, counted in the summary with the flag
  that applies them, and the same counts from `check` and `fix --diff`;
- `--output-file` never replaces an input, and a bad one fails before anything
  is read or written;
- a reader that goes away (`| head -1`) ends the run silently, with the run's own
  exit code; a standard output that cannot be written is one error line;
- `--config` with `--isolated` is a usage error; `--select`/`--extend-select`/
  `--ignore` on the command line combine with the settings as in ruff;
- no `--help` refers to the project's internal issues.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO, run_cgguard
from tests.workflow.conftest import readme_snippet

CASES = REPO / "rules" / "CGG001" / "cases" / "flagged"
# The two kinds of unsafe fix: no request count in the class (`self.max_num_reqs` is
# guessed; two findings), and a capture size the file compares with None (one).
GUESSED = "no_request_count_in_class"
NONE_CHECKED = "capture_size_may_be_none"
SAFE_CASE = "v025_runner"  # one finding, a safe fix

BOTH_RULES = (
    "class ForkModelRunner(GPUModelRunner):\n"
    "    def _init_minimal_kv_cache_for_profiling(self):\n"
    "        min_blocks = self.compilation_config.max_cudagraph_capture_size or 1\n"
    "        self.cache_config.num_gpu_blocks_override = min_blocks\n"
    "\n"
    "    def other(self):\n"
    "        num_blocks = max(self.compilation_config.max_cudagraph_capture_size, self.max_num_reqs)\n"
    "        self.cache_config.num_gpu_blocks_override = num_blocks\n"
)
FINDING = re.compile(r"^\S+:\d+:\d+: (CGG\d{3}) (.*)$")


def _case(folder: Path, name: str) -> Path:
    target = folder / f"{name}.py"
    shutil.copyfile(CASES / f"{name}.pycase", target)
    return target


def _unsafe_tree(tmp_path: Path) -> Path:
    src = tmp_path / "src"
    src.mkdir()
    for name in (GUESSED, NONE_CHECKED, SAFE_CASE):
        _case(src, name)
    return src


def _findings(stdout: str) -> list[tuple[str, str]]:
    return [m.groups() for m in map(FINDING.match, stdout.splitlines()) if m]


# ---- unsafe fixes ------------------------------------------------------------------


def test_both_kinds_of_unsafe_fix_carry_the_same_label(tmp_path):
    src = _unsafe_tree(tmp_path)
    result = run_cgguard("check", "--isolated", "src", cwd=tmp_path)
    by_file = {}
    for line in result.stdout.splitlines()[:-1]:
        by_file.setdefault(line.split(":")[0], []).append(line)
    unsafe = by_file[f"src/{GUESSED}.py"] + by_file[f"src/{NONE_CHECKED}.py"]
    assert len(unsafe) == 3
    assert all(line.endswith("` (unsafe fix)") for line in unsafe), unsafe
    assert not any("unsafe" in line for line in by_file[f"src/{SAFE_CASE}.py"])
    # The why is in the fix's description, for both kinds (full format).
    full = run_cgguard("check", "--isolated", "--format", "full", "src", cwd=tmp_path).stdout
    assert "= fix (unsafe): " in full and "nothing shows that this class has `self.max_num_reqs`" in full
    assert "this file checks the capture size for None, and min() with None raises" in full
    assert src.is_dir()


def test_summary_counts_the_fixes_that_need_the_flag_and_names_it(tmp_path):
    _unsafe_tree(tmp_path)
    hint = "Run `cgguard rule CGG001` for why and how to fix."
    check = run_cgguard("check", "--isolated", "src", cwd=tmp_path)
    assert check.returncode == 1
    assert check.stdout.splitlines()[-1] == (
        "Found 4 findings (1 fixable with `cgguard fix`, 3 more with `cgguard fix --unsafe-fixes`) "
        f"in 3 files checked. {hint}"
    ) == readme_snippet("unsafe-summary", "docs/linter.md").strip()
    diff = run_cgguard("fix", "--isolated", "--diff", "src", cwd=tmp_path)
    assert diff.stdout.splitlines()[-1] == (
        "Would fix 1 finding. 3 findings would remain (3 fixable with `cgguard fix --unsafe-fixes`) "
        f"in 3 files checked. {hint}"
    )
    fixed = run_cgguard("fix", "--isolated", "src", cwd=tmp_path)
    assert fixed.returncode == 1
    assert fixed.stdout.splitlines()[-1] == (
        "Fixed 1 finding. 3 findings remain (3 fixable with `cgguard fix --unsafe-fixes`) "
        f"in 3 files checked. {hint}"
    )
    # Only unsafe fixes left: the count names the flag alone. And the flag does it.
    again = run_cgguard("check", "--isolated", "src", cwd=tmp_path)
    assert again.stdout.splitlines()[-1].startswith(
        "Found 3 findings (3 fixable with `cgguard fix --unsafe-fixes`) in 3 files checked."
    )
    unsafe = run_cgguard("fix", "--isolated", "--unsafe-fixes", "src", cwd=tmp_path)
    assert unsafe.returncode == 0
    assert unsafe.stdout == "Fixed 3 findings. No findings remain in 3 files checked.\n"
    linter = " ".join((REPO / "docs" / "linter.md").read_text(encoding="utf-8").split())
    assert f"After `cgguard fix` it says ``{fixed.stdout.splitlines()[-1].replace(' ' + hint, '')}``" in linter


def test_with_unsafe_fixes_on_in_the_settings_check_and_fix_diff_give_the_same_counts(tmp_path):
    _unsafe_tree(tmp_path)
    (tmp_path / "pyproject.toml").write_text("[tool.cgguard]\nunsafe-fixes = true\n")
    check = run_cgguard("check", "src", cwd=tmp_path)
    diff = run_cgguard("fix", "--diff", "src", cwd=tmp_path)
    found = re.match(r"Found (\d+) findings \((\d+) fixable with `cgguard fix`\) in", check.stdout.splitlines()[-1])
    would = re.match(r"Would fix (\d+) findings\. No findings would remain", diff.stdout.splitlines()[-1])
    assert found and would, (check.stdout, diff.stdout)
    assert found[1] == found[2] == would[1] == "4"
    assert "--unsafe-fixes" not in check.stdout.splitlines()[-1]


def test_rule_page_quotes_the_label_the_message_ends_with(tmp_path):
    _case(tmp_path, NONE_CHECKED)
    message = _findings(run_cgguard("check", "--isolated", ".", cwd=tmp_path).stdout)[0][1]
    page = run_cgguard("rule", "CGG001").stdout
    label = re.search(r"the message ends in `([^`]+)`", page)
    assert label, "rule page does not say how the message labels an unsafe fix"
    assert message.endswith(f" {label[1]}")


# ---- --output-file never destroys input --------------------------------------------


def _one_error_line(result) -> str:
    lines = result.stderr.splitlines()
    assert result.returncode == 2 and len(lines) == 1, (result.returncode, result.stderr)
    assert lines[0].startswith("cgguard: error: ")
    return lines[0]


@pytest.mark.parametrize("command", ["check", "fix"])
def test_output_file_that_is_an_input_is_refused(tmp_path, command):
    src = tmp_path / "src"
    src.mkdir()
    runner = _case(src, SAFE_CASE)
    (tmp_path / "link.py").symlink_to(runner)
    before = runner.read_bytes()
    for output, paths in (
        ("src/v025_runner.py", ["src/v025_runner.py"]),  # the file named
        ("src/v025_runner.py", ["src"]),                 # a file the folder search finds
        ("link.py", ["src/v025_runner.py"]),             # the same file through a symlink
        ("src/v025_runner.py", ["link.py"]),
        ("./src/../src/v025_runner.py", ["."]),
    ):
        result = run_cgguard(command, "--isolated", "-o", output, *paths, cwd=tmp_path)
        line = _one_error_line(result)
        assert "is one of the files to check" in line, line
        assert line.endswith(f" (see `cgguard {command} --help`)"), line
        assert runner.read_bytes() == before
        assert (tmp_path / "link.py").is_symlink()
    # A report beside the sources is no source: it is written.
    ok = run_cgguard("check", "--isolated", "-o", "src/report.txt", "src", cwd=tmp_path)
    assert ok.returncode == 1 and (src / "report.txt").read_text().startswith("src/v025_runner.py:")


@pytest.mark.parametrize("output", ["no/such/dir/r.txt", "folder"])
def test_fix_validates_the_output_file_before_it_writes_anything(tmp_path, output):
    (tmp_path / "folder").mkdir()
    x = _case(tmp_path, SAFE_CASE)
    before = x.read_bytes()
    for command in (["fix"], ["fix", "--unsafe-fixes"], ["check"]):
        result = run_cgguard(*command, "--isolated", "-o", output, x.name, cwd=tmp_path)
        line = _one_error_line(result)
        assert f"cannot write {output}: " in line
        assert line.endswith(f" (see `cgguard {command[0]} --help`)"), line
        assert x.read_bytes() == before
    # Standard input is not even read.
    stdin = run_cgguard("fix", "--isolated", "-o", output, "-", cwd=tmp_path, input=before.decode())
    _one_error_line(stdin)
    assert stdin.stdout == ""


# ---- a reader that goes away ------------------------------------------------------


def _closed_reader(args, cwd) -> subprocess.CompletedProcess:
    """Run cgguard with standard output a pipe whose reader is already gone."""
    read, write = os.pipe()
    os.close(read)
    try:
        return subprocess.run([sys.executable, "-m", "cgguard", *args], cwd=cwd, stdout=write,
                              stderr=subprocess.PIPE, text=True, timeout=600)
    finally:
        os.close(write)


def test_a_closed_standard_output_leaves_each_commands_own_exit_code(tmp_path):
    _unsafe_tree(tmp_path)
    for args, code in (
        (["rule", "CGG001"], 0), (["rule"], 0), (["--help"], 0), (["check", "--help"], 0),
        (["check", "--isolated", "src"], 1), (["check", "--isolated", "--format", "full", "src"], 1),
        (["check", "--isolated", "--format", "json", "src"], 1),
        (["fix", "--isolated", "--diff", "src"], 1), (["config"], 0),
        (["doctor", "--path", "src"], 1),
    ):
        result = _closed_reader(args, tmp_path)
        read = subprocess.run([sys.executable, "-m", "cgguard", *args], cwd=tmp_path,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                              timeout=600)
        # Nothing said about the reader: standard error is what it is when all is read.
        assert (result.returncode, result.stderr) == (code, read.stderr), args
        assert read.returncode == code


def _head_one_line(args, cwd) -> tuple[int, bytes, bytes]:
    """`cgguard ARGS | head -1` through a real shell pipe: cgguard's exit code, the line, stderr."""
    script = f"{sys.executable} -m cgguard {' '.join(args)} 2>stderr.txt | head -1; exit ${{PIPESTATUS[0]}}"
    proc = subprocess.run(["bash", "-c", script], cwd=cwd, capture_output=True, timeout=600)
    return proc.returncode, proc.stdout, (cwd / "stderr.txt").read_bytes()


def test_head_one_line_gives_the_same_exit_code_for_short_and_long_output(tmp_path):
    # The README's `cgguard rule CGG001 | head -1`, a short report and a long diff: the
    # exit code is what the run found, whenever the reader left.
    src = _unsafe_tree(tmp_path)
    text = (CASES / f"{SAFE_CASE}.pycase").read_text()
    for i in range(300):  # about 200 KB of diff, more than a pipe holds
        (src / f"runner_{i}.py").write_text(text)
    code, line, stderr = _head_one_line(["rule", "CGG001"], tmp_path)
    assert (code, line, stderr) == (0, b"# CGG001 (per-token-profiling-blocks)\n", b"")
    code, line, stderr = _head_one_line(["check", "--isolated", "--format", "full", "src"], tmp_path)
    assert (code, stderr) == (1, b"") and line.startswith(b"src/")
    code, line, stderr = _head_one_line(["fix", "--isolated", "--diff", "src"], tmp_path)
    assert (code, stderr) == (1, b"") and line.startswith(b"--- a/src/")
    assert all(p.read_text() == text for p in src.glob("runner_*.py"))  # --diff wrote nothing


def test_head_reading_one_line_of_a_long_diff(tmp_path):
    # More diff than a pipe holds (64 KiB): cgguard is still writing when the reader goes.
    src = tmp_path / "src"
    src.mkdir()
    text = (CASES / f"{SAFE_CASE}.pycase").read_text()
    for i in range(300):  # about 200 KB of diff
        (src / f"runner_{i}.py").write_text(text)
    proc = subprocess.Popen([sys.executable, "-m", "cgguard", "fix", "--isolated", "--diff", "src"],
                            cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    first = proc.stdout.readline()
    proc.stdout.close()
    stderr = proc.stderr.read()
    assert proc.wait(timeout=600) == 1  # it would fix something, as without the pipe
    assert first.startswith(b"--- a/src/runner_") and stderr == b""
    assert all(p.read_text() == text for p in src.iterdir())  # --diff wrote nothing


def test_fix_with_a_closed_standard_output_writes_whole_files(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    names = ["v025_runner", "helper_return", "local_aliases"]
    for name in names:
        _case(src, name)
    result = _closed_reader(["fix", "--isolated", "src"], tmp_path)
    assert (result.returncode, result.stderr) == (0, "")  # nothing remains
    for name in names:
        assert (src / f"{name}.py").read_text() == (CASES / f"{name}.fixed.pycase").read_text()


def test_a_standard_output_that_cannot_be_written_is_one_error_line(tmp_path):
    _unsafe_tree(tmp_path)
    for args in (["check", "--isolated", "src"], ["rule", "CGG001"], ["fix", "--isolated", "--diff", "src"],
                 ["--help"], ["-h"], ["--version"], ["check", "--help"]):
        with open("/dev/full", "w") as full:
            result = subprocess.run([sys.executable, "-m", "cgguard", *args], cwd=tmp_path,
                                    stdout=full, stderr=subprocess.PIPE, text=True, timeout=600)
        assert result.returncode == 2, args
        assert result.stderr == "cgguard: error: cannot write to standard output: No space left on device\n", args


# ---- usage: --config with --isolated, selection on the command line ---------------


@pytest.mark.parametrize("command", [["check", "."], ["fix", "--diff", "."], ["config"]])
def test_config_with_isolated_is_a_usage_error(tmp_path, command):
    (tmp_path / "cgguard.toml").write_text('ignore = ["CGG002"]\n')
    (tmp_path / "both.py").write_text(BOTH_RULES)
    result = run_cgguard(command[0], "--config", "cgguard.toml", "--isolated", *command[1:], cwd=tmp_path)
    assert _one_error_line(result) == (
        "cgguard: error: --config cannot be used with --isolated (which ignores every configuration file)"
        f" (see `cgguard {command[0]} --help`)"
    )
    assert result.stdout == ""


def _codes(tmp_path, *args) -> list[str]:
    result = run_cgguard("check", *args, ".", cwd=tmp_path)
    assert result.returncode in (0, 1), result.stderr
    return [code for code, _ in _findings(result.stdout)]


@pytest.mark.parametrize("settings, args, expected", [
    # No settings file: the command line alone.
    ("", [], ["CGG001", "CGG002"]),
    ("", ["--select", "CGG002"], ["CGG002"]),
    ("", ["--select", "CGG001,CGG002"], ["CGG001", "CGG002"]),
    ("", ["--select", "CGG001", "--select", "CGG002"], ["CGG001", "CGG002"]),
    ("", ["--ignore", "CGG001"], ["CGG002"]),
    ("", ["--select", "CGG", "--ignore", "CGG002"], ["CGG001"]),
    ("", ["--ignore", "CGG", "--extend-select", "CGG001"], ["CGG001"]),  # more specific wins
    ("", ["--select", "CGG001", "--ignore", "CGG001"], []),              # ignore wins a tie
    # With a settings file: --select starts over, --extend-select and --ignore adjust it.
    ('ignore = ["CGG002"]', [], ["CGG001"]),
    ('ignore = ["CGG002"]', ["--select", "CGG002"], ["CGG002"]),
    ('ignore = ["CGG002"]', ["--select", "CGG"], ["CGG001", "CGG002"]),
    ('ignore = ["CGG002"]', ["--extend-select", "CGG002"], ["CGG001", "CGG002"]),
    ('ignore = ["CGG002"]', ["--ignore", "CGG001"], []),
    ('select = ["CGG001"]', ["--extend-select", "CGG002"], ["CGG001", "CGG002"]),
    ('select = ["CGG001"]', ["--ignore", "CGG001"], []),
])
def test_selection_on_the_command_line_combines_with_the_settings_as_in_ruff(tmp_path, settings, args,
                                                                               expected):
    (tmp_path / "cgguard.toml").write_text(settings + "\n")
    (tmp_path / "both.py").write_text(BOTH_RULES)
    assert _codes(tmp_path, *args) == expected


def test_selection_in_pre_commit_args(tmp_path):
    # pre-commit runs the hook's entry, then the hook's `args:`, then the staged files.
    import yaml

    hooks = {h["id"]: h for h in yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text())}
    (tmp_path / "both.py").write_text(BOTH_RULES)
    entry = hooks["cgguard-check"]["entry"].split()
    assert entry[0] == "cgguard"
    result = run_cgguard(*entry[1:], "--isolated", "--ignore", "CGG001", "both.py", cwd=tmp_path)
    assert [code for code, _ in _findings(result.stdout)] == ["CGG002"]


def test_the_check_hook_reports_and_names_every_rule(tmp_path):
    # The hook's description names what its entry reports: CGG003 too.
    import yaml

    hook = {h["id"]: h for h in yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text())}[
        "cgguard-check"
    ]
    case = REPO / "rules" / "CGG003" / "cases" / "flagged" / "capture_size_against_mamba_blocks.pycase"
    (tmp_path / "both.py").write_text(BOTH_RULES)
    (tmp_path / "mamba.py").write_text(case.read_text())
    entry = hook["entry"].split()
    result = run_cgguard(*entry[1:], "--isolated", "both.py", "mamba.py", cwd=tmp_path)
    reported = {code for code, _ in _findings(result.stdout)}
    assert reported == {"CGG001", "CGG002", "CGG003"}
    for code in reported:
        assert code in hook["description"]


def test_fix_honours_selection_on_the_command_line(tmp_path):
    both = tmp_path / "both.py"
    both.write_text(BOTH_RULES)
    result = run_cgguard("fix", "--isolated", "--ignore", "CGG001", ".", cwd=tmp_path)
    assert both.read_text() == BOTH_RULES
    assert result.stdout.splitlines()[-1].startswith("Fixed 0 findings. 1 finding remains")
    run_cgguard("fix", "--isolated", "--select", "CGG001", ".", cwd=tmp_path)
    assert both.read_text() != BOTH_RULES


@pytest.mark.parametrize("option", ["--select", "--extend-select", "--ignore"])
def test_unknown_code_on_the_command_line_is_a_usage_error(tmp_path, option):
    (tmp_path / "both.py").write_text(BOTH_RULES)
    for command in ("check", "fix"):
        result = run_cgguard(command, "--isolated", option, "CGG001,E501", ".", cwd=tmp_path)
        assert _one_error_line(result) == (
            f"cgguard: error: {option}: unknown rule code 'E501' (known: CGG001, CGG002, CGG003, CGG100)"
            f" (see `cgguard {command} --help`)"
        )
        assert (tmp_path / "both.py").read_text() == BOTH_RULES


# ---- no internal references in what users read ------------------------------------


def test_no_help_or_rule_page_mentions_an_issue():
    top = run_cgguard("--help").stdout
    commands = re.findall(r"^  (\w+)  ", top.split("Commands:")[1], re.M)
    assert {"check", "fix", "rule", "doctor", "estimate", "config"} <= set(commands)
    texts = {"cgguard --help": top, "cgguard rule": run_cgguard("rule").stdout}
    for name in commands:
        texts[f"cgguard {name} --help"] = run_cgguard(name, "--help").stdout
    for code in ("CGG001", "CGG002"):
        texts[f"cgguard rule {code}"] = run_cgguard("rule", code).stdout
    for where, text in texts.items():
        assert text.strip(), where
        assert not re.search(r"\bissues?\b", text, re.I), where


# ---- usage errors are one line; options that would do nothing are refused ----------


@pytest.mark.parametrize("args, line", [
    (["check", "--frmat", "json"],
     "cgguard: error: No such option '--frmat'. Did you mean '--format'? (see `cgguard check --help`)"),
    (["check", "--format", "xml"],
     "cgguard: error: Invalid value for '--format': 'xml' is not one of 'text', 'full', 'json', "
     "'sarif', 'github' (see `cgguard check --help`)"),
    (["estimate", "--max-num-seqs", "0", "."],
     "cgguard: error: Invalid value for '--max-num-seqs': 0 is not in the range x>=1 "
     "(see `cgguard estimate --help`)"),
    (["estimate", "--vllm-version", "banana", "."],
     "cgguard: error: Invalid value for '--vllm-version': 'banana' is not a release number (X.Y.Z) "
     "(see `cgguard estimate --help`)"),
    (["no-such-command"], "cgguard: error: No such command 'no-such-command' (see `cgguard --help`)"),
    (["fix", "--diff", "--unsafe-fixes=maybe"],
     "cgguard: error: Option '--unsafe-fixes' does not take a value (see `cgguard fix --help`)"),
    # ruff's `check --fix` habit: pointed to `cgguard fix`, not to a look-alike option.
    (["check", "--fix", "."],
     "cgguard: error: `cgguard check` does not fix (no --fix option): `cgguard fix` applies the "
     "fixes, `cgguard fix --diff` shows them (see `cgguard check --help`)"),
    (["rule", "CGG999"], "cgguard: error: unknown rule 'CGG999' (known: CGG001, CGG002, CGG003, CGG100) "
                         "(see `cgguard rule --help`)"),
])
def test_a_usage_error_is_one_line_and_exit_2(tmp_path, args, line):
    result = run_cgguard(*args, cwd=tmp_path)
    assert (result.returncode, result.stderr, result.stdout) == (2, line + "\n", "")


@pytest.mark.parametrize("settings, args, line", [
    ("", ["--select", ""], "cgguard: error: --select: an empty value names no rule code{see}"),
    ("", ["--select", ","], "cgguard: error: --select: an empty value names no rule code{see}"),
    ("", ["--ignore", ""], "cgguard: error: --ignore: an empty value names no rule code{see}"),
    ("select = []", [], "cgguard: error: {toml}: select: an empty list selects no rule "
                        "(leave `select` out to select every rule)"),
])
def test_a_selection_of_no_rule_is_refused(tmp_path, settings, args, line):
    (tmp_path / "cgguard.toml").write_text(settings + "\n")
    (tmp_path / "both.py").write_text(BOTH_RULES)
    for command in (["check"], ["fix"], ["fix", "--diff"]):
        result = run_cgguard(*command, *args, ".", cwd=tmp_path)
        # Bad usage ends with the help to read; a settings file's error names the file instead.
        see = f" (see `cgguard {command[0]} --help`)"
        assert _one_error_line(result) == line.format(toml=tmp_path / "cgguard.toml", see=see), command
    assert (tmp_path / "both.py").read_text() == BOTH_RULES


def test_stdin_filename_without_standard_input_is_refused(tmp_path):
    (tmp_path / "both.py").write_text(BOTH_RULES)
    for command in ("check", "fix"):
        result = run_cgguard(command, "--stdin-filename", "x.py", "both.py", cwd=tmp_path)
        assert _one_error_line(result) == (
            "cgguard: error: --stdin-filename names the file piped in as `-`; "
            f"it cannot be used with other paths (see `cgguard {command} --help`)"
        )
    assert (tmp_path / "both.py").read_text() == BOTH_RULES
    # With no path it reads standard input, as with `-`.
    piped = run_cgguard("check", "--stdin-filename", "x.py", cwd=tmp_path, input=BOTH_RULES)
    assert piped.returncode == 1 and piped.stdout.startswith("x.py:3:")


def test_config_of_a_path_that_does_not_exist_is_an_error(tmp_path):
    result = run_cgguard("config", "no/such/path", cwd=tmp_path)
    assert _one_error_line(result) == (
        "cgguard: error: no/such/path: no such file or directory (see `cgguard config --help`)"
    )
    assert result.stdout == ""


def test_fix_diff_with_an_output_file_writes_the_diff_there(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    _case(repo, SAFE_CASE)
    result = run_cgguard("fix", "--isolated", "--diff", "-o", "../fix.patch", ".", cwd=repo)
    assert result.returncode == 1, result.stderr
    assert result.stdout == ""  # the diff is in the file, the report on standard error
    assert result.stderr.startswith("Would fix 1 finding.")
    patch = (tmp_path / "fix.patch").read_text()
    assert patch.startswith(f"--- a/{SAFE_CASE}.py\n+++ b/{SAFE_CASE}.py\n@@ ")
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    subprocess.run(["git", "apply", "../fix.patch"], cwd=repo, check=True)
    assert (repo / f"{SAFE_CASE}.py").read_text() == (CASES / f"{SAFE_CASE}.fixed.pycase").read_text()
    # Standard input alike: the diff in the file, the report on standard error.
    (repo / f"{SAFE_CASE}.py").write_text((CASES / f"{SAFE_CASE}.pycase").read_text())
    piped = run_cgguard("fix", "--isolated", "--diff", "-o", "../stdin.patch", "-",
                        "--stdin-filename", f"{SAFE_CASE}.py", cwd=repo,
                        input=(CASES / f"{SAFE_CASE}.pycase").read_text())
    assert (piped.returncode, piped.stdout) == (1, ""), piped.stderr
    assert piped.stderr.startswith("Would fix 1 finding.")
    assert (tmp_path / "stdin.patch").read_text().startswith(f"--- a/{SAFE_CASE}.py\n")
    (repo / f"{SAFE_CASE}.py").write_text((CASES / f"{SAFE_CASE}.fixed.pycase").read_text())
    # A machine report keeps the file, and the diff keeps standard output.
    result = run_cgguard("fix", "--isolated", "--diff", "--format", "json", "-o", "../r.json", ".",
                         cwd=repo)
    assert result.returncode == 0 and result.stdout == ""  # nothing left to fix
    assert (tmp_path / "r.json").read_text() == "[]\n"


# ---- CGGUARD_JOBS -------------------------------------------------------------------


@pytest.mark.parametrize("value", ["abc", "-1", "0", "3", " 1"])
def test_a_bad_cgguard_jobs_is_one_line_before_anything_is_read(tmp_path, value):
    (tmp_path / "both.py").write_text(BOTH_RULES)
    for command in (["check"], ["fix"], ["fix", "--diff"]):
        result = run_cgguard(*command, "--isolated", ".", cwd=tmp_path, env={"CGGUARD_JOBS": value})
        assert (result.returncode, result.stdout) == (2, ""), command
        assert result.stderr == (
            f"cgguard: error: CGGUARD_JOBS={value!r}: use 1 (one process) or 2 (a second process "
            "shares the files), or leave it unset (cgguard decides)\n"
        )
    assert (tmp_path / "both.py").read_text() == BOTH_RULES
    (tmp_path / "both.py").write_text("def f(x):\n    return x\n")
    for good in ("1", "2", ""):
        ok = run_cgguard("check", "--isolated", ".", cwd=tmp_path, env={"CGGUARD_JOBS": good})
        assert (ok.returncode, ok.stdout, ok.stderr) == (0, "No findings in 1 file checked.\n", ""), good
