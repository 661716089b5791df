"""Command line: `cgguard check|fix|rule ...`. Exit codes: 0 clean, 1 findings, 2 errors."""

from __future__ import annotations

import sys

import click

from cgguard import __version__


# Commands that live in other modules, imported only when used (start-up time
# matters: `cgguard check` runs on every commit). name -> "module:attribute".
LAZY_COMMANDS = {
    "doctor": "cgguard.ops.doctor_cli:doctor",
    "estimate": "cgguard.ops.estimate_cli:estimate",
    "config": "cgguard.static.config_cli:config",
}


# --verbose shows the traceback of an internal error (a bug in cgguard); without
# it every problem is one line naming the file, and no traceback is printed.
_VERBOSE = {"on": False}


def _set_verbose(ctx, param, value):
    if value:
        _VERBOSE["on"] = True


verbose_option = click.option(
    "--verbose", "-v", is_flag=True, expose_value=False, is_eager=True, callback=_set_verbose,
    help="Show the traceback of internal errors (for bug reports).",
)


class LazyGroup(click.Group):
    def invoke(self, ctx):
        _VERBOSE["on"] = False  # set again by the subcommand's own --verbose
        try:
            return super().invoke(ctx)
        except (click.exceptions.ClickException, click.exceptions.Exit, click.exceptions.Abort):
            raise
        except Exception as exc:  # noqa: BLE001 - a bug outside any one file
            if _VERBOSE["on"]:
                raise
            click.echo(f"cgguard: internal error: {type(exc).__name__}: {exc}"
                       " (run with --verbose for the traceback)", err=True)
            ctx.exit(2)

    def list_commands(self, ctx):
        return sorted(set(super().list_commands(ctx)) | set(LAZY_COMMANDS))

    def get_command(self, ctx, name):
        if name in LAZY_COMMANDS and name not in self.commands:
            import importlib

            module, _, attr = LAZY_COMMANDS[name].partition(":")
            try:
                return getattr(importlib.import_module(module), attr)
            except ImportError:
                return None
        return super().get_command(ctx, name)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="cgguard")
def main() -> None:
    """Find, fix and guard vLLM's per-token CUDA-graph profiling KV cache."""


def _printable(line: str) -> str:
    """A file name that is not valid UTF-8 (kept by the OS as surrogate escapes) is
    shown as ``\\xff`` escapes: printing it raw would fail on a strict stream."""
    return line.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def _report(run, *, fixing: bool) -> int:
    from cgguard.static.findings import SAFE

    out = sys.stdout
    for r in run.files:
        if r.error is not None:
            click.echo(_printable(f"{r.error.path}: error: {r.error.reason}"), err=True)
            if _VERBOSE["on"] and getattr(r, "traceback", None):
                click.echo(r.traceback.rstrip("\n"), err=True)
    findings = sorted(run.findings, key=lambda f: f.sort_key())
    for f in findings:
        out.write(_printable(f"{f.path}:{f.line}:{f.col}: {f.code} {f.message}") + "\n")
    n_files = len(run.files)
    fixable = sum(1 for f in findings if f.fix is not None and f.fix.applicability == SAFE)
    parts = []
    if fixing:
        parts.append(f"Fixed {run.fixed} finding{'s' if run.fixed != 1 else ''}.")
    if findings:
        parts.append(
            f"Found {len(findings)} finding{'s' if len(findings) != 1 else ''}"
            + (f" ({fixable} fixable with `cgguard fix`)" if fixable and not fixing else "")
            + f" in {n_files} file{'s' if n_files != 1 else ''} checked."
        )
    else:
        parts.append(f"No findings in {n_files} file{'s' if n_files != 1 else ''} checked.")
    if run.errors:
        parts.append(f"{len(run.errors)} error{'s' if len(run.errors) != 1 else ''}.")
    out.write(" ".join(parts) + "\n")
    return run.exit_code()


@main.command()
@click.argument("paths", nargs=-1)
@verbose_option
def check(paths: tuple[str, ...]) -> None:
    """Report per-token profiling block counts in PATHS (default: .)."""
    from cgguard.static.run import check_paths

    run = check_paths(paths or (".",))
    sys.exit(_report(run, fixing=False))


@main.command()
@click.argument("paths", nargs=-1)
@click.option("--diff", is_flag=True, help="Print a unified diff of the fixes; write nothing.")
@click.option("--unsafe-fixes", is_flag=True, help="Also apply fixes marked unsafe.")
@verbose_option
def fix(paths: tuple[str, ...], diff: bool, unsafe_fixes: bool) -> None:
    """Rewrite per-token block counts in PATHS (default: .) to upstream's bound."""
    from cgguard.static.run import fix_paths

    run = fix_paths(paths or (".",), write=not diff, unsafe=unsafe_fixes)
    if diff:
        for r in run.files:
            if r.diff:
                sys.stdout.write(r.diff)
    sys.exit(_report(run, fixing=not diff))


@main.command()
@click.argument("code", required=False)
def rule(code: str | None) -> None:
    """Print a rule's documentation (all rules' summaries without CODE)."""
    from cgguard.static.ruledocs import all_rules, get_rule

    if code is None:
        for r in all_rules():
            click.echo(f"{r.code}  {r.name}: {r.summary} (fix: {r.fix})")
        return
    doc = get_rule(code)
    if doc is None:
        click.echo(f"cgguard: error: unknown rule {code!r}", err=True)
        sys.exit(2)
    click.echo(f"# {doc.code} ({doc.name})\n\n{doc.summary}\n\nFix: {doc.fix}\n\n{doc.body}", nl=False)
