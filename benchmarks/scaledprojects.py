"""Peak memory of a fork's checkout scaled to N files, for each of the rules' project cases.

Issue 36 asks that a fork's checkout cost what a package costs, in memory too: ``cgguard
check`` at most 200 MB and ``cgguard fix`` at most 250 MB at peak, on the buggy vLLM tree as a
fork (``benchmarks/run.py`` times that) and on every project case of the rules scaled to a
fork's size. This script builds the second.

Each project case (a folder under ``rules/<CODE>/cases/{flagged,silent}/``) is written as a
fork's checkout: its modules and a ``pyproject.toml`` at the top of a folder that ``git init``
made a repository, and the installed vLLM package's files beside them as the package
``vllm/`` (then again as ``vllm_more/``, as far as needed), copied, until the checkout holds
N Python files (3,000 by default). So a case's
``from vllm.v1.worker.gpu_model_runner import GPUModelRunner`` resolves to vLLM's real runner,
which its flows then read. vLLM's own files carry upstream's bound: they add reading and no
finding.

Each case runs ``cgguard check --isolated --format json .`` and then ``cgguard fix --isolated
.`` once each, in a fresh process, as a user runs them (the default: ``CGGUARD_JOBS`` unset).
The table gives each run's peak RSS (``wait4``: the process and the children it waited for)
and wall time, and whether the findings are the case's own: check reports exactly the lines
its modules mark ``# expect: CODE`` (nothing in vLLM's files), and fix writes each module's
expected fix (and changes no file of vLLM's). ``--strict`` exits 1 where a target is missed.

    .venv/bin/python benchmarks/scaledprojects.py                 # every project case, 3,000 files
    .venv/bin/python benchmarks/scaledprojects.py --files 500 --only imports_project_helper
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from benchmarks.run import (  # noqa: E402  (the checkout's own modules, after the path)
    BenchError,
    _source_files,
    cgguard_command,
    default_corpus,
    git_init,
    measure,
)
from cgguard.static.workflow.ruledocs import ProjectCase, all_rules  # noqa: E402

CHECK_TARGET_MB = 200
FIX_TARGET_MB = 250
# The packages vLLM's files go under, in order, until the checkout holds the files asked for.
FILLER_PACKAGES = ("vllm", "vllm_more")


@dataclass
class Result:
    case: str
    files: int
    check_mb: float
    check_s: float
    fix_mb: float
    fix_s: float
    findings_ok: bool
    fixes_ok: bool
    problem: str  # what differed, in one line ("" when nothing did)

    @property
    def passed(self) -> bool:
        return (
            self.check_mb <= CHECK_TARGET_MB
            and self.fix_mb <= FIX_TARGET_MB
            and self.findings_ok
            and self.fixes_ok
        )


def project_cases(only: str | None) -> list[ProjectCase]:
    cases = [
        c
        for rule in all_rules()
        for kind in ("flagged", "silent")
        for c in rule.project_cases(kind)
    ]
    return [c for c in cases if only is None or only in c.id]


def _copy(source: Path, target: Path) -> None:
    # A copy, not a hard link: a fix that wrote a file in place would otherwise write into
    # the installed vLLM, and the check that vLLM's files are unchanged would not see it.
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, target)


def build_checkout(
    case: ProjectCase, dest: Path, corpus: list[tuple[Path, str]], files: int
) -> Path:
    """The case as a fork's checkout of ``files`` Python files (see the module's docstring)."""
    root = case.write(dest)
    git_init(root)
    have = len(case.modules())
    for package in FILLER_PACKAGES:
        for source, rel in corpus:
            if have >= files:
                return root
            target = root / package / rel
            if target.exists():
                continue  # a case's own module of that path stays the case's
            _copy(source, target)
            have += 1
    if have < files:
        raise BenchError(f"{case.id}: vLLM's {len(corpus)} files fill at most {have} of {files}")
    return root


def _findings(stdout: str) -> list[tuple[str, int, str]]:
    found = []
    for f in json.loads(stdout):
        path = Path(f["path"]).as_posix()
        found.append((path[2:] if path.startswith("./") else path, f["line"], f["code"]))
    return sorted(found)


def run_case(case: ProjectCase, work: Path, corpus: list[tuple[Path, str]], files: int) -> Result:
    cg = cgguard_command()
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    root = build_checkout(case, work, corpus, files)
    filler = {rel: source for source, rel in corpus}
    # As a user runs them: the default jobs (CGGUARD_JOBS unset), whatever this shell set.
    env = {k: v for k, v in os.environ.items() if k != "CGGUARD_JOBS"}
    check = measure([*cg, "check", "--isolated", "--format", "json", "."], cwd=root, env=env)
    problems = []
    findings_ok = check.rc in (0, 1)
    if findings_ok:
        found, expected = _findings(check.stdout), case.expected_findings()
        findings_ok = found == expected
        if not findings_ok:
            problems.append(f"check found {found}, the case marks {expected}")
    else:
        problems.append(f"check exited {check.rc}: {_last_words(check.stderr)}")
    fix = measure([*cg, "fix", "--isolated", "."], cwd=root, env=env)
    fixes_ok = fix.rc in (0, 1)
    if not fixes_ok:
        problems.append(f"fix exited {fix.rc}: {_last_words(fix.stderr)}")
    for module in case.modules():
        if (root / module.rel).read_text(encoding="utf-8") != module.expected_fix():
            fixes_ok = False
            problems.append(f"fix wrote {module.rel} other than its expected fix")
    for package in FILLER_PACKAGES:
        for path in (root / package).rglob("*.py") if (root / package).is_dir() else ():
            rel = path.relative_to(root / package).as_posix()
            if rel in filler and path.read_bytes() != filler[rel].read_bytes():
                fixes_ok = False
                problems.append(f"fix changed vLLM's {package}/{rel}")
    shutil.rmtree(work, ignore_errors=True)
    return Result(
        case=case.id,
        files=files,
        check_mb=check.rss_kb / 1024,
        check_s=check.wall,
        fix_mb=fix.rss_kb / 1024,
        fix_s=fix.wall,
        findings_ok=findings_ok,
        fixes_ok=fixes_ok,
        problem="; ".join(problems),
    )


def _last_words(stderr: str) -> str:
    """The end of a command's standard error, on one line."""
    return " | ".join(stderr.strip().splitlines())[-200:]


