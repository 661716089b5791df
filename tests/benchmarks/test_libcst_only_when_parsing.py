"""libcst is imported only when something is parsed (issue 10).

``cgguard check`` decides on bytes and Python's own parser what libcst sees: a run
over files with no capture size, or whose functions hold a capture size but no
sink in the same scope, never imports libcst (its import alone costs about
100 ms); a file with a finding does. Checked in a fresh interpreter, as users run it.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

PROBE = (
    "import sys\n"
    "from cgguard.cli import main\n"
    "try:\n"
    "    main(['check', *sys.argv[1:]])\n"
    "except SystemExit:\n"
    "    pass\n"
    "print('LIBCST' if 'libcst' in sys.modules else 'NO-LIBCST')\n"
)

FILES = {
    "nothing": "def f(x):\n    return x + 1\n",
    "needle_no_sink": (
        "class Runner:\n"
        "    def sizes(self):\n"
        "        # the largest capture size bounds the token buffer\n"
        "        n = self.compilation_config.max_cudagraph_capture_size or 0\n"
        "        self.blocks_seen_total = 0\n"  # mentions blocks, but is no block count
        "        return [0] * (n + 1)\n"
    ),
    "needle_and_sink_in_different_functions": (
        "class Runner:\n"
        "    def a(self):\n"
        "        return self.compilation_config.max_cudagraph_capture_size > 8\n"
        "    def b(self):\n"
        "        self.cache_config.num_gpu_blocks_override = 4\n"
    ),
}
BUG = (
    "class Runner:\n"
    "    def f(self):\n"
    "        min_blocks = self.compilation_config.max_cudagraph_capture_size or 1\n"
    "        return min_blocks\n"
)


def _imports_libcst(tmp_path: Path, files: dict[str, str]) -> bool:
    for name, text in files.items():
        (tmp_path / f"{name}.py").write_text(text)
    out = subprocess.run(
        [sys.executable, "-c", PROBE, "--isolated", *sorted(f"{n}.py" for n in files)],
        cwd=tmp_path, capture_output=True, text=True, timeout=120, env={"CGGUARD_JOBS": "1", "PATH": ""},
    )
    last = out.stdout.strip().splitlines()[-1]
    assert last in ("LIBCST", "NO-LIBCST"), out.stdout + out.stderr
    return last == "LIBCST"


@pytest.mark.parametrize("name", sorted(FILES))
def test_nothing_to_parse_never_imports_libcst(tmp_path: Path, name: str) -> None:
    assert not _imports_libcst(tmp_path, {name: FILES[name]})


def test_a_file_with_a_finding_is_parsed_by_libcst(tmp_path: Path) -> None:
    assert _imports_libcst(tmp_path, {"bug": BUG, **FILES})
