"""`cgguard doctor`: is the installed vLLM (or a source tree) affected, and what to do.

Exit codes: 0 not affected, 1 affected (with --model: the model takes the
per-token path, or it cannot be ruled out), 2 no answer (no vLLM found, bad path,
files that could not be checked, nothing checked at all, a bad config.json).
"""

from __future__ import annotations

import json
import os
import sys

import click

from cgguard.ops.doctor.diagnosis import (
    AFFECTED_RELEASES,
    AFFECTING_CODE,
    Diagnosis,
    DoctorError,
    NoVllm,
    count_phrase,
    diagnose_installed,
    diagnose_path,
    fix_tree,
    other_findings,
)
from cgguard.ops.doctor.guard_status import guard_status
from cgguard.ops.release.model_config import ConfigError
from cgguard.ops.release.runner_source import ENV
from cgguard.ops.release.runner_verdict import settings_from_env
from cgguard.shared.modes import MODE_ENV
from cgguard.static.workflow.names import one_line, printable, printable_strings


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


def _short(path: str, d: Diagnosis) -> str:
    """A file of the installed vLLM as ``vllm/...`` (the header says where it is)."""
    if d.source == "installed" and d.location:
        return os.path.relpath(path, os.path.dirname(d.location))
    return path


def _runner_lines(d: Diagnosis) -> list[str]:
    r = d.runners
    if r is None:
        return []
    if r.rule is None or r.note is not None:
        return [f"Runner: cannot tell which models run the affected V1 runner: {r.note}."]
    if r.rule.kind == "env-only":
        return [
            f"Runner: every model runs the affected V1 runner unless {ENV}=1 ({_short(r.rule.path, d)}:"
            f"{r.rule.env_line}); this vLLM picks no runner V2 by default."
        ]
    lines = [
        f"Runner: this vLLM picks the runner per model ({_short(r.rule.path, d)}:{r.rule.env_line}):"
    ]
    if r.v1_kinds:
        lines.append(f"  affected (V1 runner) by default: {'; '.join(r.v1_kinds)}")
    if r.v2_kinds:
        lines.append(
            f"  not affected (runner V2, no profiling cache) by default: {'; '.join(r.v2_kinds)}; "
            "V2 needs Triton and no feature V2 lacks"
        )
    lines.append(f"  {ENV}=0 puts every model on V1, {ENV}=1 on V2.")
    return lines


def _verdict_lines(d: Diagnosis) -> list[str]:
    v = d.verdict
    if v is None:
        return []
    if v.taken is True:
        head = "Model: takes the per-token profiling path (V1 runner, profiling step runs):"
    elif v.taken is False:
        head = "Model: does not take the per-token profiling path:"
    else:
        head = "Model: cannot rule out the per-token profiling path:"
    lines = [head]
    lines.extend(f"  - {reason}" for reason in v.reasons)
    if v.assumed:
        lines.append("  Assumed:")
        lines.extend(f"  - {a}" for a in v.assumed)
    return lines


