"""`cgguard doctor`'s diagnosis: which vLLM, is it affected and where, what to do.

The truth is the source: a vLLM is affected when the linter finds CGG001 in the
files it installed. The version only adds context (patched builds and forks carry
the bug outside 0.18.0-0.25.x, or lack it inside).
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from cgguard.ops.doctor.fix_plan import FixPlan, plan_fix
from cgguard.ops.doctor.guard_status import ALLOW_LIST_ENV, GuardStatus, guard_status
from cgguard.ops.release.installed import InstalledVllm, find_installed_vllm, vllm_importable
from cgguard.ops.release.runner_verdict import (
    PathVerdict,
    RunnerSummary,
    RunSettings,
    model_verdict,
    runner_summary,
)
from cgguard.ops.release.workarounds import Workarounds, find_workarounds
from cgguard.shared.bound import FIRST_AFFECTED, FIRST_FIXED
from cgguard.shared.modes import MODE_ENV
from cgguard.static.driver.run import check_paths
from cgguard.static.source.findings import FileError, Finding
from cgguard.static.workflow.discovery import Skip

AFFECTING_CODE = "CGG001"  # per-token block count; the other rules' findings are listed beside it
# How doctor names the findings that do not make a tree affected, and what to do about them.
OTHER_FINDINGS = {
    "CGG002": (
        "review note",
        "`max()` with the capture size still grows with the token count (`cgguard rule CGG002`)",
    ),
    "CGG003": (
        "unit finding",
        "a token count reaches where a request count or one sequence's length belongs, a "
        "sibling of this bug outside the profiling cache (`cgguard rule CGG003`)",
    ),
}


def _described(code: str) -> tuple[str, str]:
    """What doctor calls a rule's findings, and what to do about them."""
    return OTHER_FINDINGS.get(code, ("finding", f"`cgguard rule {code}`"))


def other_findings(findings: Sequence[Finding]) -> list[tuple[str, str, int]]:
    """(code, what doctor calls it, how many) for each rule other than CGG001 that found something."""
    counts: dict[str, int] = {}
    for f in findings:
        if f.code != AFFECTING_CODE:
            counts[f.code] = counts.get(f.code, 0) + 1
    return [(code, _described(code)[0], n) for code, n in sorted(counts.items())]


def count_phrase(code: str, noun: str, n: int) -> str:
    return f"{n} {noun}{'s' if n != 1 else ''} ({code})"


class DoctorError(Exception):
    """Doctor cannot answer (no vLLM, no such folder): one line for the user."""


class NoVllm(DoctorError):
    """No installed distribution provides vLLM: there is nothing for the guard to guard."""


def version_text(v: tuple[int, int, int]) -> str:
    return ".".join(str(p) for p in v)


AFFECTED_RELEASES = f"{version_text(FIRST_AFFECTED)} to {FIRST_FIXED[0]}.{FIRST_FIXED[1] - 1}.x"


def release_tuple(version: str) -> tuple[int, int, int] | None:
    """(major, minor, micro) of a version string; pre-/dev-/local parts are dropped."""
    m = re.match(r"\s*v?(\d+)\.(\d+)(?:\.(\d+))?", version)
    if not m:
        return None
    return int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)


def in_affected_releases(version: str | None) -> bool | None:
    """Whether a version lies in [FIRST_AFFECTED, FIRST_FIXED); None when unknown."""
    release = release_tuple(version) if version else None
    if release is None:
        return None
    return FIRST_AFFECTED <= release < FIRST_FIXED


_VERSION_ASSIGN = re.compile(
    r"""^__version__\s*(?::\s*str\s*)?=\s*(?:version\s*=\s*)?['"]([^'"]+)['"]""", re.M
)


def checkout_version(root: str) -> str | None:
    """Version of a source checkout, from the ``_version.py`` setuptools-scm writes."""
    for candidate in (os.path.join(root, "vllm", "_version.py"), os.path.join(root, "_version.py")):
        try:
            with open(candidate, encoding="utf-8") as fh:
                m = _VERSION_ASSIGN.search(fh.read())
        except (OSError, UnicodeDecodeError):
            continue
        if m:
            return m.group(1)
    return None


