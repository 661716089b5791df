"""A folder named on the command line whose every Python file is excluded says why, and fails.

In `cgguard check .venv` the default exclude `site-packages` removes every installed
package: a bare "none found" (or "1 file checked", for a script in bin/) would be a
false all-clear for someone checking a virtual environment's vLLM. So the run names
each pattern, where it is written, the option that includes it, and for an installed
vLLM `cgguard doctor`; exit code 2, since what was asked for was not checked.
Real layouts, real config files, real git.
"""

from __future__ import annotations

import os

import pytest

from tests.conftest import PRE_FIX_RUNNER_EXPR, run_cgguard
from tests.workflow.conftest import CGG001_SOURCE, CLEAN_SOURCE, GIT_ENV, finding_paths, git, git_init, write

SITE = ".venv/lib/python3.11/site-packages"
RUNNER = (
    "class GPUModelRunner:\n"
    "    def _init_minimal_kv_cache_for_profiling(self):\n"
    f"        min_blocks = {PRE_FIX_RUNNER_EXPR}\n"
    "        self.cache_config.num_gpu_blocks_override = min_blocks\n"
)


def _venv(root):
    """A virtual environment as `python -m venv` lays it out, with vLLM 0.25.0 installed."""
    write(root, {
        ".venv/pyvenv.cfg": "home = /usr/bin\ninclude-system-site-packages = false\nversion = 3.11.9\n",
        f"{SITE}/vllm/__init__.py": "__version__ = '0.25.0'\n",
        f"{SITE}/vllm/v1/worker/gpu_model_runner.py": RUNNER,
        f"{SITE}/vllm-0.25.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: vllm\nVersion: 0.25.0\n",
        f"{SITE}/six.py": CLEAN_SOURCE,
    })
    os.symlink("lib", root / ".venv" / "lib64")  # as venv makes it on 64-bit Linux
    return root


@pytest.mark.parametrize("command", ["check", "fix"])
def test_a_virtualenv_with_vllm_names_the_exclude_the_option_and_doctor(tmp_path, command):
    root = _venv(tmp_path)
    before = (root / SITE / "vllm/v1/worker/gpu_model_runner.py").read_text()
    result = run_cgguard(command, ".venv", cwd=root)
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stderr == (
        ".venv: error: nothing checked: all 3 of its Python files are excluded by `site-packages` "
        "(a default exclude); --no-exclude checks them; "
        f"it holds an installed vLLM ({SITE}/vllm): `cgguard doctor --path {SITE}/vllm` tells whether "
        "it is affected (or `cgguard doctor` run by that environment's Python)\n"
    )
    assert result.stdout.splitlines()[-1].endswith("in 0 files checked. 1 error.")
    assert (root / SITE / "vllm/v1/worker/gpu_model_runner.py").read_text() == before


def test_a_virtualenv_whose_scripts_were_checked_still_says_its_packages_were_not(tmp_path):
    # Packages install scripts into bin/ (jmespath's jp.py): checking those alone is
    # no check of the environment's vLLM.
    root = _venv(tmp_path)
    write(root, {".venv/bin/jp.py": CLEAN_SOURCE})
    result = run_cgguard("check", ".venv", cwd=root)
    assert result.returncode == 2
    assert result.stderr.startswith(
        ".venv: error: its installed packages were not checked: 3 of its 4 Python files are excluded by "
        "`site-packages` (a default exclude); --no-exclude checks them; it holds an installed vLLM")
    assert result.stdout == "No findings in 1 file checked. 1 error.\n"
    # A folder that is no virtual environment keeps its excludes quietly when something is checked.
    write(root, {"proj/ok.py": CLEAN_SOURCE, "proj/build/gen.py": CGG001_SOURCE})
    assert run_cgguard("check", "proj", cwd=root).stdout == "No findings in 1 file checked.\n"


def test_the_advice_works_as_printed(tmp_path):
    root = _venv(tmp_path)
    included = run_cgguard("check", "--no-exclude", ".venv", cwd=root)
    assert included.returncode == 1, included.stderr
    assert finding_paths(included.stdout) == [f"{SITE}/vllm/v1/worker/gpu_model_runner.py"]
    assert "in 3 files checked." in included.stdout  # lib64 is the same folder: counted once
    doctor = run_cgguard("doctor", "--path", f"{SITE}/vllm", cwd=root)
    assert doctor.returncode == 1, doctor.stdout + doctor.stderr
    assert "AFFECTED" in doctor.stdout
    # Naming the package itself searches it (the exclude applies below a named folder).
    assert run_cgguard("check", f"{SITE}/vllm", cwd=root).returncode == 1


