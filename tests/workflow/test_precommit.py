"""The pre-commit hooks, driven by the real `pre-commit` in a temporary git repository.

pre-commit clones a copy of this working tree (committed in a temporary repository,
so uncommitted edits are what is tested) and pip-installs it into its own
environment, as it would for a user. The configuration is the README's snippet.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.conftest import REPO
from tests.workflow.conftest import (
    CGG001_FIXED_LINE,
    CGG001_SOURCE,
    CLEAN_SOURCE,
    git,
    git_env,
    git_init,
    readme_snippet,
    write,
)


def _copy_of_this_tree(dest: Path) -> str:
    """Commit the current working tree (tracked + untracked, not ignored) in ``dest``; its sha."""
    listed = subprocess.run(
        ["git", "-C", str(REPO), "ls-files", "-co", "--exclude-standard", "-z"],
        capture_output=True, check=True, env=git_env(),
    ).stdout.decode().split("\0")
    git_init(dest)
    for rel in filter(None, listed):
        src = REPO / rel
        if src.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)
    git(dest, "add", "-A")
    git(dest, "commit", "-q", "-m", "cgguard under test")
    return git(dest, "rev-parse", "HEAD").strip()


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    base = tmp_path_factory.mktemp("precommit")
    source = base / "cgguard-src"
    rev = _copy_of_this_tree(source)
    snippet = readme_snippet("pre-commit")
    config = yaml.safe_load(snippet)
    assert config["repos"][0]["repo"] == "CGGUARD_REPO_URL"
    assert [h["id"] for h in config["repos"][0]["hooks"]] == ["cgguard-fix", "cgguard-check"]
    snippet = snippet.replace("CGGUARD_REPO_URL", str(source)).replace("rev: CGGUARD_REV", f"rev: {rev}")
    repo = git_init(base / "user-project")
    write(repo, {".pre-commit-config.yaml": snippet, "pkg/runner.py": CGG001_SOURCE,
                 "pkg/ok.py": CLEAN_SOURCE, "notes.txt": "not python\n"})
    git(repo, "add", "-A")
    env = git_env()
    env["PRE_COMMIT_HOME"] = str(base / "pre-commit-home")
    env.pop("VIRTUAL_ENV", None)
    return repo, env


def _pre_commit(repo: Path, env: dict, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pre_commit", *args], cwd=repo, env=env,
                          capture_output=True, text=True, timeout=900)


def test_hooks_file_declares_both_hooks():
    hooks = {h["id"]: h for h in yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text())}
    assert set(hooks) == {"cgguard-check", "cgguard-fix"}
    for hook in hooks.values():
        assert hook["language"] == "python"
        assert hook["types_or"] == ["python", "pyi"]
        assert hook["entry"].startswith("cgguard ")


def test_check_fails_fix_rewrites_check_passes_then_commit(project):
    repo, env = project
    check = _pre_commit(repo, env, "run", "cgguard-check", "--all-files")
    assert check.returncode == 1, check.stdout + check.stderr
    assert "pkg/runner.py:3:22: CGG001" in check.stdout
    assert (repo / "pkg/runner.py").read_text() == CGG001_SOURCE  # check never writes

    fix = _pre_commit(repo, env, "run", "cgguard-fix", "--all-files")
    assert fix.returncode == 1, fix.stdout + fix.stderr  # pre-commit fails a hook that changed files
    assert "files were modified by this hook" in fix.stdout
    fixed = (repo / "pkg/runner.py").read_text()
    assert CGG001_FIXED_LINE in fixed
    assert (repo / "pkg/ok.py").read_text() == CLEAN_SOURCE

    git(repo, "add", "-A")
    again = _pre_commit(repo, env, "run", "cgguard-check", "--all-files")
    assert again.returncode == 0, again.stdout + again.stderr
    # The whole README configuration, as `git commit` runs it.
    install = _pre_commit(repo, env, "install")
    assert install.returncode == 0, install.stderr
    commit = subprocess.run(["git", "commit", "-q", "-m", "fixed"], cwd=repo, env=env, capture_output=True,
                            text=True, timeout=900)
    assert commit.returncode == 0, commit.stdout + commit.stderr
    write(repo, {"pkg/runner2.py": CGG001_SOURCE})
    git(repo, "add", "pkg/runner2.py")
    refused = subprocess.run(["git", "commit", "-q", "-m", "bug"], cwd=repo, env=env, capture_output=True,
                             text=True, timeout=900)
    assert refused.returncode != 0
    assert CGG001_FIXED_LINE in (repo / "pkg/runner2.py").read_text()  # fixed in the work tree


def test_excluded_files_pass_through_the_hooks(project):
    repo, env = project
    write(repo, {"pyproject.toml": '[tool.cgguard]\nextend-exclude = ["vendored"]\n',
                 "vendored/copy.py": CGG001_SOURCE})
    git(repo, "add", "-A")
    result = _pre_commit(repo, env, "run", "cgguard-check", "--files", "vendored/copy.py", "pyproject.toml")
    assert result.returncode == 0, result.stdout + result.stderr
    assert (repo / "vendored/copy.py").read_text() == CGG001_SOURCE
