"""Read a vLLM log as a stream and hand on only the lines triage looks at.

A log can be gigabytes of request lines, so the reader never holds more than one
chunk and one line: it scans each chunk with one regular expression for the few
phrases triage reads, and decodes only the lines that hold one. Input that is not
a text log (a NUL byte, bytes that are not UTF-8) stops it with one line saying
where, as a :class:`LogError`.

Each line handed on is cleaned of what terminals, log collectors and vLLM's
process decoration put around a message: ANSI colours; whatever a collector put
before vLLM's own line (``2026-04-19 10:01:02.123 | ``, ``api-1  | ``,
``[pod/name/container] ``, journald's ``Dec  4 00:47:22 host unit[7]: ``, in any
combination and mixed in one file); ``(EngineCore_DP0 pid=207)``; and vLLM's
``LEVEL MM-DD HH:MM:SS [file.py:N]``. The collector's prefix is learned from the
lines where vLLM's part is recognisable (a process prefix or vLLM's header):
what comes before it is the prefix, kept as a pattern with its numbers left open,
and stripped from the lines that have no such mark (a traceback written to
standard error). Where no learned prefix fits, the common collectors' shapes are
tried.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import BinaryIO

CHUNK_BYTES = 1 << 20
# Longer lines are cut here (vLLM's config line is a few KiB; nothing it logs
# that triage reads comes near this).
MAX_LINE_BYTES = 1 << 16

# A piece of every phrase triage reads (``facts``); other lines are skipped
# undecoded. Each piece starts with a character that is rare in the request lines
# that fill long logs, which keeps the scan fast.
_WANTED = re.compile(
    rb"V1 LLM engine|LLM API server|-default args|_num_seqs|Setting attention|Overriding num_gpu"
    rb"|CUDA|KV cache|_memory_bytes|Graph capturing|\(profile, create|Application startup"
    rb"|Traceback \(most recent|File \"|OutOfMemory|CPUAllocator|Error|Exception|Exit"
    rb"|EngineCore failed|Engine core initialization|_profiling|\(minimal_config"
)
# A line in vLLM's own format (its logger's "LEVEL MM-DD HH:MM:SS [file:N]"), or a
# traceback frame in vLLM's code: a traceback pasted alone is a vLLM log too.
_VLLM_LINE = re.compile(
    rb"(?:DEBUG|INFO|WARNING|ERROR|CRITICAL)\S* \S*\d\d-\d\d \d\d:\d\d:\d\d"
    rb"|File \"[^\"\n]*[/\\]vllm[/\\]"
)

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\[\d{1,2}(?:;\d{1,2})*m")
# Where vLLM's own part of a line begins: its process prefix (always with a pid)
# or its logger's header.
_ANCHOR = re.compile(
    r"\([A-Za-z][\w.-]*\s+pid=\d+(?:,?\s+[\w.-]+=[^\s),]*)*\)"
    r"|(?:DEBUG|INFO|WARNING|ERROR|CRITICAL)\s+\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?\s+\["
)
# Collectors' prefixes, for lines before any prefix is learned.
_COMPOSE = re.compile(r"^[\w.-]+\s+\|\s?")
_STAMP = re.compile(
    r"^\[?\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?\]?\s+(?:\|\s?)?"
)
_KUBECTL = re.compile(r"^\[[^\]\s/]+/[^\]\s]+\]\s")
_JOURNALD = re.compile(r"^[A-Z][a-z]{2} +\d{1,2} \d\d:\d\d:\d\d \S+ [^\s:\[]+(?:\[\d+\])?: ")
_COLLECTORS = (_COMPOSE, _STAMP, _KUBECTL, _JOURNALD)
MAX_PREFIXES = 64  # distinct prefixes learned (a pod or service each, say)
_PROCESS = re.compile(r"^\((?P<name>[A-Za-z][\w.-]*)(?P<ids>(?:,?\s+[\w.-]+=[^\s),]*)*)\)\s*")
_HEADER = re.compile(
    r"^(?:\S*\s)?(?P<level>DEBUG|INFO|WARNING|ERROR|CRITICAL)\s+\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?"
    r"\s+\[(?P<where>[^\]]*)\]\s?"
)


class LogError(Exception):
    """The input is not a text log triage can read: one line for the user."""


@dataclass(frozen=True)
class LogLine:
    number: int  # 1-based line number in the input
    process: str  # "EngineCore_DP0 pid=207", or "" for an undecorated line
    level: str | None  # vLLM's level when the line is in its format
    message: str  # the text after every prefix
    vllm_format: bool


class Prefixes:
    """The collector prefixes of one log, learned from its lines as they are read."""

    def __init__(self) -> None:
        self.learned: dict[str, re.Pattern[str]] = {}

    def learn(self, prefix: str) -> None:
        if len(self.learned) >= MAX_PREFIXES or len(prefix) > 200:
            return
        key = _generalize(prefix)
        if key not in self.learned:
            self.learned[key] = re.compile(key)

    def strip(self, text: str) -> str:
        """``text`` without the collector's prefix, learning it where vLLM's part shows."""
        m = _ANCHOR.search(text)
        if m:
            if m.start():
                self.learn(text[: m.start()])
            return text[m.start() :]
        longest = 0
        for pattern in self.learned.values():
            found = pattern.match(text)
            if found and found.end() > longest:
                longest = found.end()
        if longest:
            return text[longest:]
        for _ in range(4):  # nothing learned fits: the common shapes, in any order
            before = text
            for shape in _COLLECTORS:
                text = shape.sub("", text, count=1)
            if text == before:
                break
        return text


def _generalize(prefix: str) -> str:
    """A prefix as a pattern: its numbers (time stamps, pids, replica numbers) and the
    padding inside it left open, the rest as written."""
    body = prefix.rstrip()
    parts = []
    for n, piece in enumerate(re.split(r"(\d+| {2,}|\t+)", body)):
        if n % 2 == 0:  # text between numbers and padding
            parts.append(re.escape(piece))
        else:
            parts.append(r"\d+" if piece[0].isdigit() else r"\s+")
    return "".join(parts) + re.escape(prefix[len(body) :])


def clean(text: str, prefixes: Prefixes | None = None) -> tuple[str, str | None, str]:
    """(process, level, message) of one line of a log, prefixes and colours removed.

    ``prefixes`` carries what earlier lines of the same log taught about its
    collector's prefix (a fresh one for a line read alone)."""
    text = _ANSI.sub("", text).rstrip("\r\n")
    text = (prefixes or Prefixes()).strip(text)
    process = ""
    m = _PROCESS.match(text)
    if m:
        ids = " ".join(part.strip(", ") for part in m.group("ids").split())
        process = f"{m.group('name')} {ids}".strip()
        text = text[m.end() :]
    m = _HEADER.match(text)
    if m:
        return process, m.group("level"), text[m.end() :]
    return process, None, text


