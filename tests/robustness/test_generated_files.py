"""Generated files must not make a run hang or its output unreadable.

Generated code holds what hand-written code rarely does: expressions thousands of
operands long, thousands of functions or findings in one file. A message must not
grow with the code it quotes, and the indentation search, the per-finding offsets
and the diff must stay linear. A subprocess timeout turns quadratic work into a
failure instead of a stuck run.
"""

from __future__ import annotations

import pytest

from cgguard.static.driver.run import check_text
from tests.robustness.conftest import cgguard


@pytest.mark.parametrize("operands", [2_000, 20_000])
def test_finding_message_stays_one_readable_line(operands):
    text = ("class R(GPUModelRunner):\n    def f(self):\n        min_blocks = "
            "self.compilation_config.max_cudagraph_capture_size" + " or 1" * operands + "\n"
            "        self.cache_config.num_gpu_blocks_override = min_blocks\n")  # the count leaves the function: a finding
    result = check_text(text, "runner.py")  # the findings as reported, before any fix
    if operands > 2_000 and result.error is not None:
        # libcst nests `a or b or ...` one level per operand; where the interpreter's own
        # C recursion limit stops that (Python 3.12+), the file is one error line, no crash.
        assert result.error.reason == "too deeply nested to parse"
        return
    assert result.findings
    assert all(len(f.message) <= 140 for f in result.findings)  # about 120, whatever the code


def test_many_top_level_functions_mentioning_the_capture_size_check_in_linear_time(tmp_path):
    target = tmp_path / "generated.py"
    target.write_text("".join(f"def f{i}(self):\n    return self.capture_sizes[{i}]\n" for i in range(8_000)))
    result = cgguard("check", str(target), timeout=15)  # quadratic work would not end in time
    assert result.returncode == 0


def test_a_file_with_many_findings_is_fixed_in_linear_time(tmp_path):
    target = tmp_path / "generated.py"
    source = "class MyRunner(GPUModelRunner):\n" + "".join(
        f"    def f{i}(self):\n"
        "        min_blocks = self.compilation_config.max_cudagraph_capture_size or 1\n"
        "        self.cache_config.num_gpu_blocks_override = min_blocks\n" for i in range(3_000))
    target.write_text(source)
    # A guard against a hang, not a speed target: 3,000 functions in one class are parsed
    # whole, and quadratic work would take hours.
    diff = cgguard("fix", "--diff", str(target), timeout=180)
    assert diff.returncode == 1, diff.stderr  # it would change the file
    assert diff.stdout.count("\n+            min(self.max_num_reqs, ") == 3_000
    assert target.read_text() == source
    result = cgguard("fix", str(target), timeout=180)
    assert result.returncode == 0 and "Fixed 3000 findings." in result.stdout


# ---- cost grows linearly with the findings and with the file ------------------------------

_FINDING_FUNCTION = (
    "def plugin_profiling_blocks_{i}(vllm_config):\n"
    "    compilation_config = vllm_config.compilation_config\n"
    "    num_blocks = compilation_config.max_cudagraph_capture_size or 16\n"
    "    vllm_config.cache_config.num_gpu_blocks_override = num_blocks\n\n\n"
)


def _cost(*args: str) -> tuple[float, int]:
    """(CPU seconds, peak memory in KiB) of one `cgguard ARGS` run, measured by a fresh
    parent that runs nothing else (so the peak is that run's own)."""
    import json
    import subprocess
    import sys

    probe = (
        "import json, resource, subprocess, sys\n"
        "proc = subprocess.run([sys.executable, '-m', 'cgguard', *sys.argv[1:]], capture_output=True)\n"
        "use = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
        "print(json.dumps([proc.returncode, use.ru_utime + use.ru_stime, use.ru_maxrss]))\n"
    )
    out = subprocess.run([sys.executable, "-c", probe, *args], capture_output=True, text=True,
                         timeout=600, check=True).stdout
    code, cpu, peak = json.loads(out)
    assert code in (0, 1), (args, code)
    return cpu, peak


def test_check_and_diff_cost_grows_linearly_with_the_findings_in_one_file(tmp_path):
    # 4 times the findings: linear work costs at most about 4 times as much (less, with the
    # start-up), quadratic work 16 times. CPU time, not wall time: other work on the
    # machine does not count.
    costs = {}
    for n in (250, 1_000):
        target = tmp_path / f"generated_{n}.py"
        target.write_text("".join(_FINDING_FUNCTION.format(i=i) for i in range(n)))
        costs[n] = {command: _cost(*command.split(), str(target)) for command in ("check", "fix --diff")}
    for command in ("check", "fix --diff"):
        (cpu_small, rss_small), (cpu_large, rss_large) = costs[250][command], costs[1_000][command]
        assert cpu_large < 6 * cpu_small, (command, costs)
        assert rss_large < 6 * rss_small, (command, costs)


def test_memory_grows_linearly_with_a_big_file_holding_one_finding(tmp_path):
    peaks = {}
    for lines in (25_000, 100_000):
        target = tmp_path / f"big_{lines}.py"
        target.write_text("".join(f"x_{i} = {i}\nif x_{i}:\n    y = x_{i} + 1\n\n" for i in range(lines // 4))
                          + _FINDING_FUNCTION.format(i=0))
        peaks[lines] = _cost("check", str(target))[1]
    assert peaks[100_000] < 6 * peaks[25_000], peaks  # 4 times the lines; quadratic: 16 times
