"""Command-line options that widen a folder search: ``--no-exclude``, ``--[no-]respect-gitignore``.

They lift what hides files from a search (the exclude globs, .gitignore rules),
so the error for a named folder whose every Python file was excluded can name
the option that checks them. click keeps their values on the context
(``ctx.meta``) rather than in the commands' arguments; :func:`overrides` turns
them into settings on top of the configuration file's.
"""

from __future__ import annotations

import click

_META = "cgguard.discovery"


def _keep(name: str):
    def store(ctx: click.Context, param, value) -> None:
        if value is not None:
            ctx.meta.setdefault(_META, {})[name] = value

    return store


def _no_exclude(ctx: click.Context, param, value: bool) -> None:
    if value:
        ctx.meta.setdefault(_META, {}).update(exclude=(), extend_exclude=())


OPTIONS = (
    click.option(
        "--no-exclude",
        is_flag=True,
        expose_value=False,
        callback=_no_exclude,
        help="Search folders without exclude globs: the default ones (site-packages, .venv, build, ...) "
        "and the settings' exclude/extend-exclude.",
    ),
    click.option(
        "--respect-gitignore/--no-respect-gitignore",
        default=None,
        expose_value=False,
        callback=_keep("respect_gitignore"),
        help="Skip what .gitignore files ignore while searching folders (default: the respect-gitignore "
        "setting, on).",
    ),
)


def overrides() -> dict:
    """The settings these options give for the command being run (empty when none was given)."""
    ctx = click.get_current_context(silent=True)
    return dict(ctx.meta.get(_META, {})) if ctx is not None else {}


def show_files(paths, stdin_filename: str | None, settings, *, quiet: bool = False) -> int:
    """``cgguard check --show-files`` (ruff's): each file the run would check, one a line, as
    the report would name it; nothing is read. A path discovery cannot take is an error line
    on standard error (exit 2), a path it passes over a warning."""
    from cgguard.static.workflow.discovery import Skip, discover, force_excluded
    from cgguard.static.workflow.names import one_line

    if tuple(paths) == ("-",):
        if not (stdin_filename and force_excluded(stdin_filename, settings)):
            click.echo(one_line(stdin_filename or "-"))
        return 0
    code = 0
    for path, error in discover(paths, settings):
        if isinstance(error, Skip):
            if not quiet:
                click.echo(one_line(f"{path}: warning: {error.reason}"), err=True)
        elif error is not None:
            click.echo(one_line(f"{error.path}: error: {error.reason}"), err=True)
            code = 2
        else:
            click.echo(one_line(path))
    return code
