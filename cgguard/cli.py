"""Command line: `cgguard check|fix|rule ...`. Exit codes: 0 clean, 1 findings, 2 errors."""

from __future__ import annotations

import sys
from typing import NoReturn

import click

from cgguard import __version__
from cgguard.static.workflow.formats import FORMATS
from cgguard.static.workflow.names import one_line, printable
from cgguard.streams import OutputError

# click 8.2+ raises this for `cgguard` without a command (8.1 prints the help and exits 0).
_NO_ARGS_IS_HELP = getattr(click.exceptions, "NoArgsIsHelpError", ())

# Commands that live in other modules, imported only when used (start-up time
# matters: `cgguard check` runs on every commit). name -> "module:attribute".
LAZY_COMMANDS = {
    "doctor": "cgguard.ops.doctor.cli:doctor",
    "estimate": "cgguard.ops.estimate.cli:estimate",
    "triage": "cgguard.ops.triage.cli:triage",
    "config": "cgguard.static.workflow.config_cli:config",
    "rule": "cgguard.static.workflow.rule_cli:rule",
}


# `cgguard --help` lists each command with one whole line (click would cut a
# docstring's first sentence at the terminal's width and add "...").
SHORT_HELP = {
    "check": "Report counts in the wrong unit (exit 1 while any remain).",
    "config": "Print the settings a run would use and where each came from.",
    "doctor": "Tell whether the installed vLLM is affected, and what to do.",
    "estimate": "Profiling KV cache memory for a model: per token vs per sequence.",
    "fix": "Rewrite per-token block counts to upstream's per-sequence bound.",
    "rule": "Print a rule's page, or every rule's summary.",
    "triage": "Tell whether a vLLM start-up log failed on the per-token cache.",
}


# --verbose shows the traceback of an internal error (a bug in cgguard); without
# it every problem is one line naming the file, and no traceback is printed.
_VERBOSE = {"on": False}


def _set_verbose(ctx, param, value):
    if value:
        _VERBOSE["on"] = True


verbose_option = click.option(
    "--verbose",
    "-v",
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=_set_verbose,
    help="Show the traceback of internal errors (for bug reports).",
)


class LazyGroup(click.Group):
    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True, **extra):
        """click's own run, with every usage error one line: ``cgguard: error: REASON``."""
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode, **extra)
        try:
            code = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        except _NO_ARGS_IS_HELP as exc:  # `cgguard` alone: the help, as click shows it
            exc.show()
            sys.exit(exc.exit_code)
        except click.UsageError as exc:
            message = _usage_message(exc, sys.argv[1:] if args is None else list(args))
            click.echo(one_line(f"cgguard: error: {message}"), err=True)
            sys.exit(2)
        except OutputError as exc:  # --help or --version to a standard output that is full
            _say_output_error(exc)
            sys.exit(2)
        except click.ClickException as exc:
            click.echo(f"cgguard: error: {exc.format_message()}", err=True)
            sys.exit(exc.exit_code)
        except click.exceptions.Abort:  # Ctrl-C or end of input at a prompt
            click.echo("cgguard: interrupted", err=True)
            sys.exit(2)
        sys.exit(code if isinstance(code, int) else 0)

    def invoke(self, ctx):
        _VERBOSE["on"] = False  # set again by the subcommand's own --verbose
        try:
            try:
                return super().invoke(ctx)
            finally:
                # Output still buffered fails here, where it can be handled, not at
                # interpreter exit (where Python prints "Exception ignored ...").
                sys.stdout.flush()
        except (click.exceptions.ClickException, click.exceptions.Exit, click.exceptions.Abort):
            raise
        except KeyboardInterrupt:
            # Ctrl-C: writes are atomic, so each file is either fixed or untouched.
            # Exit 2 (an error), not click's 1, which would read as "findings remain".
            click.echo("cgguard: interrupted", err=True)
            ctx.exit(2)
        except OutputError as exc:
            _say_output_error(exc)
            ctx.exit(2)
        except Exception as exc:  # noqa: BLE001 - a bug outside any one file
            if _VERBOSE["on"]:
                raise
            click.echo(
                f"cgguard: internal error: {type(exc).__name__}: {exc}"
                " (run with --verbose for the traceback)",
                err=True,
            )
            ctx.exit(2)

    def format_commands(self, ctx, formatter):
        rows = []
        for name in self.list_commands(ctx):
            command = self.get_command(ctx, name)
            if command is None or command.hidden:
                continue
            rows.append((name, SHORT_HELP.get(name) or command.get_short_help_str(limit=10_000)))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)

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


