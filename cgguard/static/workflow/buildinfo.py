"""``cgguard --version``: the version, and the commit the running code comes from where known.

Installs are pinned by commit (no release is published), so the version alone does not tell
two installs apart. The commit is read, in this order:

1. ``pip install git+URL@REF``: pip records the commit it checked out in the install's
   ``direct_url.json`` (``vcs_info.commit_id``, PEP 610). It is used when that install is
   the one running (its files are the package imported), not another one on the path.
2. A git checkout the package is imported from (an editable install, ``pip install -e .``,
   or a run from the source tree): ``git rev-parse HEAD`` there, with ``+dirty`` when a
   tracked file differs from that commit.

Otherwise (``pip install .`` from a folder, a wheel) nothing says which commit it was: the
version is printed alone. Nothing here runs unless ``--version`` is asked for.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

SHORT = 12  # characters of a commit shown


def version_line(version: str) -> str:
    """``cgguard VERSION`` and, where known, `` (commit SHA)``."""
    commit = build_commit()
    return f"cgguard {version}" + (f" (commit {commit})" if commit else "")


def build_commit() -> str | None:
    package = Path(__file__).resolve().parents[2]  # the cgguard package running
    return _pip_recorded(package) or _checkout(package.parent)


def _pip_recorded(package: Path) -> str | None:
    """The commit in the running install's direct_url.json (``pip install git+...``)."""
    from importlib import metadata

    try:
        dist = metadata.distribution("cgguard")
        if Path(str(dist.locate_file("cgguard/__init__.py"))).resolve() != package / "__init__.py":
            return None  # metadata of another install than the code running
        info = json.loads(dist.read_text("direct_url.json") or "null")
    except (metadata.PackageNotFoundError, OSError, ValueError):
        return None
    commit = (info or {}).get("vcs_info", {}).get("commit_id") if isinstance(info, dict) else None
    return commit[:SHORT] if isinstance(commit, str) and commit else None


def _checkout(folder: Path) -> str | None:
    """HEAD of the git checkout at ``folder`` (``+dirty`` with changes to tracked files)."""
    if not (folder / ".git").exists():
        return None
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    try:
        head = subprocess.run(
            ["git", "-C", str(folder), "rev-parse", f"--short={SHORT}", "HEAD"],
            capture_output=True,
            text=True,
            env=env,
            timeout=10,
        )
        if head.returncode != 0 or not head.stdout.strip():
            return None
        status = subprocess.run(
            ["git", "-C", str(folder), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            env=env,
            timeout=10,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None  # no git here: the commit is not known
    dirty = status.returncode == 0 and bool(status.stdout.strip())
    return head.stdout.strip() + ("+dirty" if dirty else "")