@dataclass
class Diagnosis:
    source: str  # "installed" or "path"
    distribution: str | None
    vllm_version: str | None
    location: str | None  # the folder that was checked
    files_checked: int
    findings: list[Finding]
    errors: list[FileError]
    guard: GuardStatus
    others: list[InstalledVllm] = field(default_factory=list)
    advice: str = ""
    plan: FixPlan | None = None  # a source tree's fix (``source == "path"``, when affected)
    workarounds: Workarounds | None = None  # when affected
    runners: RunnerSummary | None = None  # which models run the affected V1 runner
    verdict: PathVerdict | None = None  # with --model: does that model take the path

    @property
    def affected(self) -> bool | None:
        """True with a per-token count; None when there is no answer (a file that
        could not be checked, or nothing checked at all); False otherwise."""
        if any(f.code == AFFECTING_CODE for f in self.findings):
            return True
        if self.errors or self.files_checked == 0:
            return None
        return False

    @property
    def in_affected_releases(self) -> bool | None:
        return in_affected_releases(self.vllm_version)

    @property
    def nothing_checked(self) -> bool:
        """No file was checked and none failed: the path holds no Python file doctor takes."""
        return self.files_checked == 0 and all(isinstance(e, Skip) for e in self.errors)

    def exit_code(self) -> int:
        # Affected is a definite answer even if some file could not be read; without
        # a finding, an unreadable file leaves the answer open (2).
        if self.affected:
            # With a model named, only a path taken (or not ruled out) is affected.
            if self.verdict is not None and self.verdict.taken is False:
                return 0
            return 1
        return 2 if self.affected is None else 0

    def to_json(self) -> dict:
        return {
            "vllm_version": self.vllm_version,
            "distribution": self.distribution,
            "source": self.source,
            "location": self.location,
            "affected": self.affected,
            "in_affected_releases": self.in_affected_releases,
            "affected_releases": f">={version_text(FIRST_AFFECTED)},<{version_text(FIRST_FIXED)}",
            "files_checked": self.files_checked,
            "findings": [
                {"code": f.code, "path": f.path, "line": f.line, "col": f.col, "message": f.message}
                for f in sorted(self.findings, key=lambda f: f.sort_key())
            ],
            "errors": [{"path": e.path, "reason": e.reason} for e in self.errors],
            "guard": self.guard.to_json(),
            "fix": self.plan.to_json() if self.plan is not None else None,
            "workarounds": self.workarounds.to_json() if self.workarounds is not None else None,
            "runners": self.runners.to_json() if self.runners is not None else None,
            "model_verdict": self.verdict.to_json() if self.verdict is not None else None,
            "other_distributions": [
                {"name": d.name, "version": d.version, "location": d.package_dir}
                for d in self.others
            ],
            "advice": self.advice,
        }


def _lint(paths: Sequence[str]) -> tuple[int, list[Finding], list[FileError]]:
    # Default settings, no suppressions: doctor counts what vLLM runs, whatever a
    # tree's config or comments say (the fix plan says what `cgguard fix` skips).
    run = check_paths(paths)
    # A path with nothing to check (a folder without Python files) is a warning for
    # `cgguard check`; for doctor it leaves the answer open, as an error does.
    skipped = [Skip(r.path, r.skipped or "") for r in run.skipped]
    return run.checked, run.findings, run.errors + skipped


def _package_dir(root: str) -> str:
    """vLLM's package folder in a source checkout (``root/vllm``), else ``root``."""
    inner = os.path.join(root, "vllm")
    return inner if os.path.isdir(inner) else root


def fix_tree(root: str, *, unsafe: bool) -> tuple[int, list[FileError]]:
    """Fix every per-token count doctor counts under ``root``, those a config
    excludes or a comment suppresses too (``doctor --path ROOT --fix``).

    Returns (counts fixed, errors). Only the files holding such a count are
    rewritten, by `cgguard fix`'s own machinery (atomic, re-checked, byte-exact).
    """
    from cgguard.static.driver.run import fix_paths
    from cgguard.static.workflow.config import Settings

    _require_folder(root)
    _, findings, _ = _lint([root])
    files = sorted({f.path for f in findings if f.code == AFFECTING_CODE and f.fix is not None})
    if not files:
        return 0, []
    # Named files under default settings, no finding filter: nothing is left out.
    run = fix_paths(files, None, write=True, unsafe=unsafe, settings=Settings())
    return run.fixed, run.errors