def _line_at(data: bytes, offset: int) -> int:
    return data.count(b"\n", 0, offset) + 1


def _check_text(region: bytes, first_line: int, name: str, at_end: bool) -> bytes:
    """``region`` when it is UTF-8 text; a cut character at the very end of the
    input (``head -c``) is dropped. Anything else raises :class:`LogError`."""
    nul = region.find(b"\0")
    if nul >= 0:
        what = (
            "UTF-16 text"
            if region[:2] in (b"\xff\xfe", b"\xfe\xff") and first_line == 1
            else "binary data"
        )
        raise LogError(
            f"{name}: {what} (a NUL byte on line {first_line + _line_at(region, nul) - 1}), "
            "not a UTF-8 text log"
        )
    try:
        region.decode("utf-8")
        return region
    except UnicodeDecodeError as exc:
        if at_end and exc.reason == "unexpected end of data":
            return region[: exc.start]
        line = first_line + _line_at(region, exc.start) - 1
        raise LogError(
            f"{name}: line {line} is not UTF-8 (byte {region[exc.start]:#04x}): mixed or "
            "other encodings; convert the log to UTF-8 (e.g. iconv) and run again"
        ) from None


def _char_boundary(data: bytes, limit: int) -> bytes:
    """``data`` cut to at most ``limit`` bytes without splitting a UTF-8 character."""
    if len(data) <= limit:
        return data
    cut = limit
    while cut > 0 and data[cut] & 0xC0 == 0x80:
        cut -= 1
    return data[:cut]


