#!/usr/bin/env python3
"""Recall and false positives on the rules' example cases: cgguard, semgrep, Fixit.

Run it with the project's interpreter, which has cgguard installed:

    .venv/bin/python benchmarks/recall.py                    # cgguard, semgrep and Fixit
    .venv/bin/python benchmarks/recall.py --tools cgguard    # no install needed
    .venv/bin/python benchmarks/recall.py --cases v025_runner,per_token_buffers

Every case under ``rules/<CODE>/cases/`` is a unit: a flagged case is *caught* when the
tool reports anything in it, a silent case is a *false positive* when the tool reports
anything in it. Single-file cases are written as ``files/<CODE>_<kind>_<name>.py``,
project cases (folders of modules) as ``projects/<CODE>_<kind>/<name>/`` with their
root marker, all under ``<work>/recall`` (default ``benchmarks/.work/recall``); each
tool runs once over both folders:

- cgguard: ``python -m cgguard check --isolated --format json`` with this interpreter;
- semgrep: ``benchmarks/rules/semgrep.yml`` (taint mode), as ``benchmarks/run.py`` runs it;
- Fixit: the benchmark's own rule, ``benchmarks/rules/fixit_rule.py``.

semgrep and Fixit are installed into ``<work>/venv-tools`` by ``benchmarks/run.py``'s
installer when missing. The Markdown tables go to stdout; progress goes to stderr.
Exit code 0 when every tool ran, 2 when one failed or nothing matched ``--cases``.
"""

from __future__ import annotations

import argparse
import datetime
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
ALL_TOOLS = ("cgguard", "semgrep", "fixit")
TOOL_LABELS = {"cgguard": "cgguard", "semgrep": "semgrep (taint rule)", "fixit": "Fixit (benchmark rule)"}
# Case names start with their family; the other cases have none of these prefixes.
FAMILIES = {
    "precision": "precision (bounded on every path?)",
    "version": "version-spanning reads and sinks",
    "members": "members (properties, tuples, static/class methods, attributes)",
    "imports": "names through imports (aliases, other modules)",
}
EARLIER = "other cases (no family prefix)"
_FIXIT_REPORT = re.compile(r"^(\S.*?)@(\d+):\d+ PerTokenProfilingBlocks: ", re.M)


def _load_bench():
    """benchmarks/run.py as a module: its installer and semgrep settings are reused."""
    spec = importlib.util.spec_from_file_location("cgguard_benchmarks_run", HERE / "run.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


bench = _load_bench()
BenchError = bench.BenchError


@dataclass
class Unit:
    """One case, as the tools see it."""

    key: str  # <CODE>_<kind>_<name>
    code: str
    kind: str  # flagged | silent
    name: str
    modules: int  # 1 for a single-file case
    expected_at: frozenset[tuple[str, int]]  # (path under the recall folder, line) marked `# expect:`
    reports: dict[str, int] = field(default_factory=dict)  # tool -> reports in this case
    cgguard_at: set[tuple[str, int]] = field(default_factory=set)  # where cgguard reported

    @property
    def expected(self) -> int:
        return len(self.expected_at)

    @property
    def cgguard_exact(self) -> bool:
        """cgguard's findings are the lines the case marks, no more, no fewer."""
        return self.cgguard_at == set(self.expected_at) and self.reports.get("cgguard", 0) == self.expected

    @property
    def family(self) -> str:
        return FAMILIES.get(self.name.split("_", 1)[0], EARLIER)

    def wrong(self, tool: str) -> bool:
        n = self.reports.get(tool, 0)
        return n == 0 if self.kind == "flagged" else n > 0


def _selected(wanted: list[str] | None, code: str, kind: str, name: str) -> bool:
    if not wanted:
        return True
    return any(w in (name, f"{code}/{kind}/{name}", f"{code}_{kind}_{name}") for w in wanted)


def write_cases(dest: Path, wanted: list[str] | None) -> list[Unit]:
    """Every (selected) case of every rule under ``dest``, fresh."""
    from cgguard.static.workflow.ruledocs import all_rules

    shutil.rmtree(dest, ignore_errors=True)
    (dest / "files").mkdir(parents=True)
    (dest / "projects").mkdir()
    # Fixit (through trailrunner) skips what an enclosing .gitignore lists, and this
    # repository ignores benchmarks/.work: a root of its own, no ignores, no config.
    (dest / "pyproject.toml").write_text(
        "# Marks this folder as its own project root for the tools benchmarks/recall.py runs.\n"
        "[tool.fixit]\nroot = true\n"
    )
    # semgrep runs from here: an empty .semgrepignore stops its default ignores.
    (dest / ".semgrepignore").write_text("")
    units: list[Unit] = []
    for rule in all_rules():
        for case in rule.cases():
            if not _selected(wanted, rule.code, case.kind, case.name):
                continue
            key = f"{rule.code}_{case.kind}_{case.name}"
            text = case.source()
            rel = f"files/{key}.py"
            (dest / rel).write_text(text, encoding="utf-8")
            units.append(Unit(key, rule.code, case.kind, case.name, 1, _expect_lines(rel, text)))
        for project in rule.project_cases():
            if not _selected(wanted, rule.code, project.kind, project.name):
                continue
            project.write(dest / "projects" / f"{rule.code}_{project.kind}")
            modules = project.modules()
            base = f"projects/{rule.code}_{project.kind}/{project.name}"
            expected = frozenset().union(*(_expect_lines(f"{base}/{m.rel}", m.source()) for m in modules))
            units.append(Unit(f"{rule.code}_{project.kind}_{project.name}", rule.code, project.kind,
                              project.name, len(modules), expected))
    if not units:
        raise BenchError(f"no rule case matches --cases {','.join(wanted or [])}")
    return units


def _expect_lines(rel: str, text: str) -> frozenset[tuple[str, int]]:
    from cgguard.static.workflow.ruledocs import expected_findings

    return frozenset((rel, line) for line, _ in expected_findings(text))


def _relative(path: str, root: Path) -> str | None:
    p = Path(path)
    if p.is_absolute():
        try:
            p = p.relative_to(root)
        except ValueError:
            return None
    return p.as_posix().removeprefix("./")


def _unit_of(path: str, root: Path) -> str | None:
    """The case a reported path belongs to (None: not one of ours)."""
    rel = _relative(path, root)
    if rel is None:
        return None
    parts = rel.split("/")
    if parts[0] == "files" and len(parts) == 2:
        return parts[1].removesuffix(".py")
    if parts[0] == "projects" and len(parts) >= 4:
        return f"{parts[1]}_{parts[2]}"
    return None


def _run(cmd: list[str], cwd: Path, env: dict[str, str] | None, tool: str) -> subprocess.CompletedProcess:
    bench._log(f"recall: {tool}")
    try:
        proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=1800)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise BenchError(f"{tool}: `{' '.join(cmd)}` did not run: {exc}") from None
    if proc.returncode not in (0, 1):
        tail = " | ".join((proc.stderr or proc.stdout).strip().splitlines()[-3:])
        raise BenchError(f"{tool}: `{' '.join(cmd)}` exited {proc.returncode}: {tail}")
    return proc


