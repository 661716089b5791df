"""Why a folder named on the command line checked nothing: the patterns that removed its files.

``cgguard check .venv`` used to say only "none found, or all excluded": the
default exclude ``site-packages`` had removed every file, and a user checking a
virtual environment's vLLM read that as an all-clear. When a named folder holds
Python files and excludes or .gitignore rules removed every one (or, for a
virtual environment, any: its packages are what a user checking it asks for), the run says
which patterns did it, where each comes from (the default excludes, the config
file's ``exclude``/``extend-exclude``, a .gitignore file), the option that
includes them, and, for a folder holding an installed vLLM, ``cgguard doctor``.

This runs only after a named folder's search found nothing, so it can afford a
second walk of the folder that counts what each pattern removed.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass

from cgguard.static.workflow.config import Settings
from cgguard.static.workflow.globs import IgnoreRule, PathGlobs

SUFFIXES = (".py", ".pyi")
NO_EXCLUDE = "--no-exclude"
NO_GITIGNORE = "--no-respect-gitignore"


@dataclass(frozen=True)
class Cause:
    pattern: str
    source: str  # where the pattern is written, in words
    option: str  # the command-line option that lifts it


def is_virtualenv(folder: str) -> bool:
    """A virtual environment's root (``python -m venv`` and virtualenv write ``pyvenv.cfg``)."""
    return os.path.isfile(os.path.join(folder, "pyvenv.cfg"))


def explain(
    folder: str, settings: Settings, excludes: PathGlobs, kept: Sequence[str] = ()
) -> str | None:
    """The error line's reason when excludes removed Python files under ``folder``
    (``kept``: the files its search did find); None when they removed none."""
    from cgguard.static.workflow.discovery import excluded_below, walk

    counts: dict[Cause, int] = {}
    vllm: list[str] = []

    def on_skip(rel: str, is_dir: bool, hit: tuple[str, IgnoreRule] | None) -> None:
        path = os.path.join(folder, rel)
        n = _count_python(path, vllm) if is_dir else 1
        if not is_dir:
            _note_vllm(os.path.dirname(path), vllm)
        if n:
            cause = (
                _exclude_cause(rel, folder, settings, excludes)
                if hit is None
                else _gitignore_cause(hit)
            )
            counts[cause] = counts.get(cause, 0) + n

    found = {os.path.normpath(p) for p in kept}
    left = [
        p
        for p in walk(folder, settings, excluded_below(folder, settings, excludes), on_skip)
        if isinstance(p, str) and os.path.normpath(p) not in found
    ]
    if left:
        # Files our own .gitignore reading keeps but git's listing left out
        # (.git/info/exclude, core.excludesFile): git names the rule.
        cause = _git_cause(folder, os.path.relpath(left[0], folder))
        counts[cause] = counts.get(cause, 0) + len(left)
        for p in left:
            _note_vllm(os.path.dirname(p), vllm)
    total = sum(counts.values())
    if not total:
        return None
    return _message(total, len(found), counts, vllm)


def _message(total: int, kept: int, counts: dict[Cause, int], vllm: list[str]) -> str:
    if kept:  # a virtual environment: its scripts were checked, its packages not
        files = f"{total:,} of its {total + kept:,} Python files"
        files = f"its installed packages were not checked: {files} {'is' if total == 1 else 'are'}"
    else:
        files = (
            "its only Python file is" if total == 1 else f"all {total:,} of its Python files are"
        )
        files = f"nothing checked: {files}"
    if len(counts) == 1:
        [cause] = counts
        why = f"`{cause.pattern}` ({cause.source})"
    else:
        why = ", ".join(
            f"`{c.pattern}` ({c.source}: {n:,} file{'s' if n != 1 else ''})"
            for c, n in sorted(counts.items(), key=lambda item: -item[1])
        )
    options = sorted({c.option for c in counts}, key=[NO_EXCLUDE, NO_GITIGNORE].index)
    it = "it" if total == 1 else "them"
    verb = "checks" if len(options) == 1 else "check"
    text = f"{files} excluded by {why}; {' and '.join(options)} {verb} {it}"
    if vllm:
        where = vllm[0]
        text += (
            f"; it holds an installed vLLM ({where}): `cgguard doctor --path {where}` tells whether it is "
            "affected (or `cgguard doctor` run by that environment's Python)"
        )
    return text


def _exclude_cause(rel: str, folder: str, settings: Settings, excludes: PathGlobs) -> Cause:
    from cgguard.static.workflow.globs import relative_to_root, under

    glob = excludes.which(under(relative_to_root(folder, settings.root), rel)) or "?"
    if glob in settings.exclude:
        origin = settings.origins.get("exclude")
        source = f"exclude in {origin}" if origin else "a default exclude"
    else:
        source = f"extend-exclude in {settings.origins.get('extend-exclude', 'the settings')}"
    return Cause(glob, source, NO_EXCLUDE)


def _gitignore_cause(hit: tuple[str, IgnoreRule]) -> Cause:
    base, rule = hit
    return Cause(rule.pattern, f"{base}/.gitignore" if base else ".gitignore", NO_GITIGNORE)


def _git_cause(folder: str, rel: str) -> Cause:
    import subprocess

    try:
        proc = subprocess.run(
            ["git", "-C", folder, "check-ignore", "-v", "--", rel],
            capture_output=True,
            text=True,
            check=False,
        )
        source, _, rest = proc.stdout.partition(":")
        _, _, pattern = rest.partition(":")
        pattern = pattern.split("\t", 1)[0]
    except OSError:
        source = pattern = ""
    if source and pattern:
        return Cause(pattern, source, NO_GITIGNORE)
    return Cause("?", "git's ignore rules", NO_GITIGNORE)


def _count_python(folder: str, vllm: list[str]) -> int:
    """Python files below ``folder`` (symlinked folders followed once)."""
    n = 0
    seen: set[tuple[int, int]] = set()
    for here, dirs, files in os.walk(folder, followlinks=True):
        try:
            st = os.stat(here)
        except OSError:
            continue
        if (st.st_dev, st.st_ino) in seen:
            dirs[:] = []
            continue
        seen.add((st.st_dev, st.st_ino))
        dirs[:] = [d for d in dirs if d != ".git"]
        found = sum(1 for f in files if f.endswith(SUFFIXES))
        if found:
            n += found
            _note_vllm(here, vllm, files)
    return n


def _note_vllm(folder: str, vllm: list[str], files: list[str] | None = None) -> None:
    """Record ``folder`` when it is an installed vLLM package: a ``vllm`` package in
    site-packages (or dist-packages), or beside a ``vllm*.dist-info`` folder."""
    if vllm or os.path.basename(os.path.normpath(folder)) != "vllm":
        return
    if files is not None and "__init__.py" not in files:
        return
    if files is None and not os.path.isfile(os.path.join(folder, "__init__.py")):
        return
    parent = os.path.dirname(os.path.normpath(folder)) or "."
    try:
        beside = os.listdir(parent)
    except OSError:
        beside = []
    if os.path.basename(parent) in ("site-packages", "dist-packages") or any(
        name.startswith("vllm") and name.endswith(".dist-info") for name in beside
    ):
        vllm.append(os.path.normpath(folder))
