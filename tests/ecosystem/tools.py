"""Running the real tools on a folder: cgguard, Fixit and libcst's codemod CLI.

Two ways to run Fixit and the codemod:

- as a user types them, in a fresh interpreter of the test environment
  (:func:`fixit_lint`, :func:`fixit_fix`, :func:`codemod`): for the tests about the
  command line itself (the docs' commands, a bad settings file, ``fixit test``);
- their own command-line code called in this interpreter (:func:`fixit_in_process`,
  :func:`codemod_in_process`): the same commands and options, the same output, without
  a new interpreter and worker processes for every folder. The shared fixtures run them
  once over a root that holds every case, and each test reads its case's part.

Findings come back as ``(path, line, column, code, message)`` with 1-based columns and
paths relative to the folder. cgguard itself always runs as its real CLI (a fresh
interpreter starts in well under a second).
"""

from __future__ import annotations

import contextlib
import functools
import io
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from cgguard.static.workflow.ruledocs import RuleCase, all_rules
from tests.conftest import run_cgguard

FIXIT_RULES = "cgguard.ecosystem.fixit"
CODEMOD = "cgguard.ecosystem.codemod.BoundProfilingBlocks"
# `path@LINE:COL RULE: message` with Fixit's 0-based column, then maybe ` (has autofix)`.
FIXIT_LINE = re.compile(
    r"^(?P<path>.+)@(?P<line>\d+):(?P<col>\d+) (?P<code>CGG\d{3}): (?P<msg>.*?)(?P<fix> \(has autofix\))?$"
)

Finding = tuple[str, int, int, str, str]


def run_python(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], cwd=cwd, capture_output=True, text=True, timeout=600)


def cgguard_findings(folder: Path, *options: str) -> set[Finding]:
    result = run_cgguard("check", *options, "--format", "json", ".", cwd=folder)
    assert result.returncode in (0, 1), result.stderr
    return {(Path(f["path"]).as_posix(), f["line"], f["column"], f["code"], f["message"]) for f in json.loads(result.stdout)}


def fixit_lint(folder: Path) -> subprocess.CompletedProcess:
    result = run_python("-m", "fixit", "--rules", FIXIT_RULES, "lint", ".", cwd=folder)
    assert result.returncode in (0, 1), result.stdout + result.stderr
    return result


def fixit_findings(folder: Path) -> set[Finding]:
    return {f for f, _ in fixit_findings_and_autofix(folder)}


def fixit_findings_and_autofix(folder: Path) -> set[tuple[Finding, bool]]:
    """Each finding ``fixit lint`` prints, and whether it says ``(has autofix)``."""
    result = fixit_lint(folder)
    return parse_fixit_output(result.stdout, result.stderr)


def parse_fixit_output(stdout: str, stderr: str = "") -> set[tuple[Finding, bool]]:
    """The findings of Fixit's output lines (every line must be one), with their autofix flag."""
    found = set()
    for line in stdout.splitlines():
        m = FIXIT_LINE.match(line)
        assert m, f"unexpected Fixit output line: {line!r}\n{stderr}"
        found.add(((Path(m["path"]).as_posix(), int(m["line"]), int(m["col"]) + 1, m["code"], m["msg"]), bool(m["fix"])))
    return found


def fixit_fix(folder: Path) -> subprocess.CompletedProcess:
    result = run_python("-m", "fixit", "--rules", FIXIT_RULES, "fix", "--automatic", ".", cwd=folder)
    assert result.returncode in (0, 1), result.stdout + result.stderr
    return result


def codemod(folder: Path) -> subprocess.CompletedProcess:
    result = run_python("-m", "libcst.tool", "codemod", "-x", "--no-format", CODEMOD, ".", cwd=folder)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Failed to codemod 0 files" in result.stderr
    return result


def kind_of_findings(rule_code: str, case: RuleCase) -> tuple:
    """What cgguard's settings and the tools' wiring act on in a case: its rule and kind,
    and each finding's code and fix applicability ("" for a finding without a fix)."""
    from cgguard.static.driver.check import check_source

    found = check_source(case.source(), str(case.path))
    return (rule_code, case.kind, tuple(sorted({(f.code, f.fix.applicability if f.fix else "") for f in found})))