def _skip_cut_start(chunk: bytes) -> bytes:
    """A log cut from its start (``tail -c``) may begin inside a character."""
    n = 0
    while n < min(3, len(chunk)) and chunk[n] & 0xC0 == 0x80:
        n += 1
    return chunk[n:]


def read_lines(stream: BinaryIO, name: str) -> Iterator[LogLine]:
    """The lines of ``stream`` that hold a phrase triage reads, cleaned.

    Raises :class:`LogError` for input that is not a UTF-8 text log, for empty
    input, and for input with no line in vLLM's log format. A line longer than
    :data:`MAX_LINE_BYTES` is read up to there; the rest of it is skipped unread.
    """
    carry = b""
    skipping = False  # inside the unread rest of an over-long line
    line_no = 1  # number of the first line in ``carry``
    seen_bytes = 0
    vllm_seen = False
    first = True
    prefixes = Prefixes()
    while True:
        chunk = stream.read(CHUNK_BYTES)
        at_end = not chunk
        if first:
            chunk, first = _skip_cut_start(chunk), False
        seen_bytes += len(chunk)
        if skipping and chunk:
            newline = chunk.find(b"\n")
            if newline < 0:
                continue
            chunk, skipping = chunk[newline:], False
        data = carry + chunk
        if at_end and not data:
            break
        cut = len(data) - 1 if at_end else data.rfind(b"\n")
        if cut < 0:
            if len(data) > MAX_LINE_BYTES:
                data, skipping = _char_boundary(data, MAX_LINE_BYTES), True
            carry = data
            continue
        region, carry = data[: cut + 1], data[cut + 1 :]
        if len(carry) > MAX_LINE_BYTES:
            carry, skipping = _char_boundary(carry, MAX_LINE_BYTES), True
        if region:
            region = _check_text(region, line_no, name, at_end)
            if not vllm_seen and _VLLM_LINE.search(region):
                vllm_seen = True
            yield from _wanted_lines(region, line_no, prefixes)
            line_no += region.count(b"\n")
        if at_end:
            break
    if seen_bytes == 0:
        raise LogError(f"{name}: empty input, no log to read")
    if not vllm_seen:
        raise LogError(
            f"{name}: no line in vLLM's log format (LEVEL MM-DD HH:MM:SS [file.py:N] ...) "
            f"and no traceback through vLLM's code in {seen_bytes:,} bytes: not a vLLM log"
        )


def _wanted_lines(region: bytes, line_no: int, prefixes: Prefixes) -> Iterator[LogLine]:
    """The lines of ``region`` (whole lines, the first numbered ``line_no``) that
    hold a wanted phrase, decoded and cleaned."""
    position, number = 0, line_no
    for m in _WANTED.finditer(region):
        if m.start() < position:
            continue  # a second phrase on a line already handed on
        start = region.rfind(b"\n", 0, m.start()) + 1
        end = region.find(b"\n", m.end())
        end = len(region) if end < 0 else end
        number += region.count(b"\n", position, start)
        raw = _char_boundary(region[start:end], MAX_LINE_BYTES)
        process, level, message = clean(raw.decode("utf-8", "replace"), prefixes)
        yield LogLine(number, process, level, message, level is not None)
        position = end