def table(results: list[Result]) -> str:
    lines = [
        f"| project case (scaled to {results[0].files:,} files) | check: peak RSS | wall | fix: peak RSS | wall "
        "| findings as marked | fixes as expected | pass |",
        "|---|---:|---:|---:|---:|---|---|---|",
    ]
    for r in results:
        lines.append(
            f"| {r.case} | {r.check_mb:.0f} MB | {r.check_s:.2f} s | {r.fix_mb:.0f} MB | {r.fix_s:.2f} s "
            f"| {'yes' if r.findings_ok else 'NO'} | {'yes' if r.fixes_ok else 'NO'} "
            f"| {'pass' if r.passed else '**FAIL**'} |"
        )
    worst_check = max(results, key=lambda r: r.check_mb)
    worst_fix = max(results, key=lambda r: r.fix_mb)
    lines.append("")
    lines.append(
        f"{sum(r.passed for r in results)} of {len(results)} cases pass. Largest peak: check "
        f"{worst_check.check_mb:.0f} MB ({worst_check.case}; target ≤ {CHECK_TARGET_MB} MB), fix "
        f"{worst_fix.fix_mb:.0f} MB ({worst_fix.case}; target ≤ {FIX_TARGET_MB} MB)."
    )
    for r in results:
        if r.problem:
            lines.append(f"- {r.case}: {r.problem}")
    return "\n".join(lines)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--files", type=int, default=3000, help="Python files in each checkout (default 3000)"
    )
    parser.add_argument("--only", help="only the cases whose id holds this text")
    parser.add_argument(
        "--corpus", type=Path, help="vLLM's package folder (default: the installed one)"
    )
    parser.add_argument("--strict", action="store_true", help="exit 1 when a case misses a target")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        cases = project_cases(args.only)
        if not cases:
            raise BenchError(f"no project case's id holds {args.only!r}")
        source = args.corpus or default_corpus()
        if not source.is_dir():
            raise BenchError(f"{source}: no such folder (--corpus)")
        corpus = [(p, p.relative_to(source).as_posix()) for p in _source_files(source)]
        results = []
        with tempfile.TemporaryDirectory(prefix="cgguard-scaled-") as tmp:
            for case in cases:
                print(f"{case.id}: {args.files:,} files", file=sys.stderr, flush=True)
                results.append(run_case(case, Path(tmp) / "case", corpus, args.files))
    except BenchError as exc:
        print(f"benchmarks/scaledprojects.py: error: {exc}", file=sys.stderr)
        return 2
    print(table(results))
    return 1 if args.strict and not all(r.passed for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