def _print_version(ctx: click.Context, param, value: bool) -> None:
    if not value or ctx.resilient_parsing:
        return
    from cgguard.static.workflow.buildinfo import version_line

    click.echo(version_line(__version__))
    ctx.exit()


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--version",
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=_print_version,
    help="Show the version, and the commit it was installed from where known, and exit.",
)
def main() -> None:
    """Find, fix and guard vLLM's per-token CUDA-graph profiling KV cache."""


def run() -> None:
    """The ``cgguard`` command (console script and ``python -m cgguard``): the CLI, then
    an immediate exit once its output is flushed.

    Standard output and error go through :mod:`cgguard.streams`: a reader that goes
    away (``| head -1``) leaves the exit code the run's own, and a stream that cannot
    be written (a full disk) is one error line.

    Python's cyclic garbage collector is off for the run: libcst's trees are many small
    objects without cycles, freed by reference counting, and the collector's passes
    over them are pure cost. Tearing the interpreter down frees those trees one by one
    for nothing: ``os._exit`` skips it. Nothing waits for the exit (no ``atexit`` hook,
    no thread, no child left: each file is written atomically before it is reported).
    """
    import gc
    import os

    from cgguard import streams

    gc.disable()
    streams.install()
    try:
        main(prog_name="cgguard")  # click's standalone mode ends in SystemExit
        status: object = 0
    except SystemExit as exc:
        status = exc.code
    if status is None:
        code = 0
    elif isinstance(status, int):
        code = status
    else:
        print(status, file=sys.stderr)  # sys.exit("message"), as Python prints it
        code = 1
    try:
        sys.stdout.flush()
    except OutputError as exc:
        _say_output_error(exc)
        code = 2
    try:
        sys.stderr.flush()
    except OutputError:
        code = 2  # nowhere left to say so
    os._exit(code)


# ruff's `check --fix` (and friends): cgguard fixes with its own command.
_FIX_OPTIONS = ("--fix", "--fix-only", "--diff", "--unsafe-fixes", "--no-unsafe-fixes")


def _usage_message(exc: click.UsageError, args: list[str]) -> str:
    """A usage error's line: click's reason (or where ruff's habit leads here), and the
    help to read, ``(see `cgguard CMD --help`)``, for every usage error."""
    message = exc.format_message().rstrip(".")
    ctx = exc.ctx
    path = ctx.command_path if ctx is not None else _command_path(args)
    if (
        isinstance(exc, click.NoSuchOption)
        and exc.option_name in _FIX_OPTIONS
        and path == "cgguard check"
    ):
        message = (
            f"`cgguard check` does not fix (no {exc.option_name} option): "
            f"`cgguard fix` applies the fixes, `cgguard fix --diff` shows them"
        )
    return f"{message} (see `{path} --help`)"


def _command_path(args: list[str]) -> str:
    """``cgguard CMD`` for the command the arguments name (``cgguard`` when none does):
    for an error click raises before it has a context."""
    for arg in args:
        if arg == "--":
            break
        if not arg.startswith("-"):
            return f"cgguard {arg}" if arg in SHORT_HELP else "cgguard"
    return "cgguard"


