"""What `cgguard fix` would do to the per-token counts doctor found in a source tree,
and which command fixes all of them.

Doctor counts what vLLM runs: every CGG001 finding under the tree's default
excludes, whatever the tree's cgguard settings or comments say (a suppressed or
excluded line allocates per token all the same). `cgguard fix TREE` honours those
settings and comments, so it may leave some out; this module runs the same check
`cgguard fix TREE` runs, names what it leaves out and why, and picks a command that,
run as printed, leaves nothing for the next doctor run to find:

- nothing left out: `cgguard fix TREE` (with `--unsafe-fixes` when a fix needs it);
- left out by settings only (exclude, select/ignore, per-file-ignores, unfixable):
  `cgguard fix --isolated FILE...`, the files named (a named file is always checked)
  and every configuration file ignored;
- a comment suppresses one: no `cgguard fix` form reaches it, so
  `cgguard doctor --path TREE --fix`, which fixes exactly what doctor counted.

A finding without an automatic fix is never given a command: its message says what
to write, by hand.
"""

from __future__ import annotations

import os
import shlex
from dataclasses import dataclass, field

from cgguard.static.source.findings import DISPLAY_ONLY, UNSAFE, Finding

AFFECTING_CODE = "CGG001"


@dataclass(frozen=True)
class LeftOut:
    finding: Finding
    kind: str  # "excluded", "not selected", "ignored for the file", "suppressed", "unfixable", "config error"
    why: str  # one clause naming the setting or comment that does it

    def to_json(self) -> dict:
        f = self.finding
        return {"path": f.path, "line": f.line, "kind": self.kind, "why": self.why}


@dataclass
class FixPlan:
    command: str | None  # None: nothing can be fixed automatically
    fixes: list[Finding] = field(default_factory=list)  # what the command fixes
    left_out: list[LeftOut] = field(default_factory=list)  # what `cgguard fix TREE` leaves out
    by_hand: list[Finding] = field(default_factory=list)  # no automatic fix
    unsafe: list[Finding] = field(default_factory=list)  # fixed only with --unsafe-fixes
    plain_command: str = ""  # `cgguard fix TREE`, for the sentence about what it leaves out

    def to_json(self) -> dict:
        return {
            "command": self.command,
            "fixes": len(self.fixes),
            "left_out_by": self.plain_command,
            "left_out": [x.to_json() for x in self.left_out],
            "by_hand": [
                {"path": f.path, "line": f.line, "message": f.message} for f in self.by_hand
            ],
            "unsafe": len(self.unsafe),
        }


def _key(f: Finding) -> tuple:
    return (os.path.realpath(f.path), f.line, f.col, f.code)


def _read(path: str) -> str:
    from cgguard.static.source import sourcefile

    try:
        return sourcefile.decode(sourcefile.read_bytes(path)).text
    except sourcefile.SourceError:
        return ""


def _suppression(f: Finding, text: str) -> str | None:
    """The comment that suppresses ``f``, quoted with its line, or None."""
    from cgguard.static.workflow.suppressions import directives, filter_suppressed

    if filter_suppressed(text, [f]):
        return None
    lines = text.splitlines()
    first = min(f.line, f.stmt_lines[0] or f.line)
    last = max(f.end_line, f.stmt_lines[1] or f.end_line)
    for n in range(first, min(last, len(lines)) + 1):
        line = lines[n - 1]
        at = line.find("#")
        while at != -1:
            comment = line[at:].strip()
            for d in directives(comment):
                if d is None or any(f.code.startswith(c) for c in d):
                    return f"`{comment}` on line {n}"
            at = line.find("#", at + 1)
    return "a suppression comment on its statement"


def _excluding_glob(path: str, settings) -> str | None:
    from cgguard.static.workflow.globs import PathGlobs, relative_to_root

    rel = relative_to_root(path, settings.root)
    for key, globs in (("exclude", settings.exclude), ("extend-exclude", settings.extend_exclude)):
        for glob in globs:
            if PathGlobs([glob]).match_within(rel):
                return f'{key} = ["{glob}"]'
    return None


def _why(f: Finding, settings, discovered: set[str], text: str) -> LeftOut:
    source = settings.source or "the settings"
    if os.path.realpath(f.path) not in discovered:
        glob = _excluding_glob(f.path, settings)
        if glob:
            return LeftOut(f, "excluded", f"excluded by `{glob}` in {source}")
        return LeftOut(
            f, "excluded", f"not among the files it checks with {source} (a .gitignore, say)"
        )
    if not settings.selected(f.code):
        return LeftOut(f, "not selected", f"{f.code} is left out by `select`/`ignore` in {source}")
    suppressed = _suppression(f, text)
    if suppressed is not None:
        return LeftOut(f, "suppressed", f"suppressed by {suppressed}")
    if not settings.fixable(f.code):
        return LeftOut(f, "unfixable", f"`unfixable` in {source} names {f.code}")
    return LeftOut(
        f, "ignored for the file", f"`per-file-ignores` in {source} ignore {f.code} there"
    )


def _q(path: str) -> str:
    return shlex.quote(path)


def plan_fix(root: str, findings: list[Finding]) -> FixPlan:
    """The plan for the CGG001 ``findings`` doctor found under ``root``."""
    from cgguard.static.driver.run import check_paths
    from cgguard.static.workflow.config import ConfigError, resolve
    from cgguard.static.workflow.selection import make_filter

    affecting = sorted(
        (f for f in findings if f.code == AFFECTING_CODE), key=lambda f: f.sort_key()
    )
    by_hand = [f for f in affecting if f.fix is None or f.fix.applicability == DISPLAY_ONLY]
    fixable = [f for f in affecting if f not in by_hand]
    plain = f"cgguard fix {_q(root)}"
    plan = FixPlan(command=None, by_hand=by_hand, plain_command=plain)
    if not fixable:
        return plan

    try:
        settings = resolve(start=root)
    except ConfigError as exc:
        settings = None
        plan.left_out = [
            LeftOut(f, "config error", f"`{plain}` stops at a configuration error: {exc}")
            for f in fixable
        ]
    if settings is not None:
        # The very check `cgguard fix TREE` starts with.
        run = check_paths([root], make_filter(settings), settings=settings)
        discovered = {os.path.realpath(r.path) for r in run.files}
        reached = {_key(f): f for f in run.findings if f.fix is not None}
        texts: dict[str, str] = {}
        for f in fixable:
            if _key(f) in reached:
                continue
            text = texts.setdefault(f.path, _read(f.path))
            plan.left_out.append(_why(f, settings, discovered, text))

    plan.fixes = fixable
    plan.unsafe = [f for f in fixable if f.fix is not None and f.fix.applicability == UNSAFE]
    settings_allow_unsafe = settings is not None and settings.unsafe_fixes
    if not plan.left_out:
        flag = " --unsafe-fixes" if plan.unsafe and not settings_allow_unsafe else ""
        plan.command = f"{plain}{flag}"
    elif not any(x.kind == "suppressed" for x in plan.left_out):
        files = sorted({f.path for f in fixable})
        flag = " --unsafe-fixes" if plan.unsafe else ""
        plan.command = f"cgguard fix --isolated{flag} " + " ".join(_q(p) for p in files)
    else:
        flag = " --unsafe-fixes" if plan.unsafe else ""
        plan.command = f"cgguard doctor --path {_q(root)} --fix{flag}"
    return plan