# A tree read with --path runs on another machine: its target, not this Python, has Triton.
TARGET_TRITON = (
    "the tree runs with Triton on a CUDA GPU (vLLM's HAS_TRITON true): a tree read with --path "
    "runs elsewhere, so this Python's packages do not decide"
)


def _runner_answers(
    d: Diagnosis,
    package_dir: str,
    model_dir: str | None,
    settings: RunSettings | None,
    *,
    on_target: bool = False,
) -> None:
    """Which models take the per-token path on this affected vLLM (and the named one).

    ``on_target``: the vLLM is a tree read for another machine (``--path``), taken to
    run with Triton on a CUDA GPU; otherwise it runs with this Python's packages."""
    d.runners = runner_summary(package_dir)
    if model_dir is not None:
        d.verdict = model_verdict(
            package_dir,
            model_dir,
            settings or RunSettings(),
            d.workarounds,
            has_triton=True if on_target else None,
            triton_note=TARGET_TRITON if on_target else None,
        )


def _require_folder(root: str) -> None:
    """``--path`` names a folder: a vLLM source checkout, a fork or a package folder."""
    if os.path.isdir(root):
        return
    if os.path.exists(root):
        raise DoctorError(
            f"{root}: not a directory (--path takes the folder of a vLLM checkout, "
            "a fork or a plugin)"
        )
    raise DoctorError(f"{root}: no such directory")


def diagnose_installed(
    search_path: Sequence[str] | None = None,
    model_dir: str | None = None,
    settings: RunSettings | None = None,
) -> Diagnosis:
    """Diagnose the vLLM this Python would import (``search_path``: sys.path by default)."""
    installed = find_installed_vllm(search_path)
    if not installed:
        raise NoVllm(
            "no installed distribution provides the `vllm` package here; run doctor with the "
            "Python that runs vLLM, or point it at a source checkout with --path DIR"
        )
    main = next(d for d in installed if d.imported)
    if main.source_files:
        targets: Sequence[str] = main.source_files
    elif main.package_dir is not None:
        targets = [main.package_dir]
    else:
        raise DoctorError(
            f"{main.name} {main.version} is installed ({main.metadata_path}) but lists no vllm/ files "
            "and the vllm package cannot be located"
        )
    n, findings, errors = _lint(targets)
    diagnosis = Diagnosis(
        source="installed",
        distribution=main.name,
        vllm_version=main.version or None,
        location=main.package_dir,
        files_checked=n,
        findings=findings,
        errors=errors,
        guard=guard_status(search_path),
        others=[d for d in installed if d is not main],
    )
    if diagnosis.affected and main.package_dir is not None:
        diagnosis.workarounds = find_workarounds(main.package_dir)
        _runner_answers(diagnosis, main.package_dir, model_dir, settings)
    diagnosis.advice = advise(diagnosis)
    return diagnosis


def diagnose_path(
    root: str, model_dir: str | None = None, settings: RunSettings | None = None
) -> Diagnosis:
    """Diagnose a source checkout (vLLM itself, a fork or a plugin) at ``root``."""
    _require_folder(root)
    n, findings, errors = _lint([root])
    diagnosis = Diagnosis(
        source="path",
        distribution=None,
        vllm_version=checkout_version(root),
        location=root,
        files_checked=n,
        findings=findings,
        errors=errors,
        # The guard runs only inside a vLLM this Python imports, not inside the tree.
        guard=guard_status(vllm_found=vllm_importable()),
    )
    if diagnosis.affected:
        diagnosis.plan = plan_fix(root, findings)
        diagnosis.workarounds = find_workarounds(_package_dir(root))
        _runner_answers(diagnosis, _package_dir(root), model_dir, settings, on_target=True)
    diagnosis.advice = advise(diagnosis)
    return diagnosis