def _say_output_error(exc: OutputError) -> None:
    try:
        click.echo(f"cgguard: error: {exc}", err=True)
    except OutputError:
        pass  # standard error cannot be written either


def _report(
    run,
    *,
    fixing: bool,
    fmt: str = "text",
    output_file: str | None = None,
    sources=None,
    out=None,
    report: ReportOptions | None = None,
) -> int:
    out = out or sys.stdout
    report = report or ReportOptions()
    for r in run.files:
        if r.error is not None:
            click.echo(one_line(f"{r.error.path}: error: {r.error.reason}"), err=True)
            if _VERBOSE["on"] and getattr(r, "traceback", None):
                click.echo(r.traceback.rstrip("\n"), err=True)
        elif r.skipped is not None and not report.quiet:
            click.echo(one_line(f"{r.path}: warning: {r.skipped}"), err=True)
    if not run.checked and not run.errors and not run.skipped and not report.quiet:
        # Every path named was excluded (--force-exclude): nothing to do, not an error.
        click.echo("cgguard: warning: no Python files to check", err=True)
    from cgguard.static.workflow.colour import Painter, wanted
    from cgguard.static.workflow.formats import (
        MACHINE_FORMATS,
        Sources,
        render,
        statistics,
        summary,
    )

    # Colour for a terminal (or FORCE_COLOR), never in a file or a machine format.
    paint = Painter(output_file is None and fmt not in MACHINE_FORMATS and wanted(out))
    if report.statistics:
        document = printable(statistics(run, fmt, quiet=report.quiet, paint=paint))
    else:
        document = printable(
            render(
                run,
                fmt,
                fixing=fixing,
                sources=sources or Sources(),
                quiet=report.quiet,
                paint=paint,
            )
        )
    if output_file is not None:
        if not _write_document(output_file, document):
            return 2
    else:
        out.write(document)
    if fmt in MACHINE_FORMATS and not report.quiet:  # keep the document alone on its stream
        click.echo(summary(run, fixing=fixing), err=True)
    code = run.exit_code()
    return 0 if code == 1 and report.exit_zero else code


class ReportOptions:
    """How a run reports, beyond its format: ruff's ``--statistics``, ``-q``, ``--exit-zero``."""

    def __init__(self, *, quiet: bool = False, exit_zero: bool = False, statistics: bool = False):
        self.quiet = quiet  # findings and errors only: no summary line, no warnings
        self.exit_zero = exit_zero  # findings do not fail the run (errors still exit 2)
        self.statistics = statistics  # one row per code instead of one line per finding


def _write_document(output_file: str, document: str) -> bool:
    """Write ``--output-file``; False (the reason said in one line) when it cannot be written."""
    try:
        with open(output_file, "w", encoding="utf-8", errors="surrogateescape") as fh:
            fh.write(document)
    except OSError as exc:
        click.echo(
            one_line(f"cgguard: error: cannot write {output_file}: {exc.strerror or exc}"),
            err=True,
        )
        return False
    return True


