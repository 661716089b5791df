"""`cgguard triage [LOG|-]`: is a vLLM start-up failure the per-token profiling KV cache?

Exit codes: 0 not this bug, 1 this bug, 2 cannot tell or bad input.
"""

from __future__ import annotations

import sys
from typing import BinaryIO

import click

from cgguard.ops.triage.advice import Step, plan, same_release
from cgguard.ops.triage.facts import collect
from cgguard.ops.triage.read import LogError, read_lines
from cgguard.ops.triage.render import to_json, to_text
from cgguard.ops.triage.verdict import CANNOT_TELL, THIS_BUG, Verdict, decide


def _installed_workarounds(version: str | None):
    """(workarounds, installed version): the settings of the vLLM installed here,
    read from its source when it is the log's release (else None)."""
    from cgguard.ops.release.installed import find_installed_vllm
    from cgguard.ops.release.workarounds import find_workarounds

    found = [d for d in find_installed_vllm() if d.imported]
    if not found:
        return None, None
    main = found[0]
    if not same_release(main.version, version) or main.package_dir is None:
        return None, f"{main.name} {main.version}"
    return find_workarounds(main.package_dir), f"{main.name} {main.version}"


def _triage(stream: BinaryIO, name: str, max_num_seqs, capture_size) -> Verdict:
    return decide(
        collect(read_lines(stream, name)), max_num_seqs=max_num_seqs, capture_size=capture_size
    )


def _fail(fmt: str, message: str) -> None:
    if fmt == "json":
        sys.stdout.write(to_json(Verdict(CANNOT_TELL, message), [], None, error=message))
    click.echo(f"cgguard triage: error: {message}", err=True)
    sys.exit(2)


@click.command()
@click.argument("log", metavar="[LOG|-]", required=False)
@click.option(
    "--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True
)
@click.option(
    "--max-num-seqs",
    type=click.IntRange(min=1),
    help="vLLM's max_num_seqs, when the log does not show it.",
)
@click.option(
    "--max-cudagraph-capture-size",
    "capture_size",
    type=click.IntRange(min=1),
    help="vLLM's max_cudagraph_capture_size, when the log does not show it.",
)
def triage(log: str | None, fmt: str, max_num_seqs: int | None, capture_size: int | None) -> None:
    """Read a vLLM start-up log (LOG, or `-` for standard input) and tell whether it
    failed on the per-token profiling KV cache, with the lines that show it.

    Exit codes: 0 not this bug, 1 this bug, 2 cannot tell or bad input.
    """
    if log is None:
        if sys.stdin.isatty():
            _fail(fmt, "no log given: name a file, or pipe the log into `cgguard triage -`")
        log = "-"
    try:
        if log == "-":
            verdict = _triage(sys.stdin.buffer, "<stdin>", max_num_seqs, capture_size)
        else:
            with open(log, "rb") as fh:
                verdict = _triage(fh, log, max_num_seqs, capture_size)
    except LogError as exc:
        _fail(fmt, str(exc))
    except OSError as exc:
        _fail(fmt, f"{log}: cannot read: {exc.strerror or exc}")
    steps: list[Step] = []
    note = None
    if verdict.kind == THIS_BUG:
        workarounds, installed = _installed_workarounds(verdict.version)
        steps, note = plan(verdict, workarounds, installed)
    out = to_json(verdict, steps, note) if fmt == "json" else to_text(verdict, steps, note)
    sys.stdout.write(out)
    sys.exit(verdict.exit_code)