def reported_paths(tool: str, root: Path, work: Path) -> list[tuple[str, int]]:
    """(path, line) of every report the tool makes over the cases."""
    targets = ["files", "projects"]
    if tool == "cgguard":
        proc = _run([sys.executable, "-m", "cgguard", "check", "--isolated", "--format", "json", *targets],
                    root, None, tool)
        try:
            return [(f["path"], f["line"]) for f in json.loads(proc.stdout)]
        except (ValueError, KeyError, TypeError):
            raise BenchError("cgguard on the rule cases: output is not the JSON expected") from None
    venv_bin = bench.tools_venv(work) / "bin"
    if tool == "semgrep":
        # --timeout 0: no per-file time limit (semgrep's default of 5 s per rule and file
        # can drop a result on a loaded machine; recall must not depend on load).
        cmd = [str(venv_bin / "semgrep"), "scan", "--config", str(bench.RULES / "semgrep.yml"), "--json",
               "--quiet", "--metrics=off", "--disable-version-check", "--no-git-ignore", "--timeout", "0", *targets]
        proc = _run(cmd, root, bench.semgrep_environment(), tool)
        try:
            out = json.loads(proc.stdout)
        except ValueError:
            raise BenchError("semgrep on the rule cases: output is not the JSON expected") from None
        if out.get("errors"):
            first = out["errors"][0]
            raise BenchError(f"semgrep on the rule cases: {len(out['errors'])} errors, the first: "
                             f"{first.get('message', first)!s:.200}")
        return [(r["path"], r["start"]["line"]) for r in out.get("results", [])]
    env = dict(os.environ, PYTHONPATH=str(bench.RULES))
    proc = _run([str(venv_bin / "fixit"), "--rules", "fixit_rule", "lint", *targets], root, env, tool)
    return [(path, int(line)) for path, line in _FIXIT_REPORT.findall(proc.stdout)]


def tool_versions(tools: list[str], work: Path) -> list[str]:
    venv_bin = bench.tools_venv(work) / "bin"
    out = []
    for tool in tools:
        if tool == "semgrep":
            out.append(f"semgrep {bench.tool_version([str(venv_bin / 'semgrep'), '--version'], bench.semgrep_environment())}")
        elif tool == "fixit":
            out.append(f"Fixit {bench.tool_version([str(venv_bin / 'fixit'), '--version']).split()[-1]}")
    return out


def cgguard_commit() -> str:
    try:
        proc = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    if proc.returncode != 0:
        return "unknown"
    dirty = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "--", "cgguard", "rules"],
                           capture_output=True, text=True, timeout=30).stdout.strip()
    return proc.stdout.strip() + (" with uncommitted changes" if dirty else "")