def _guard_advice(guard: GuardStatus) -> str:
    """How to make the runtime guard clamp the profiling cache until the code is fixed."""
    if not guard.plugin_registered:
        return (
            "Meanwhile, install cgguard into the same environment as vLLM and start vLLM with "
            f"{MODE_ENV}=fix: its plugin clamps the profiling cache to one block per sequence."
        )
    if not guard.allowed_by_vllm_plugins:
        return (
            f"Meanwhile, add cgguard to {ALLOW_LIST_ENV} (it leaves the plugin out now) and start vLLM "
            f"with {MODE_ENV}=fix: the plugin clamps the profiling cache to one block per sequence."
        )
    if guard.mode == "fix":
        return f"{MODE_ENV}=fix is set: the cgguard plugin clamps the profiling cache to one block per sequence."
    return (
        f"Meanwhile, start vLLM with {MODE_ENV}=fix (now: {guard.mode}): the cgguard plugin clamps the "
        "profiling cache to one block per sequence."
    )


def _where(f: Finding) -> str:
    return f"{f.path}:{f.line}"


_UNSAFE_BECAUSE = re.compile(r"\(unsafe: (.*)\)\s*$")


def unsafe_reason(f: Finding) -> str:
    """Why a fix is unsafe, in the words its description (``--format full``) gives."""
    description = f.fix.description if f.fix is not None else ""
    m = _UNSAFE_BECAUSE.search(description)
    return m.group(1) if m else description


def _plan_advice(plan: FixPlan) -> list[str]:
    """What to run on a source tree, what `cgguard fix TREE` alone leaves out, and what
    only a hand edit fixes."""
    parts: list[str] = []
    if plan.command is not None:
        n = len(plan.fixes)
        parts.append(
            f"Run `{plan.command}` (it fixes {n} per-token count{'s' if n != 1 else ''}) and rebuild."
        )
        if plan.left_out:
            listed = "; ".join(f"{_where(x.finding)} ({x.why})" for x in plan.left_out)
            parts.append(
                f"`{plan.plain_command}` alone would leave out {len(plan.left_out)}: {listed}."
            )
        if plan.unsafe:
            reasons = "; ".join(f"{_where(f)} ({unsafe_reason(f)})" for f in plan.unsafe)
            parts.append(
                f"{len(plan.unsafe)} of these fixes {'is' if len(plan.unsafe) == 1 else 'are'} marked unsafe: "
                f"{reasons}. Review the change."
            )
    for f in plan.by_hand:
        parts.append(f"No automatic fix for {_where(f)}: edit it by hand ({f.message}).")
    return parts


def advise(d: Diagnosis) -> str:
    parts: list[str] = []
    fixed = version_text(FIRST_FIXED)
    if d.affected and d.verdict is not None and d.verdict.taken is False:
        parts.append(
            "This model does not take the per-token profiling path with these settings: nothing to "
            "do for it. Other models or settings on this vLLM may take it."
        )
    elif d.affected:
        if d.source == "path":
            parts.extend(_plan_advice(d.plan) if d.plan is not None else [])
        elif d.in_affected_releases:
            parts.append(
                f"Upgrade vLLM to {fixed} or later (upstream fix, vLLM PR #48483); on a fork of it, "
                "run `cgguard fix` on its source."
            )
        else:
            parts.append(
                f"This build carries the per-token formula outside vLLM's affected releases "
                f"({AFFECTED_RELEASES}), so it is a fork or a patched copy: run `cgguard fix` on its "
                "source and reinstall it."
            )
        parts.append(_guard_advice(d.guard))
        parts.append("`cgguard estimate MODEL_DIR` shows how much memory is at stake.")
    elif d.affected is None:
        if d.nothing_checked:
            parts.append(
                f"Nothing was checked: no Python file in {d.location} (none found, or all excluded). "
                "Point --path at the folder that holds vLLM's source (the one with vllm/ in it)."
            )
        else:
            parts.append(
                f"No per-token block count found, but {len(d.errors)} file(s) could not be checked: "
                "no answer."
            )
    else:
        parts.append("Not affected: nothing to do.")
        if d.in_affected_releases:
            parts.append(
                f"Version {d.vllm_version} lies in the affected releases ({AFFECTED_RELEASES}) but its "
                "source is bounded: a patched build."
            )
    for code, _, _ in other_findings(d.findings):
        parts.append(f"Review the {code} findings: {_described(code)[1]}.")
    if d.guard.allow_list_problem:
        parts.append(d.guard.allow_list_problem + ".")
    if d.guard.mode_problem:
        parts.append(d.guard.mode_problem + ".")
    return " ".join(parts)