def _run_options(command):
    """Options `check` and `fix` share: settings, discovery, standard input, output."""
    from cgguard.static.workflow.discovery_cli import OPTIONS as DISCOVERY_OPTIONS

    for option in reversed(
        (
            click.argument("paths", nargs=-1),
            click.option(
                "--config",
                "config_file",
                metavar="PATH",
                help="Read settings from this file (pyproject.toml [tool.cgguard], or cgguard.toml).",
            ),
            click.option("--isolated", is_flag=True, help="Ignore every configuration file."),
            click.option(
                "--format",
                "fmt",
                type=click.Choice(FORMATS),
                default="text",
                show_default=True,
                help="Output format.",
            ),
            click.option(
                "--output-file",
                "-o",
                metavar="PATH",
                help="Write the report to PATH instead of standard output "
                "(with `fix --diff` in the text formats: the diff, the report going to standard error).",
            ),
            click.option(
                "--force-exclude/--no-force-exclude",
                default=None,
                help="Apply exclude/extend-exclude to paths named on the command line too.",
            ),
            *DISCOVERY_OPTIONS,
            click.option(
                "--stdin-filename",
                metavar="PATH",
                help="With `-`: the path to report and to match settings against.",
            ),
            click.option(
                "--select",
                multiple=True,
                metavar="CODES",
                help="Report only these codes or prefixes (comma-separated; replaces "
                "the settings' select and ignore).",
            ),
            click.option(
                "--extend-select",
                multiple=True,
                metavar="CODES",
                help="Also report these codes or prefixes (comma-separated).",
            ),
            click.option(
                "--ignore",
                multiple=True,
                metavar="CODES",
                help="Do not report these codes or prefixes (comma-separated).",
            ),
            click.option(
                "--exit-zero",
                is_flag=True,
                help="Exit 0 even when findings remain (errors still exit 2).",
            ),
            click.option(
                "--quiet",
                "-q",
                is_flag=True,
                help="Print findings and errors only: no summary line, no warnings.",
            ),
            verbose_option,
        )
    ):
        command = option(command)
    return command


def _usage_error(message: str) -> NoReturn:
    """Bad usage found by a command: one line ending in the help to read, exit 2 (LazyGroup.main)."""
    raise click.UsageError(message, ctx=click.get_current_context(silent=True))


def _settings(paths, config_file, isolated, stdin_filename, output_file, selection, **overrides):
    """Resolved settings, or exit 2 with one line naming the file and key.

    Everything the command line can get wrong is checked here, before any file
    is read or written: a report that cannot be written must not fail the run
    after `cgguard fix` has rewritten files, and must never replace a source.
    """
    from cgguard.static.workflow.config import ConfigError, resolve, with_overrides
    from cgguard.static.workflow.selection import command_line_codes, with_command_line_selection

    _check_jobs()
    if "-" in paths and len(paths) > 1:
        _usage_error("`-` (standard input) cannot be combined with other paths")
    if stdin_filename is not None and paths != ("-",):
        _usage_error(
            "--stdin-filename names the file piped in as `-`; it cannot be used with other paths"
        )
    if config_file is not None and isolated:
        _usage_error(
            "--config cannot be used with --isolated (which ignores every configuration file)"
        )
    start = stdin_filename if paths == ("-",) else paths[0]
    select, extend_select, ignore = selection
    try:
        settings = resolve(config=config_file, isolated=isolated, start=start or ".")
    except ConfigError as exc:  # a settings file's error: it names the file and the key
        click.echo(one_line(f"cgguard: error: {exc}"), err=True)
        sys.exit(2)
    try:
        settings = with_command_line_selection(
            settings,
            select=command_line_codes("--select", select) if select else None,
            extend_select=command_line_codes("--extend-select", extend_select),
            ignore=command_line_codes("--ignore", ignore),
        )
    except ConfigError as exc:
        _usage_error(str(exc))
    from cgguard.static.workflow.discovery_cli import overrides as discovery_overrides

    settings = with_overrides(settings, **overrides, **discovery_overrides())
    if output_file is not None:
        from cgguard.static.workflow.outputpath import problem

        reason = problem(output_file, paths, settings)
        if reason is not None:
            _usage_error(one_line(reason))
    return settings


def _check_jobs() -> None:
    """``CGGUARD_JOBS``: 1 (one process), 2 (a second process always shares the files), or
    unset (cgguard decides); any other value is one line and exit 2, before anything is read."""
    import os

    value = os.environ.get("CGGUARD_JOBS")
    if value in (None, "", "1", "2"):
        return
    click.echo(
        one_line(
            f"cgguard: error: CGGUARD_JOBS={value!r}: use 1 (one process) or 2 (a second "
            "process shares the files), or leave it unset (cgguard decides)"
        ),
        err=True,
    )
    sys.exit(2)