def _render_text(d: Diagnosis) -> str:
    lines = []
    if d.source == "installed":
        lines.append(f"vLLM: {d.distribution} {d.vllm_version or '(no version)'} at {d.location}")
    else:
        lines.append(f"Source tree: {d.location} (version {d.vllm_version or 'unknown'})")
    affecting = sorted(
        (f for f in d.findings if f.code == AFFECTING_CODE), key=lambda f: f.sort_key()
    )
    others = ", ".join(count_phrase(code, noun, n) for code, noun, n in other_findings(d.findings))
    plural = "s" if d.files_checked != 1 else ""
    # The header counts every line listed under it: the other rules' findings too.
    also = f" and {others}" if others else ""
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
    if others and not d.affected:
        lines.append(f"{others}:")
    for f in sorted(d.findings, key=lambda f: f.sort_key()):
        lines.append(f"  {one_line(f.path)}:{f.line}:{f.col}: {f.code} {f.message}")
    in_range = d.in_affected_releases
    if in_range is not None:
        where = "inside" if in_range else "outside"
        lines.append(
            f"Version {d.vllm_version} is {where} vLLM's affected releases ({AFFECTED_RELEASES})."
        )
    lines.extend(_runner_lines(d))
    lines.extend(_verdict_lines(d))
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
@click.option(
    "--model",
    "model_dir",
    metavar="DIR",
    help="A folder holding the model's config.json: does this model take the per-token path? "
    f"({ENV} is read from the environment.)",
)
@click.option("--enforce-eager", is_flag=True, help="With --model: vLLM runs with --enforce-eager.")
@click.option(
    "--cudagraph-mode", metavar="MODE", help="With --model: compilation_config's cudagraph_mode."
)
@click.option(
    "--kv-cache-memory-bytes",
    type=click.IntRange(min=1),
    help="With --model: vLLM runs with a fixed --kv-cache-memory-bytes.",
)
@click.option(
    "--speculative-method",
    metavar="METHOD",
    help="With --model: vLLM runs speculative decoding with this method (ngram, eagle, "
    "mtp...); model runner V2 lacks some.",
)
def doctor(
    path: str | None,
    fmt: str,
    sites: tuple[str, ...],
    fix: bool,
    unsafe_fixes: bool,
    model_dir: str | None,
    enforce_eager: bool,
    cudagraph_mode: str | None,
    kv_cache_memory_bytes: int | None,
    speculative_method: str | None,
) -> None:
    """Is the installed vLLM affected by the per-token profiling KV cache? What to do.

    Finds vLLM through package metadata (never imports it), checks the source
    files it installed, and reports where the bug sits, whether the cgguard
    runtime guard is active, and what to do. It reads which models the release
    runs on the affected V1 runner; --model DIR says whether that model takes the
    per-token path. Exit code 1 when affected (with --model: when the model takes
    the path, or it cannot be ruled out), 2 when there is no answer.
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
        if model_dir is None and (
            enforce_eager or cudagraph_mode or kv_cache_memory_bytes or speculative_method
        ):
            raise DoctorError(
                "--enforce-eager, --cudagraph-mode, --kv-cache-memory-bytes and "
                "--speculative-method go with --model DIR"
            )
        settings = settings_from_env(
            enforce_eager=enforce_eager,
            cudagraph_mode=cudagraph_mode,
            kv_cache_memory_bytes=kv_cache_memory_bytes,
            speculative_method=speculative_method,
        )
        if fix:
            assert path is not None  # refused above without --path
            fixed, errors = fix_tree(path, unsafe=unsafe_fixes)
            for error in errors:
                click.echo(one_line(f"{error.path}: error: {error.reason}"), err=True)
            click.echo(
                f"Fixed {fixed} per-token count{'s' if fixed != 1 else ''}; diagnosing again.",
                err=True,
            )
            if errors:
                sys.exit(2)
        d = (
            diagnose_path(path, model_dir, settings)
            if path is not None
            else diagnose_installed(list(sites) or None, model_dir, settings)
        )
    except (DoctorError, ConfigError) as exc:
        if fmt == "json":  # the same keys as an answer, so consumers need no second schema
            document: dict[str, object] = {
                "vllm_version": None,
                "affected": None,  # no answer
                "findings": [],
                "guard": guard_status(
                    list(sites) or None, vllm_found=not isinstance(exc, NoVllm)
                ).to_json(),
                "model_verdict": None,
                "advice": str(exc),
                "error": str(exc),
            }
            click.echo(json.dumps(document, indent=2))
        click.echo(f"cgguard doctor: error: {exc}", err=True)
        sys.exit(2)
    # File names as check and fix print them: bytes that are not UTF-8 as \xNN, and a
    # control character (a newline in a name) escaped, so each stays on its line.
    for error in d.errors:
        click.echo(one_line(f"{error.path}: error: {error.reason}"), err=True)
    if fmt == "json":
        click.echo(json.dumps(printable_strings(d.to_json()), indent=2))
    else:
        click.echo(printable(_render_text(d)), nl=False)
    sys.exit(d.exit_code())
