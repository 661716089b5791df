"""`cgguard doctor`: is the installed vLLM (or a source tree) affected, and what to do.

Exit codes: 0 not affected, 1 affected, 2 no answer (no vLLM found, bad path,
files that could not be checked, nothing checked at all).
"""

from __future__ import annotations

import json
import sys

import click

from cgguard.ops.doctor import (
    AFFECTED_RELEASES,
    Diagnosis,
    DoctorError,
    NoVllm,
    diagnose_installed,
    diagnose_path,
    fix_tree,
)
from cgguard.ops.guard_status import guard_status
from cgguard.shared.modes import MODE_ENV


def _guard_line(d: Diagnosis) -> str:
    g = d.guard
    if not g.plugin_registered:
        where = "not registered (no `cgguard` entry point in vllm.general_plugins)"
    elif not g.allowed_by_vllm_plugins:
        where = f"registered ({g.entry_point}) but left out by VLLM_PLUGINS"
    else:
        where = f"registered ({g.entry_point})"
    setting = f"{MODE_ENV}={g.mode_env}" if g.mode_env is not None else f"{MODE_ENV} unset"
    if not g.vllm_found:
        # The plugin runs inside vLLM; with no vLLM for this Python, nothing loads it.
        return (
            f"Runtime guard: not active: this Python imports no vLLM, so nothing loads the plugin "
            f"(plugin {where}; {setting} gives mode {g.mode!r})"
        )
    state = "active" if g.active else "not active"
    return f"Runtime guard: {state}: plugin {where}; {setting} gives mode {g.mode!r}"


def _workaround_lines(d: Diagnosis) -> list[str]:
    w = d.workarounds
    if w is None:
        return []
    if not w.found:
        return [f"Without a code change: {w.note}."] if w.note else []
    lines = []
    if w.condition:
        lines.append(
            f"Without a code change: this vLLM profiles CUDA-graph memory (and builds the per-token cache) only "
            f"when `{w.condition}` ({w.evidence}); these settings skip or shrink it:"
        )
    else:
        lines.append("Without a code change, these settings skip or shrink the per-token cache:")
    for x in w.found:
        lines.append(f"  {x.setting}: {x.effect}. Cost: {x.cost}. ({x.evidence})")
    return lines


def _render_text(d: Diagnosis) -> str:
    lines = []
    if d.source == "installed":
        lines.append(f"vLLM: {d.distribution} {d.vllm_version or '(no version)'} at {d.location}")
    else:
        lines.append(f"Source tree: {d.location} (version {d.vllm_version or 'unknown'})")
    affecting = sorted((f for f in d.findings if f.code == "CGG001"), key=lambda f: f.sort_key())
    notes = len(d.findings) - len(affecting)
    plural = "s" if d.files_checked != 1 else ""
    # The header counts every line listed under it: review notes (CGG002) too.
    also = f" and {notes} review note{'s' if notes != 1 else ''} (CGG002)" if notes else ""
    if d.affected:
        lines.append(
            f"AFFECTED: {len(affecting)} per-token profiling block count{'s' if len(affecting) != 1 else ''}"
            f"{also} in {d.files_checked} file{plural} checked:"
        )
    elif d.nothing_checked:
        lines.append(
            f"No answer: no per-token profiling block count in 0 files checked, because no Python file "
            f"was found in {d.location}."
        )
    elif d.affected is None:
        lines.append(
            f"No answer: no per-token profiling block count in {d.files_checked} file{plural} checked, "
            f"but {len(d.errors)} could not be checked."
        )
    else:
        lines.append(
            f"Not affected: no per-token profiling block count in {d.files_checked} file{plural} checked."
        )
    if notes and not d.affected:
        lines.append(f"{notes} review note{'s' if notes != 1 else ''} (CGG002):")
    for f in sorted(d.findings, key=lambda f: f.sort_key()):
        lines.append(f"  {f.path}:{f.line}:{f.col}: {f.code} {f.message}")
    in_range = d.in_affected_releases
    if in_range is not None:
        where = "inside" if in_range else "outside"
        lines.append(
            f"Version {d.vllm_version} is {where} vLLM's affected releases ({AFFECTED_RELEASES})."
        )
    lines.append(_guard_line(d))
    for other in d.others:
        lines.append(
            f"Also installed: {other.name} {other.version} at {other.package_dir} "
            "(not the one `import vllm` loads; not checked)"
        )
    lines.append(f"Advice: {d.advice}")
    lines.extend(_workaround_lines(d))
    return "\n".join(lines) + "\n"


@click.command()
@click.option(
    "--path",
    "path",
    metavar="DIR",
    help="Check a source checkout (vLLM, a fork or a plugin) instead.",
)
@click.option(
    "--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True
)
@click.option(
    "--site",
    "sites",
    multiple=True,
    hidden=True,
    metavar="DIR",
    help="Look for installed distributions in DIR instead of sys.path (repeatable).",
)
@click.option(
    "--fix",
    "fix",
    is_flag=True,
    help="With --path: fix every per-token count doctor finds there, also those the tree's "
    "config excludes or a comment suppresses, then diagnose again.",
)
@click.option("--unsafe-fixes", is_flag=True, help="With --fix: also apply fixes marked unsafe.")
def doctor(
    path: str | None, fmt: str, sites: tuple[str, ...], fix: bool, unsafe_fixes: bool
) -> None:
    """Is the installed vLLM affected by the per-token profiling KV cache? What to do.

    Finds vLLM through package metadata (never imports it), checks the source
    files it installed, and reports where the bug sits, whether the cgguard
    runtime guard is active, and what to do. Exit code 1 when affected, 2 when
    there is no answer.
    """
    try:
        if path is not None and sites:
            raise DoctorError("--path and --site cannot be combined")
        if fix and path is None:
            raise DoctorError(
                "--fix works on a source tree named with --path; an installed vLLM is upgraded, not rewritten"
            )
        if unsafe_fixes and not fix:
            raise DoctorError("--unsafe-fixes goes with --fix")
        if fix:
            fixed, errors = fix_tree(path, unsafe=unsafe_fixes)
            for error in errors:
                click.echo(f"{error.path}: error: {error.reason}", err=True)
            click.echo(
                f"Fixed {fixed} per-token count{'s' if fixed != 1 else ''}; diagnosing again.",
                err=True,
            )
            if errors:
                sys.exit(2)
        d = diagnose_path(path) if path is not None else diagnose_installed(list(sites) or None)
    except DoctorError as exc:
        if fmt == "json":  # the same keys as an answer, so consumers need no second schema
            document = {
                "vllm_version": None,
                "affected": None,  # no answer
                "findings": [],
                "guard": guard_status(
                    list(sites) or None, vllm_found=not isinstance(exc, NoVllm)
                ).to_json(),
                "advice": str(exc),
                "error": str(exc),
            }
            click.echo(json.dumps(document, indent=2))
        click.echo(f"cgguard doctor: error: {exc}", err=True)
        sys.exit(2)
    for error in d.errors:
        click.echo(f"{error.path}: error: {error.reason}", err=True)
    if fmt == "json":
        click.echo(json.dumps(d.to_json(), indent=2))
    else:
        click.echo(_render_text(d), nl=False)
    sys.exit(d.exit_code())