def _stdin(stdin_filename, settings):
    """Source piped in as `-`: (name, Source to check or None, the bytes read, the run so far).

    The Source is None when the input cannot be decoded (the run then holds the
    error) or when --force-exclude skips its --stdin-filename.
    """
    from cgguard.static.driver.run import FileResult, RunResult
    from cgguard.static.source import sourcefile
    from cgguard.static.source.findings import FileError
    from cgguard.static.workflow.discovery import force_excluded

    name = stdin_filename or "-"
    data = sys.stdin.buffer.read()
    run = RunResult(unsafe_fixes=settings.unsafe_fixes)
    if stdin_filename and force_excluded(stdin_filename, settings):
        return name, None, data, run
    try:
        return name, sourcefile.decode(data), data, run
    except sourcefile.SourceError as exc:
        run.files.append(FileResult(name, error=FileError(name, str(exc))))
        return name, None, data, run


@main.command()
@_run_options
@click.option(
    "--statistics",
    is_flag=True,
    help="Print one row per code (count, code, fixable, name) instead of each finding.",
)
@click.option(
    "--show-files",
    is_flag=True,
    help="Print the files a run would check, one a line, and check none.",
)
@click.option(
    "--add-noqa",
    is_flag=True,
    help="Add a `# noqa: CODE` comment to each finding's statement, so that none is reported.",
)
def check(
    paths,
    config_file,
    isolated,
    fmt,
    output_file,
    force_exclude,
    stdin_filename,
    select,
    extend_select,
    ignore,
    exit_zero,
    quiet,
    statistics,
    show_files,
    add_noqa,
) -> None:
    """Report counts in the wrong unit in PATHS (default: .; `-` reads standard input).

    CGG001 and CGG002: per-token profiling block counts. CGG003: a count of tokens where
    a count of requests belongs, or the reverse (`cgguard rule` lists them).

    Exit codes: 0 no findings, 1 findings, 2 errors (errors win).
    """
    from cgguard.static.driver import unusednoqa
    from cgguard.static.driver.context import RunContext
    from cgguard.static.driver.run import check_paths, check_text
    from cgguard.static.workflow.formats import SHOWS_FIX_TEXT, STATISTICS_FORMATS, Sources
    from cgguard.static.workflow.selection import make_filter

    paths = paths or (("-",) if stdin_filename else (".",))
    if statistics and fmt not in STATISTICS_FORMATS:
        _usage_error(f"--statistics prints text or json, not --format {fmt}")
    if add_noqa and paths == ("-",):
        _usage_error("--add-noqa writes the files it checks; standard input is no file")
    if sum((statistics, show_files, add_noqa)) > 1:
        _usage_error("--statistics, --show-files and --add-noqa cannot be combined")
    report = ReportOptions(quiet=quiet, exit_zero=exit_zero, statistics=statistics)
    settings = _settings(
        paths,
        config_file,
        isolated,
        stdin_filename,
        output_file,
        (select, extend_select, ignore),
        force_exclude=force_exclude,
    )
    if show_files:
        from cgguard.static.workflow.discovery_cli import show_files as print_files

        sys.exit(print_files(paths, stdin_filename, settings, quiet=quiet))
    finding_filter = make_filter(settings)
    # Laying a long fix out as ruff would is most of a finding's cost; only the formats
    # that print a fix's edits show it.
    fix_layout = fmt in SHOWS_FIX_TEXT and not (statistics or add_noqa)
    if paths == ("-",):
        name, source, _, run = _stdin(stdin_filename, settings)
        if source is not None:
            alone = RunContext(fix_layout=fix_layout)  # this text alone, as a file of no project
            run.files.append(check_text(source.text, name, finding_filter, alone))
            if unusednoqa.enabled(settings) and run.files[-1].checked:
                run.files[-1].findings += unusednoqa.unused_in_text(source.text, name, settings)
        sources = Sources({name: source.text} if source is not None else {})
        sys.exit(
            _report(
                run,
                fixing=False,
                fmt=fmt,
                output_file=output_file,
                sources=sources,
                report=report,
            )
        )
    run = check_paths(paths, finding_filter, settings=settings, fix_layout=fix_layout)
    if unusednoqa.enabled(settings) and not add_noqa:
        unusednoqa.add_unused_directives(run, settings)
    if add_noqa:
        from cgguard.static.workflow.addnoqa import add_noqa_to_run

        sys.exit(add_noqa_to_run(run, quiet=quiet))
    # The summary counts what `cgguard fix` would apply: unsafe fixes too under `unsafe-fixes = true`.
    run.unsafe_fixes = settings.unsafe_fixes
    sys.exit(_report(run, fixing=False, fmt=fmt, output_file=output_file, report=report))


