"""`cgguard config`: the settings a run would use, and where each one came from."""

from __future__ import annotations

import os
import sys

import click

from cgguard.static.workflow.config import DEFAULTS_ORIGIN, KEYS, ConfigError, Settings, resolve


def _toml_value(key: str, value) -> str:
    import json  # a TOML string or array of strings is written like JSON

    if isinstance(value, bool):
        return "true" if value else "false"
    if key == "per-file-ignores":
        return "{" + ", ".join(f"{json.dumps(g)} = {json.dumps(list(c))}" for g, c in value) + "}"
    return json.dumps(list(value))


def describe(settings: Settings) -> str:
    """The resolved settings as TOML lines, each with its origin in a comment."""
    lines = [
        f"# settings file: {settings.source or 'none (defaults)'}",
        f"# paths in globs are relative to: {settings.root}",
    ]
    for key in KEYS:
        value = getattr(settings, key.replace("-", "_"))
        origin = settings.origins.get(key, DEFAULTS_ORIGIN)
        lines.append(f"{key} = {_toml_value(key, value)}  # {origin}")
    return "\n".join(lines) + "\n"


@click.command()
@click.argument("path", required=False)
@click.option("--config", "config_file", metavar="PATH", help="Read settings from this file.")
@click.option("--isolated", is_flag=True, help="Ignore every configuration file.")
def config(path: str | None, config_file: str | None, isolated: bool) -> None:
    """Print the resolved settings for PATH (default: .) and where they came from."""
    if config_file is not None and isolated:
        raise click.UsageError(
            "--config cannot be used with --isolated (which ignores every configuration file)"
        )
    if path is not None and not os.path.exists(path):
        # The settings of a path that is not there would be a guess: say so instead.
        from cgguard.static.workflow.names import one_line

        raise click.UsageError(one_line(f"{path}: no such file or directory"))
    try:
        settings = resolve(config=config_file, isolated=isolated, start=path or ".")
    except ConfigError as exc:
        click.echo(f"cgguard: error: {exc}", err=True)
        sys.exit(2)
    click.echo(describe(settings), nl=False)