def _pct(n: int, total: int) -> str:
    return f"{n}/{total} ({100 * n / total:.0f}%)" if total else "0/0"


def report(units: list[Unit], tools: list[str], versions: list[str]) -> str:
    flagged = [u for u in units if u.kind == "flagged"]
    silent = [u for u in units if u.kind == "silent"]
    projects = sum(u.modules > 1 for u in units)
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    out = ["## Recall on the rules' example cases", "",
           f"Run on {when}, cgguard at commit `{cgguard_commit()}`"
           + (f"; {', '.join(versions)}" if versions else "") + ".",
           f"`rules/<CODE>/cases/`: {len(flagged)} flagged cases, {len(silent)} silent cases "
           f"(of all {len(units)}, {projects} are projects of several modules). A flagged case is caught when the tool "
           "reports anything in it; a silent case with any report is a false positive.", "",
           "| tool | flagged cases caught (recall) | silent cases with a report (false positives) |",
           "|---|---:|---:|"]
    for tool in tools:
        caught = sum(not u.wrong(tool) for u in flagged)
        noisy = sum(u.wrong(tool) for u in silent)
        out.append(f"| {TOOL_LABELS[tool]} | {_pct(caught, len(flagged))} | {noisy}/{len(silent)} |")
    if "cgguard" in tools:
        exact = sum(u.cgguard_exact for u in units)
        out += ["", f"cgguard's findings are exactly the lines the case marks `# expect:` in {exact}/{len(units)} "
                "cases (what `tests/static/test_rule_cases.py` requires, with the expected fixes; "
                "semgrep and Fixit report at the sink, and have no fixes, so only case-level counts compare)."]

    families = [f for f in [*FAMILIES.values(), EARLIER] if any(u.family == f for u in units)]
    out += ["", "By family (flagged caught, silent with a report):", "",
            "| family | flagged | silent | " + " | ".join(TOOL_LABELS[t] for t in tools) + " |",
            "|---|---:|---:|" + "---|" * len(tools)]
    for fam in families:
        fl = [u for u in flagged if u.family == fam]
        si = [u for u in silent if u.family == fam]
        cells = [f"{sum(not u.wrong(t) for u in fl)}/{len(fl)} caught, {sum(u.wrong(t) for u in si)}/{len(si)} noisy"
                 for t in tools]
        out.append(f"| {fam} | {len(fl)} | {len(si)} | " + " | ".join(cells) + " |")

    out += ["", "Per case: reports in the case (**bold**: a flagged case missed, or a silent case reported). "
            "`expected` counts the lines the case marks `# expect:` (cgguard's findings must be exactly those, "
            "`tests/static/test_rule_cases.py`); semgrep reports each sink a flow reaches, so its count can differ.",
            "", "| case | kind | expected | " + " | ".join(tools) + " |", "|---|---|---:|" + "---:|" * len(tools)]
    for u in units:
        name = f"{u.code}/{u.kind}/{u.name}" + ("/ (project)" if u.modules > 1 else "")
        cells = [f"**{u.reports.get(t, 0)}**" if u.wrong(t) else str(u.reports.get(t, 0)) for t in tools]
        if "cgguard" in tools and not u.cgguard_exact and not u.wrong("cgguard"):
            cells[tools.index("cgguard")] += " (not exactly the expected lines)"
        out.append(f"| {name} | {u.kind} | {u.expected} | " + " | ".join(cells) + " |")
    return "\n".join(out) + "\n"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tools", default=",".join(ALL_TOOLS), help="comma list of " + ",".join(ALL_TOOLS))
    p.add_argument("--cases", default="", help="comma list of case names (or CODE/kind/name); default: all")
    p.add_argument("--work", type=Path, default=bench.DEFAULT_WORK, help="where the cases and the tool venv go")
    args = p.parse_args(argv)
    tools = [t.strip() for t in args.tools.split(",") if t.strip()]
    unknown = sorted(set(tools) - set(ALL_TOOLS))
    if unknown:
        p.error(f"unknown tool(s): {', '.join(unknown)} (choose from {', '.join(ALL_TOOLS)})")
    args.tools = [t for t in ALL_TOOLS if t in tools]
    args.cases = [c.strip() for c in args.cases.split(",") if c.strip()]
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        work = args.work.resolve()
        root = work / "recall"
        units = write_cases(root, args.cases)
        bench.ensure_tools(work, set(args.tools))
        by_key = {u.key: u for u in units}
        for tool in args.tools:
            for path, line in reported_paths(tool, root, work):
                key = _unit_of(path, root)
                if key in by_key:
                    by_key[key].reports[tool] = by_key[key].reports.get(tool, 0) + 1
                    if tool == "cgguard":
                        by_key[key].cgguard_at.add((_relative(path, root), line))
        table = report(units, args.tools, tool_versions(args.tools, work))
    except BenchError as exc:
        print(f"benchmarks/recall.py: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("benchmarks/recall.py: interrupted", file=sys.stderr)
        return 130
    sys.stdout.write(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
