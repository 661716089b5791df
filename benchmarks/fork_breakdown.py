"""Where a fork's checkout costs more than the same files as a package (issue 36).

``benchmarks/run.py`` times ``cgguard check`` over ``fork/`` (the buggy tree with ``.git`` and
``pyproject.toml`` at its top) beside ``tree-buggy/`` (the same files as a package). This script
says where the difference goes. Each row runs ``check_paths`` once in a fresh process, in one
process (``CGGUARD_JOBS=1``) with Python's cyclic garbage collector off, as the ``cgguard``
command runs, and reports that call's CPU time (imports excluded):

- ``package``: ``tree-buggy/``;
- ``fork``: ``fork/``, as cgguard runs it;
- ``fork, no importer parsed``: ``fork/`` with every file that names no source but may take a
  count through an import answered "no" (``RunContext.takes_a_count`` patched): what remains
  is the sources' own checks;
- ``fork, sources with a sink word only``: also every file that names a source but no sink
  word left alone (``RunContext.may_reach_a_sink`` patched to the sink-word test alone): what
  remains is the sources a package checks too, with imports followed.

The patched rows are measurements, not modes of cgguard: they can lose findings a fork has
(the script prints each row's count). Rows are interleaved over ``--repeat`` rounds; the table
gives each row's median and its ratio to the package's.

    .venv/bin/python benchmarks/run.py --quick --tools cgguard   # builds the corpora once
    .venv/bin/python benchmarks/fork_breakdown.py --repeat 5
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
DEFAULT_WORK = HERE / ".work"

ROWS: tuple[tuple[str, str, str], ...] = (
    ("package", "tree-buggy", ""),
    ("fork", "fork", ""),
    ("fork, no importer parsed", "fork", "no-importers"),
    ("fork, sources with a sink word only", "fork", "no-importers,sink-word-sources"),
)

# Run in a child: patch what the row asks, check the tree, print "<cpu seconds> <findings>".
_CHILD = r"""
import gc, os, sys, time
gc.disable()  # as the cgguard command runs (cgguard.cli.run): its full passes are no cost of it
os.environ["CGGUARD_JOBS"] = "1"
from cgguard.static.driver import context, run
from cgguard.static.driver.prefilter import mentions_sink_word
from cgguard.static.core import flow, program, pyast  # noqa: F401 (imports not timed)
from cgguard.static.driver import check, report  # noqa: F401
patches = set(filter(None, sys.argv[2].split(",")))
if "no-importers" in patches:
    context.RunContext.takes_a_count = lambda self, *a, **k: False
if "sink-word-sources" in patches:
    def sink_word_only(self, data, path, configuration=None, **_):
        chosen = self.configurations if configuration is None else (configuration,)
        return mentions_sink_word(data, chosen)
    context.RunContext.may_reach_a_sink = sink_word_only
start = time.process_time()
result = run.check_paths([sys.argv[1]])
print(f"{time.process_time() - start:.4f} {len(result.findings)}")
"""


def measure(work: Path, tree: str, patches: str) -> tuple[float, int]:
    env = dict(os.environ)
    env.pop("CGGUARD_JOBS", None)
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, tree, patches],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(
            f"fork_breakdown: {tree} ({patches or 'unpatched'}) failed:\n{done.stderr}"
        )
    cpu, findings = done.stdout.split()
    return float(cpu), int(findings)


def table(work: Path, repeat: int) -> str:
    samples: dict[str, list[float]] = {name: [] for name, _, _ in ROWS}
    counts: dict[str, int] = {}
    for round_ in range(repeat):
        rows = ROWS if round_ % 2 == 0 else tuple(reversed(ROWS))
        for name, tree, patches in rows:
            cpu, counts[name] = measure(work, tree, patches)
            samples[name].append(cpu)
    package = statistics.median(samples["package"])
    lines = [
        "| row | CPU (median) | × package | findings |",
        "|---|---:|---:|---:|",
    ]
    for name, _, _ in ROWS:
        median = statistics.median(samples[name])
        lines.append(f"| {name} | {median:.2f} s | {median / package:.2f}× | {counts[name]} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", type=Path, default=DEFAULT_WORK, help="run.py's work folder")
    parser.add_argument("--repeat", type=int, default=3, help="rounds (default 3)")
    args = parser.parse_args(argv)
    missing = [t for t in ("fork", "tree-buggy") if not (args.work / t).is_dir()]
    if missing:
        print(
            f"fork_breakdown: {args.work} has no {', '.join(missing)}/: "
            "run benchmarks/run.py once to build the corpora",
            file=sys.stderr,
        )
        return 2
    print(table(args.work, max(1, args.repeat)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
