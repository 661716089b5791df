"""`cgguard doctor`'s diagnosis: which vLLM, is it affected and where, what to do.

The truth is the source: a vLLM is affected when the linter finds CGG001 in the
files it installed. The version only adds context (patched builds and forks carry
the bug outside 0.18.0-0.25.x, or lack it inside).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Sequence

from cgguard.ops.guard_status import ALLOW_LIST_ENV, GuardStatus, guard_status
from cgguard.ops.installed import InstalledVllm, find_installed_vllm
from cgguard.shared.bound import FIRST_AFFECTED, FIRST_FIXED
from cgguard.shared.modes import MODE_ENV
from cgguard.static.driver.findings import FileError, Finding
from cgguard.static.driver.run import check_paths

AFFECTING_CODE = "CGG001"  # per-token block count; CGG002 (max()) is a review note


class DoctorError(Exception):
    """Doctor cannot answer (no vLLM, no such folder): one line for the user."""


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


_VERSION_ASSIGN = re.compile(r"""^__version__\s*(?::\s*str\s*)?=\s*(?:version\s*=\s*)?['"]([^'"]+)['"]""", re.M)


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

    @property
    def affected(self) -> bool:
        return any(f.code == AFFECTING_CODE for f in self.findings)

    @property
    def in_affected_releases(self) -> bool | None:
        return in_affected_releases(self.vllm_version)

    def exit_code(self) -> int:
        # Affected is a definite answer even if some file could not be read; without
        # a finding, an unreadable file leaves the answer open (2).
        if self.affected:
            return 1
        return 2 if self.errors else 0

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
            "other_distributions": [
                {"name": d.name, "version": d.version, "location": d.package_dir} for d in self.others
            ],
            "advice": self.advice,
        }


def _lint(paths: Sequence[str]) -> tuple[int, list[Finding], list[FileError]]:
    run = check_paths(paths)
    # A path with nothing to check (a folder without Python files) is a warning for
    # `cgguard check`; for doctor it leaves the answer open, as an error does.
    skipped = [FileError(r.path, r.skipped) for r in run.skipped]
    return run.checked, run.findings, run.errors + skipped


def diagnose_installed(search_path: Sequence[str] | None = None) -> Diagnosis:
    """Diagnose the vLLM this Python would import (``search_path``: sys.path by default)."""
    installed = find_installed_vllm(search_path)
    if not installed:
        raise DoctorError(
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
    diagnosis.advice = advise(diagnosis)
    return diagnosis


def diagnose_path(root: str) -> Diagnosis:
    """Diagnose a source checkout (vLLM itself, a fork or a plugin) at ``root``."""
    if not os.path.isdir(root):
        raise DoctorError(f"{root}: no such directory")
    n, findings, errors = _lint([root])
    diagnosis = Diagnosis(
        source="path",
        distribution=None,
        vllm_version=checkout_version(root),
        location=root,
        files_checked=n,
        findings=findings,
        errors=errors,
        guard=guard_status(),
    )
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


def advise(d: Diagnosis) -> str:
    parts: list[str] = []
    fixed = version_text(FIRST_FIXED)
    if d.affected:
        if d.source == "path":
            parts.append(f"Run `cgguard fix {d.location}` on this source tree and rebuild.")
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
    else:
        if d.errors:
            parts.append(
                f"No per-token block count found, but {len(d.errors)} file(s) could not be checked: "
                "the answer is incomplete."
            )
        else:
            parts.append("Not affected: nothing to do.")
        if d.in_affected_releases:
            parts.append(
                f"Version {d.vllm_version} lies in the affected releases ({AFFECTED_RELEASES}) but its "
                "source is bounded: a patched build."
            )
    if any(f.code != AFFECTING_CODE for f in d.findings):
        parts.append(
            "Review the CGG002 findings: `max()` with the capture size still grows with the token count "
            "(`cgguard rule CGG002`)."
        )
    if d.guard.mode_problem:
        parts.append(d.guard.mode_problem + ".")
    return " ".join(parts)