def test_config_exclude_and_extend_exclude_are_named_with_their_file(tmp_path):
    write(tmp_path, {
        "pyproject.toml": '[tool.cgguard]\nextend-exclude = ["gen_*"]\n',
        "src/gen_a/x.py": CGG001_SOURCE,
        "src/gen_b.py": CGG001_SOURCE,
        "other/pyproject.toml": '[tool.cgguard]\nexclude = ["vendored"]\n',
        "other/vendored/y.py": CGG001_SOURCE,
    })
    ext = run_cgguard("check", "src", cwd=tmp_path)
    assert (ext.returncode, ext.stderr) == (2, (
        "src: error: nothing checked: all 2 of its Python files are excluded by `gen_*` "
        f"(extend-exclude in {tmp_path / 'pyproject.toml'}); --no-exclude checks them\n"))
    assert finding_paths(run_cgguard("check", "--no-exclude", "src", cwd=tmp_path).stdout) == [
        "src/gen_a/x.py", "src/gen_b.py"]
    own = run_cgguard("check", ".", cwd=tmp_path / "other")
    assert (own.returncode, own.stderr) == (2, (
        ".: error: nothing checked: its only Python file is excluded by `vendored` "
        f"(exclude in {tmp_path / 'other' / 'pyproject.toml'}); --no-exclude checks it\n"))


def test_gitignore_in_a_real_repository_is_named_with_its_file(tmp_path):
    repo = git_init(tmp_path / "repo")
    write(repo, {
        ".gitignore": "generated/\n",
        "generated/a.py": CGG001_SOURCE,
        "sub/.gitignore": "*_pb2.py\n",
        "sub/x_pb2.py": CGG001_SOURCE,
        "sub/build/y.py": CGG001_SOURCE,
        "docs/readme.txt": "no Python here\n",
    })
    git(repo, "add", ".gitignore", "sub/.gitignore")
    git(repo, "commit", "-q", "-m", "ignore rules")
    result = run_cgguard("check", ".", cwd=repo, env=GIT_ENV)
    assert result.returncode == 2
    assert result.stderr == (
        ".: error: nothing checked: all 3 of its Python files are excluded by `generated/` (.gitignore: 1 file), "
        "`build` (a default exclude: 1 file), `*_pb2.py` (sub/.gitignore: 1 file); "
        "--no-exclude and --no-respect-gitignore check them\n"
    )
    both = run_cgguard("check", "--no-exclude", "--no-respect-gitignore", ".", cwd=repo, env=GIT_ENV)
    assert finding_paths(both.stdout) == ["generated/a.py", "sub/build/y.py", "sub/x_pb2.py"]


def test_git_info_exclude_is_named_by_git(tmp_path):
    # git lists the tracked file (an exclude glob removes it) and leaves out the one
    # .git/info/exclude ignores, a file cgguard's own .gitignore reading would keep:
    # git names that rule.
    repo = git_init(tmp_path / "repo")
    write(repo, {"pyproject.toml": '[tool.cgguard]\nextend-exclude = ["gen_*"]\n',
                 "lib/gen_a.py": CGG001_SOURCE, "lib/private.py": CGG001_SOURCE,
                 ".git/info/exclude": "private.py\n"})
    git(repo, "add", "lib/gen_a.py")
    result = run_cgguard("check", "lib", cwd=repo, env=GIT_ENV)
    assert (result.returncode, result.stderr) == (2, (
        "lib: error: nothing checked: all 2 of its Python files are excluded by "
        f"`gen_*` (extend-exclude in {repo / 'pyproject.toml'}: 1 file), `private.py` (.git/info/exclude: 1 file); "
        "--no-exclude and --no-respect-gitignore check them\n"))
    both = run_cgguard("check", "--no-exclude", "--no-respect-gitignore", "lib", cwd=repo, env=GIT_ENV)
    assert finding_paths(both.stdout) == ["lib/gen_a.py", "lib/private.py"]


def test_a_folder_without_python_files_is_still_a_warning(tmp_path):
    write(tmp_path, {"docs/readme.txt": "x\n", "pyproject.toml": '[tool.cgguard]\nextend-exclude = ["docs"]\n'})
    (tmp_path / "empty").mkdir()
    for folder in ("docs", "empty"):
        result = run_cgguard("check", folder, cwd=tmp_path)
        assert (result.returncode, result.stderr) == (
            0, f"{folder}: warning: no Python files to check in this folder (none found)\n")