@main.command()
@_run_options
@click.option("--diff", is_flag=True, help="Print a unified diff of the fixes; write nothing.")
@click.option(
    "--unsafe-fixes/--no-unsafe-fixes",
    default=None,
    help="Also apply fixes marked unsafe (default: the unsafe-fixes setting, off).",
)
def fix(
    paths,
    config_file,
    isolated,
    fmt,
    output_file,
    force_exclude,
    stdin_filename,
    select,
    extend_select,
    ignore,
    exit_zero,
    quiet,
    diff,
    unsafe_fixes,
) -> None:
    """Rewrite per-token block counts in PATHS (default: .) to upstream's bound.

    `cgguard fix -` reads standard input and writes the fixed source to standard
    output (the report goes to standard error).

    Exit codes: 0 nothing remains, 1 findings remain (with --diff: also when it
    would fix something), 2 errors (errors win).
    """
    from cgguard.static.driver.run import fix_paths
    from cgguard.static.workflow.formats import MACHINE_FORMATS, Sources
    from cgguard.static.workflow.selection import make_filter

    paths = paths or (("-",) if stdin_filename else (".",))
    if diff and fmt in MACHINE_FORMATS and output_file is None:
        # The diff owns standard output; a JSON/SARIF document after it would parse as neither.
        _usage_error(
            f"--diff writes the diff to standard output; "
            f"with --format {fmt}, name a file for the report with --output-file"
        )
    settings = _settings(
        paths,
        config_file,
        isolated,
        stdin_filename,
        output_file,
        (select, extend_select, ignore),
        force_exclude=force_exclude,
        unsafe_fixes=unsafe_fixes,
    )
    finding_filter = make_filter(settings)
    report = ReportOptions(quiet=quiet, exit_zero=exit_zero)
    if paths == ("-",):
        sys.exit(
            _fix_stdin(
                stdin_filename,
                settings,
                finding_filter,
                diff=diff,
                fmt=fmt,
                output_file=output_file,
                report=report,
            )
        )
    if diff:
        run = fix_paths(
            paths, finding_filter, write=False, unsafe=settings.unsafe_fixes, settings=settings
        )
    else:
        run = _fix_in_place(paths, finding_filter, settings)
    report_out = None
    if diff:
        patch = "".join(r.diff for r in run.files if r.diff)
        if output_file is not None and fmt not in MACHINE_FORMATS:
            # The file takes the diff, a patch to apply; the report goes to standard error.
            if not _write_document(output_file, patch):
                sys.exit(2)
            output_file, report_out = None, sys.stderr
        else:
            sys.stdout.write(patch)
        _diff_base_note(run)
    # Remaining findings point into the fixed text, which is not on disk with --diff.
    sources = Sources(
        {r.path: r.new_text for r in run.files if r.changed and r.new_text is not None}
    )
    sys.exit(
        _report(
            run,
            fixing=True,
            fmt=fmt,
            output_file=output_file,
            sources=sources,
            out=report_out,
            report=report,
        )
    )


