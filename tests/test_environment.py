"""The test environment is consistent: pip finds no version conflict in it (issue 16).

Fixit 2.2.1 pins click<8.2 while vLLM's huggingface_hub needs a newer click, so
Fixit's tests run in .venv-fixit (scripts/test-fixit) and this environment holds no
Fixit. Packages scripts/test removes on purpose (torchvision, torchaudio, torchcodec,
which break `import vllm` beside the CPU torch) may still be named as missing: only
"..., but you have ..." lines, a requirement an installed version fails, are conflicts.
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
    # Anything else pip names is one of the packages removed on purpose.
    missing = [line for line in lines if "which is not installed" in line]
    removed = ("torchvision", "torchaudio", "torchcodec")
    assert all(line.split(" requires ")[1].split(",")[0].lower() in removed for line in missing), missing
