"""`cgguard --version` tells installs apart: the commit each was installed from, where it is
known. Each way it can be known is tested on a real install: `pip install git+URL@SHA`
(pip's direct_url.json), a git checkout the package is imported from (an editable install),
and one where nothing says (`pip install` of a folder)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from cgguard import __version__
from tests.conftest import REPO
from tests.workflow.conftest import git, git_env
from tests.workflow.test_precommit import _copy_of_this_tree


def _version_of(package_parent: Path, cwd: Path) -> str:
    """`cgguard --version` as printed by the cgguard package found under ``package_parent``."""
    result = subprocess.run(
        [sys.executable, "-c", "import sys; where = sys.argv.pop(1); sys.path.insert(0, where); "
         "import cgguard.cli; assert cgguard.cli.__file__.startswith(where); cgguard.cli.run()",
         str(package_parent), "--version"],
        cwd=cwd, capture_output=True, text=True, timeout=120, env={**git_env()},
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_a_git_checkout_shows_its_head_and_whether_it_is_modified(tmp_path):
    checkout = tmp_path / "checkout"
    sha = _copy_of_this_tree(checkout)
    assert _version_of(checkout, tmp_path) == f"cgguard {__version__} (commit {sha[:12]})\n"
    readme = checkout / "README.md"
    readme.write_text(readme.read_text() + "\nchanged\n")
    assert _version_of(checkout, tmp_path) == f"cgguard {__version__} (commit {sha[:12]}+dirty)\n"
    git(checkout, "commit", "-qam", "changed")
    head = git(checkout, "rev-parse", "HEAD").strip()
    assert _version_of(checkout, tmp_path) == f"cgguard {__version__} (commit {head[:12]})\n"


def test_pip_install_from_a_git_url_shows_the_commit_pip_recorded(tmp_path):
    source = tmp_path / "cgguard-src"
    sha = _copy_of_this_tree(source)
    git(source, "commit", "-q", "--allow-empty", "-m", "a later commit the install must not show")
    target = tmp_path / "site"
    result = subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
         "--target", str(target), f"git+{source.as_uri()}@{sha}"],
        capture_output=True, text=True, timeout=600,
        env={**git_env(), "PIP_DISABLE_PIP_VERSION_CHECK": "1"},
    )
    assert result.returncode == 0, result.stderr
    assert _version_of(target, tmp_path) == f"cgguard {__version__} (commit {sha[:12]})\n"
    # The console script as installed says the same.
    script = subprocess.run(
        [sys.executable, "-m", "cgguard", "--version"], cwd=tmp_path, capture_output=True,
        text=True, env={**os.environ, "PYTHONPATH": str(target)}, timeout=120,
    )
    assert script.stdout == f"cgguard {__version__} (commit {sha[:12]})\n"


def test_an_install_from_a_folder_shows_the_version_alone(tmp_path):
    target = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
         "--target", str(target), str(REPO)],
        check=True, capture_output=True, text=True, timeout=600,
    )
    # Its direct_url.json names a folder, no commit; no checkout holds it.
    assert _version_of(target, tmp_path) == f"cgguard {__version__}\n"


def test_this_install_shows_its_checkout():
    """The test environment's own cgguard (editable from REPO): REPO's HEAD where REPO is a
    checkout (a clone: CI), the version alone where it is an exported tree."""
    result = subprocess.run([str(Path(sys.executable).with_name("cgguard")), "--version"],
                            capture_output=True, text=True, timeout=120, env=git_env())
    if (REPO / ".git").exists():
        head = git(REPO, "rev-parse", "--short=12", "HEAD").strip()
        assert result.stdout.startswith(f"cgguard {__version__} (commit {head}")
    else:
        assert result.stdout == f"cgguard {__version__}\n"