def _fix_in_place(paths, finding_filter, settings):
    """`cgguard fix PATHS`: each file in turn. Ctrl-C while a fix is worked out stops the run
    there, before that file is written; Ctrl-C during a write stops it once the file is whole
    (:mod:`cgguard.static.source.interrupts`). Either way the line says how many were rewritten."""
    from cgguard.static.driver.context import RunContext
    from cgguard.static.driver.run import FileResult, RunResult, fix_paths, iter_python_files
    from cgguard.static.source.interrupts import Interrupts
    from cgguard.static.workflow.discovery import Skip

    run = RunResult(unsafe_fixes=settings.unsafe_fixes)
    # What the run reads of each project, shared by its files; the rules it selected.
    context = RunContext(settings.selected)
    paths = list(paths)
    # One process fixes: a helper lists the modules naming a sink word meanwhile.
    context.list_ahead(paths)
    interrupts = Interrupts()
    try:
        with interrupts:
            # Every file is found before any is rewritten: a rewritten file is a new inode, which
            # discovery would no longer know as one it had met (`fix . ./r.py`).
            for path, error in list(iter_python_files(paths, settings)):
                if isinstance(error, Skip):
                    run.files.append(FileResult(path, skipped=error.reason))
                elif error is not None:
                    run.files.append(FileResult(path, error=error))
                else:  # a file discovery found, named alone: found again, and fixed
                    one = fix_paths(
                        [path],
                        finding_filter,
                        unsafe=settings.unsafe_fixes,
                        settings=settings,
                        context=context,
                    )
                    run.files.extend(one.files)
    except KeyboardInterrupt:
        rewritten = len(interrupts.written)
        if rewritten:
            # Each write is whole: a file is its new bytes or its old ones.
            click.echo(
                f"cgguard: interrupted: {rewritten} file{'s' if rewritten != 1 else ''} "
                "already rewritten (each one whole); the others are untouched",
                err=True,
            )
        else:
            click.echo("cgguard: interrupted: no file was rewritten", err=True)
        sys.exit(2)
    finally:
        context.close()
    return run


def _diff_base_note(run) -> None:
    """Where to apply a diff whose files do not all lie in the current folder."""
    import os

    if run.diff_base and run.diff_base != os.getcwd() and any(r.diff for r in run.files):
        click.echo(
            one_line(
                f"cgguard: the diff names its files from {run.diff_base} "
                "(apply it there: `git apply`, `patch -p1`)"
            ),
            err=True,
        )


def _fix_stdin(stdin_filename, settings, finding_filter, *, diff, fmt, output_file, report) -> int:
    """`cgguard fix -`: the fixed source (or, with --diff, the diff) on standard output."""
    from cgguard.static.driver.run import fix_source_text
    from cgguard.static.source import sourcefile
    from cgguard.static.workflow.formats import Sources

    name, source, data, run = _stdin(stdin_filename, settings)
    run.dry_run = diff
    out = b"" if diff else data  # unless a fix changes it, the input comes back out whole
    sources = Sources()
    if source is not None:
        result = fix_source_text(source.text, name, finding_filter, unsafe=settings.unsafe_fixes)
        run.files.append(result)
        new_text = result.new_text if result.new_text is not None else source.text
        sources = Sources({name: new_text})
        if diff:
            out = result.diff.encode("utf-8", "surrogateescape")
        elif result.changed:
            out = sourcefile.encode(source, new_text)
    from cgguard.static.workflow.formats import MACHINE_FORMATS

    if diff and output_file is not None and fmt not in MACHINE_FORMATS:
        # As for files: the file takes the diff, the report goes to standard error.
        if not _write_document(output_file, out.decode("utf-8", "surrogateescape")):
            return 2
        output_file = None
    else:
        sys.stdout.buffer.write(out)
        sys.stdout.flush()
    return _report(
        run,
        fixing=True,
        fmt=fmt,
        output_file=output_file,
        sources=sources,
        out=sys.stderr,
        report=report,
    )