@functools.cache
def cases_of_every_kind(per_kind: int) -> dict[tuple, list[tuple[str, RuleCase]]]:
    """The first ``per_kind`` rule cases (with their rule's code) of each
    :func:`kind_of_findings`, by kind: both rules, flagged and silent, fixes of each
    applicability and none. Where a test is about a setting or a command line, not
    about each case's findings (which the shared runs over every case compare)."""
    kinds: dict[tuple, list[tuple[str, RuleCase]]] = {}
    for rule in all_rules():
        for case in rule.cases():
            picked = kinds.setdefault(kind_of_findings(rule.code, case), [])
            if len(picked) < per_kind:
                picked.append((rule.code, case))
    return kinds


def case_file_name(rule_code: str, case: RuleCase) -> str:
    """A rule case's file name in the folders the tests write."""
    return f"{rule_code}_{case.kind}_{case.name}.py"


def files(folder: Path) -> dict[str, bytes]:
    """Every Python file under ``folder`` by relative path, with its bytes."""
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*.py"))}


def part(found: set, prefix: str) -> set:
    """The findings (or ``(finding, autofix)`` pairs) under ``prefix/``, paths relative to it."""

    def strip(f: tuple) -> tuple | None:
        if isinstance(f[0], tuple):
            inner = strip(f[0])
            return None if inner is None else (inner, *f[1:])
        return (f[0][len(prefix) + 1 :], *f[1:]) if f[0].startswith(prefix + "/") else None

    return {s for s in map(strip, found) if s is not None}


def files_part(all_files: dict[str, bytes], prefix: str) -> dict[str, bytes]:
    """:func:`files` of the subfolder ``prefix``, from the files of the whole root."""
    return {name[len(prefix) + 1 :]: data for name, data in all_files.items() if name.startswith(prefix + "/")}


# ---- the tools' own command-line code, in this interpreter ----------------------------


@contextlib.contextmanager
def _inside(folder: Path) -> Iterator[None]:
    """Run from ``folder``, as the command lines above do (``cwd=folder``, path ``.``)."""
    before = os.getcwd()
    os.chdir(folder)
    try:
        yield
    finally:
        os.chdir(before)


@dataclass(frozen=True)
class FixitRun:
    found: set[tuple[Finding, bool]]  # each finding Fixit printed, and whether it had an autofix

    @property
    def findings(self) -> set[Finding]:
        return {f for f, _ in self.found}


def fixit_in_process(folder: Path) -> FixitRun:
    """``fixit --rules cgguard.ecosystem.fixit fix --automatic .`` run from ``folder`` by
    Fixit's own command-line code in this interpreter: it prints each finding as
    ``fixit lint`` does (with ``(has autofix)``) and writes the fixes, so one run gives
    both (Fixit's ``fix`` runs its files one by one, in its own process, as here)."""
    from click.testing import CliRunner
    from fixit.cli import main

    with _inside(folder):
        result = CliRunner(mix_stderr=False).invoke(main, ["--rules", FIXIT_RULES, "fix", "--automatic", "."])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.stderr
    assert result.exit_code == 0, result.stdout + result.stderr
    assert "EXCEPTION" not in result.stdout + result.stderr, result.stdout + result.stderr
    return FixitRun(parse_fixit_output(result.stdout, result.stderr))


def codemod_in_process(folder: Path) -> str:
    """``python -m libcst.tool codemod -x --no-format ... .`` run from ``folder`` by libcst's
    own command-line code in this interpreter, one file after another (``-j 1``, as the
    command does for a few files); returns what it printed (its warnings among it)."""
    from libcst.tool import main

    said = io.StringIO()
    with _inside(folder), contextlib.redirect_stderr(said), contextlib.redirect_stdout(said):
        rc = main("libcst.tool", ["codemod", "-x", "--no-format", CODEMOD, "-j", "1", "--hide-progress", "."])
    assert rc == 0, said.getvalue()
    assert "Failed to codemod 0 files" in said.getvalue(), said.getvalue()
    return said.getvalue()
