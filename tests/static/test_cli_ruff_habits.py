"""The habits a ruff user brings, with ruff's names and meaning, through the real command line:
`--exit-zero`, `-q/--quiet`, `--statistics`, `--show-files`, `--add-noqa`, and CGG100 (ruff's
RUF100: a suppression that silences nothing)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from cgguard.cli import main
from tests.conftest import REPO, cli_runner, run_cgguard
from tests.workflow.conftest import CGG001_SOURCE, CGG002_SOURCE, git, git_init, write

CGGUARD = str(Path(sys.executable).with_name("cgguard"))
CASES = REPO / "rules" / "CGG001" / "cases" / "flagged"


def _cgguard(*args: str, cwd: Path, input: str | None = None) -> subprocess.CompletedProcess:
    """The installed console script, as a user types it."""
    return subprocess.run(
        [CGGUARD, *args], cwd=cwd, capture_output=True, text=True, input=input, timeout=300
    )


def _tree(tmp_path: Path) -> Path:
    """One CGG001 with a safe fix, one with an unsafe fix (two findings), one CGG002."""
    write(tmp_path, {"safe.py": CGG001_SOURCE, "max.py": CGG002_SOURCE})
    shutil.copyfile(CASES / "no_request_count_in_class.pycase", tmp_path / "guessed.py")
    return tmp_path


# ---- --exit-zero ---------------------------------------------------------------------


def test_exit_zero_passes_findings_but_not_errors(tmp_path):
    _tree(tmp_path)
    plain = _cgguard("check", "--isolated", ".", cwd=tmp_path)
    assert plain.returncode == 1
    zero = _cgguard("check", "--isolated", "--exit-zero", ".", cwd=tmp_path)
    assert zero.returncode == 0 and zero.stdout == plain.stdout  # the same report
    fixed = _cgguard("fix", "--isolated", "--exit-zero", ".", cwd=tmp_path)
    assert fixed.returncode == 0 and " remain" in fixed.stdout  # unsafe fixes and CGG002 remain
    (tmp_path / "broken.py").write_text("cfg.num_gpu_blocks_override = max_cudagraph_capture_size(\n")
    error = _cgguard("check", "--isolated", "--exit-zero", ".", cwd=tmp_path)
    assert error.returncode == 2 and "broken.py: error: syntax error" in error.stderr


# ---- -q/--quiet ----------------------------------------------------------------------


def test_quiet_prints_findings_and_errors_only(tmp_path):
    _tree(tmp_path)
    (tmp_path / "README.md").write_text("not Python\n")
    loud = _cgguard("check", "--isolated", ".", "README.md", cwd=tmp_path)
    assert "README.md: warning:" in loud.stderr and loud.stdout.splitlines()[-1].startswith("Found 4")
    quiet = _cgguard("check", "--isolated", "-q", ".", "README.md", cwd=tmp_path)
    assert quiet.returncode == 1 and quiet.stderr == ""
    assert quiet.stdout == "".join(line + "\n" for line in loud.stdout.splitlines()[:-1])
    (tmp_path / "broken.py").write_text("cfg.num_gpu_blocks_override = max_cudagraph_capture_size(\n")
    errors = _cgguard("check", "--isolated", "--quiet", ".", cwd=tmp_path)
    assert errors.returncode == 2 and errors.stderr.startswith("broken.py: error: syntax error")
    fixed = _cgguard("fix", "--isolated", "-q", ".", cwd=tmp_path)
    assert "Fixed" not in fixed.stdout + fixed.stderr
    assert all(": CGG00" in line for line in fixed.stdout.splitlines())
    json_quiet = _cgguard("check", "--isolated", "-q", "--format", "json", "safe.py", cwd=tmp_path)
    assert json.loads(json_quiet.stdout) == [] and json_quiet.stderr == ""  # no summary either


# ---- --statistics --------------------------------------------------------------------


def test_statistics_counts_each_code_with_ruffs_fixable_mark(tmp_path):
    _tree(tmp_path)
    result = _cgguard("check", "--isolated", "--statistics", ".", cwd=tmp_path)
    assert result.returncode == 1
    assert result.stdout.splitlines() == [
        # CGG001: 1 safe fix and 2 unsafe ones (not applied without --unsafe-fixes): some.
        "3\tCGG001\t[~] per-token-profiling-blocks",
        "1\tCGG002\t[ ] max-with-capture-size-blocks",
        "[*] fixable with `cgguard fix` ([~]: some of them)",
        "Found 4 findings (1 fixable with `cgguard fix`, 2 more with `cgguard fix --unsafe-fixes`) "
        "in 3 files checked. Run `cgguard rule CODE` (CGG001, CGG002) for why and how to fix.",
    ]
    unsafe_on = run_cgguard("check", "--isolated", "--statistics", "--format", "json", "safe.py",
                            "guessed.py", cwd=tmp_path)
    assert json.loads(unsafe_on.stdout) == [
        {"code": "CGG001", "name": "per-token-profiling-blocks", "count": 3, "fixable_count": 1}
    ]
    (tmp_path / "cgguard.toml").write_text("unsafe-fixes = true\n")
    every = _cgguard("check", "--statistics", "-q", "safe.py", "guessed.py", cwd=tmp_path)
    assert every.stdout.splitlines()[0] == "3\tCGG001\t[*] per-token-profiling-blocks"
    bad = _cgguard("check", "--statistics", "--format", "sarif", ".", cwd=tmp_path)
    assert bad.returncode == 2 and bad.stderr == (
        "cgguard: error: --statistics prints text or json, not --format sarif "
        "(see `cgguard check --help`)\n"
    )


# ---- --show-files --------------------------------------------------------------------


def test_show_files_lists_what_discovery_keeps_and_checks_nothing(tmp_path):
    repo = git_init(tmp_path / "repo")
    write(repo, {
        ".gitignore": "generated/\n",
        "pyproject.toml": '[tool.cgguard]\nextend-exclude = ["third_party"]\n',
        "pkg/runner.py": CGG001_SOURCE,
        "pkg/max.py": CGG002_SOURCE,
        "generated/out.py": CGG001_SOURCE,
        "third_party/lib.py": CGG001_SOURCE,
        "notes.txt": "x\n",
    })
    git(repo, "add", "-A")
    result = _cgguard("check", "--show-files", ".", cwd=repo)
    assert (result.returncode, result.stderr) == (0, "")
    assert result.stdout == "pkg/max.py\npkg/runner.py\n"
    # The paths a run would check, as it names them: a file named alone, and what is wrong.
    named = _cgguard("check", "--show-files", "third_party/lib.py", "notes.txt", "nope", cwd=repo)
    assert named.returncode == 2 and named.stdout == "third_party/lib.py\n"
    assert named.stderr.splitlines() == [
        "notes.txt: warning: not a Python file (no .py or .pyi suffix, no python shebang); skipped",
        "nope: error: no such file or directory",
    ]
    forced = _cgguard("check", "--show-files", "--force-exclude", "third_party/lib.py", cwd=repo)
    assert (forced.returncode, forced.stdout) == (0, "")
    piped = _cgguard("check", "--show-files", "--stdin-filename", "pkg/x.py", cwd=repo, input="")
    assert piped.stdout == "pkg/x.py\n"


# ---- --add-noqa ----------------------------------------------------------------------


def test_add_noqa_silences_every_finding_and_changes_only_comments(tmp_path):
    _tree(tmp_path)
    multi = (
        "class R(GPUModelRunner):\n"
        "    def _init_minimal_kv_cache_for_profiling(self):\n"
        "        self.cache_config.num_gpu_blocks_override = (\n"
        "            self.compilation_config.max_cudagraph_capture_size\n"
        "        )  # sized per token on purpose\n"
    )
    write(tmp_path, {"multi.py": multi})
    crlf = CGG001_SOURCE.replace("min_blocks = ", "min_blocks = (  # sized per token\n        ", 1)
    crlf = crlf.replace(" or 1\n", " or 1\n        )  # noqa: E501\n", 1).replace("\n", "\r\n")
    crlf = "\x0c\r\n" + crlf  # a form feed: no line break for Python, nor for the line numbers
    (tmp_path / "crlf.py").write_bytes(crlf.encode())
    before = {p.name: p.read_bytes() for p in tmp_path.glob("*.py")}
    assert _cgguard("check", "--isolated", "crlf.py", cwd=tmp_path).returncode == 1

    result = _cgguard("check", "--isolated", "--add-noqa", ".", cwd=tmp_path)
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "Added 6 noqa directives.\n")
    after = _cgguard("check", "--isolated", ".", cwd=tmp_path)
    assert after.returncode == 0 and after.stdout.startswith("No findings"), after.stdout
    assert (tmp_path / "safe.py").read_text() == CGG001_SOURCE.replace(
        "capture_size or 1\n", "capture_size or 1  # noqa: CGG001\n")
    assert (tmp_path / "max.py").read_text().splitlines()[1].endswith("  # noqa: CGG002")
    # The closing line of the statement, after the comment already there.
    assert (tmp_path / "multi.py").read_text() == multi.replace(
        "on purpose\n", "on purpose  # noqa: CGG001\n")
    # An existing code list takes the code; the line endings stay CRLF.
    assert (tmp_path / "crlf.py").read_bytes() == before["crlf.py"].replace(
        b"# noqa: E501\r\n", b"# noqa: E501, CGG001\r\n")
    # Only comments were added: each file is its old lines with text appended.
    for name, old in before.items():
        new = (tmp_path / name).read_bytes()
        assert len(new.splitlines()) == len(old.splitlines())
        assert all(n.startswith(o.rstrip(b"\r\n")) for o, n in zip(old.splitlines(), new.splitlines()))
    again = _cgguard("check", "--isolated", "--add-noqa", ".", cwd=tmp_path)
    assert (again.returncode, again.stderr) == (0, "Added 0 noqa directives.\n")
    stdin = _cgguard("check", "--add-noqa", "-", cwd=tmp_path, input=CGG001_SOURCE)
    assert stdin.returncode == 2 and "standard input is no file" in stdin.stderr


def test_add_noqa_reports_a_file_it_cannot_read_and_goes_on(tmp_path):
    write(tmp_path, {"a.py": CGG001_SOURCE})
    (tmp_path / "bad.py").write_bytes(b"x = 'max_cudagraph_capture_size \xff'\n")
    result = _cgguard("check", "--isolated", "--add-noqa", ".", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        "bad.py: error: not valid UTF-8: byte 0xff at line 1, column 33 (offset 32)",
        "Added 1 noqa directive.",
    ]
    assert "# noqa: CGG001" in (tmp_path / "a.py").read_text()


# ---- CGG100: unused suppressions -----------------------------------------------------

UNUSED = (
    "x = 1  # noqa: CGG001\n"
    "y = 2  # noqa: E501, CGG\n"
    "z = 3  # cgguard: ignore\n"
    "w = 4  # noqa\n"
    "v = 5  # noqa: CGG001, CGG100\n"
    "u = 6  # noqa: E501\n"
)


def test_unused_suppressions_are_cgg100_when_selected(tmp_path):
    used = CGG001_SOURCE.replace("or 1\n", "or 1  # noqa: CGG001, CGG002\n")
    write(tmp_path, {"unused.py": UNUSED, "used.py": used})
    assert _cgguard("check", "--isolated", ".", cwd=tmp_path).stdout == "No findings in 2 files checked.\n"
    result = _cgguard("check", "--isolated", "--extend-select", "CGG100", ".", cwd=tmp_path)
    assert result.returncode == 1
    assert result.stdout.splitlines() == [
        "unused.py:1:8: CGG100 Unused `noqa` directive (unused: `CGG001`): it suppresses no finding; delete it",
        "unused.py:2:8: CGG100 Unused `noqa` directive (unused: `CGG`): it suppresses no finding; delete it",
        "unused.py:3:8: CGG100 Unused blanket `cgguard: ignore` directive: it suppresses no finding; delete it",
        # used.py: CGG001 is used, CGG002 is not.
        "used.py:3:79: CGG100 Unused `noqa` directive (unused: `CGG002`): it suppresses no finding; delete it",
        "Found 4 findings in 2 files checked. Run `cgguard rule CGG100` for why and how to fix.",
    ]
    # `select = ["CGG"]` selects it too; per-file-ignores silence it like any code.
    (tmp_path / "cgguard.toml").write_text(
        'select = ["CGG"]\nper-file-ignores = { "used.py" = ["CGG100"] }\n')
    settings = _cgguard("check", ".", cwd=tmp_path)
    assert [line.split(":")[0] for line in settings.stdout.splitlines()[:-1]] == ["unused.py"] * 3
    # A code the run does not report there is not judged: the directive may serve a run that does.
    (tmp_path / "cgguard.toml").write_text('select = ["CGG"]\nignore = ["CGG001"]\n')
    narrowed = _cgguard("check", ".", cwd=tmp_path)
    assert [line.split(":")[1] for line in narrowed.stdout.splitlines()[:-1]] == ["2", "3", "3"]
    piped = _cgguard("check", "--isolated", "--extend-select", "CGG100", "--stdin-filename", "p.py",
                     cwd=tmp_path, input=UNUSED)
    assert piped.stdout.count(": CGG100 ") == 3
    page = _cgguard("rule", "CGG100", cwd=tmp_path)
    assert page.returncode == 0 and "## Why is this bad?" in page.stdout
    assert "CGG100  unused-noqa: " in _cgguard("rule", cwd=tmp_path).stdout


def test_cgg100_sees_findings_across_modules(tmp_path):
    """A directive that silences a finding only a flow across modules shows is used."""
    case = next(c for c in _project_cases() if c.name == "imports_project_helper")
    root = case.write(tmp_path)
    plain = run_cgguard("check", "--isolated", ".", cwd=root)
    assert plain.returncode == 1
    line = plain.stdout.splitlines()[0]
    path, number = line.split(":")[:2]
    target = root / path
    lines = target.read_text().splitlines(keepends=True)
    lines[int(number) - 1] = lines[int(number) - 1].rstrip("\n") + "  # noqa: CGG001\n"
    target.write_text("".join(lines))
    result = run_cgguard("check", "--isolated", "--extend-select", "CGG100", ".", cwd=root)
    assert result.returncode == 0 and "CGG100" not in result.stdout, result.stdout


def _project_cases():
    from cgguard.static.workflow.ruledocs import get_rule

    doc = get_rule("CGG001")
    assert doc is not None
    return doc.project_cases("flagged")


def test_the_flags_in_process_agree_with_the_command_line(tmp_path, monkeypatch):
    """The same logic through click's runner (no interpreter start-up): what the tests above
    check through the console script."""
    _tree(tmp_path)
    monkeypatch.chdir(tmp_path)
    runner = cli_runner()
    stats = runner.invoke(main, ["check", "--isolated", "--statistics", "-q", "."])
    assert stats.exit_code == 1
    assert stats.output.splitlines()[:2] == [
        "3\tCGG001\t[~] per-token-profiling-blocks", "1\tCGG002\t[ ] max-with-capture-size-blocks"]
    zero = runner.invoke(main, ["check", "--isolated", "--exit-zero", "-q", "."])
    assert zero.exit_code == 0 and zero.output.count(": CGG00") == 4
    files = runner.invoke(main, ["check", "--isolated", "--show-files", "."])
    assert files.output.splitlines() == ["guessed.py", "max.py", "safe.py"]
