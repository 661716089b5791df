"""`cgguard triage` output: a few lines of text, or one JSON document."""

from __future__ import annotations

import json

from cgguard.ops.triage.advice import Step
from cgguard.ops.triage.verdict import Verdict


def to_json(verdict: Verdict, steps: list[Step], note: str | None, error: str | None = None) -> str:
    document = {
        "verdict": verdict.kind,
        "exit_code": verdict.exit_code,
        "summary": verdict.summary,
        "vllm_version": verdict.version,
        "numbers": verdict.numbers,
        "evidence": [e.to_json() for e in verdict.evidence],
        "needs": verdict.needs,
        "advice": [s.to_json() for s in steps],
        "advice_note": note,
        "error": error,
    }
    return json.dumps(document, indent=2) + "\n"


def to_text(verdict: Verdict, steps: list[Step], note: str | None) -> str:
    lines = [verdict.summary]
    if verdict.evidence:
        lines.append("Evidence:")
        for e in verdict.evidence:
            where = f"line {e.line}" if e.line is not None else "command line"
            process = f"({e.process}) " if e.process else ""
            lines.append(f"  {where}: {e.what}" + (f": {process}{e.text}" if e.text else ""))
    if verdict.needs:
        lines.append(f"To tell, the log needs {verdict.needs}.")
    if steps:
        on = f" on vLLM {verdict.version}" if verdict.version else ""
        lines.append(f"What to do{on}, the fix first, then by cost:")
        for n, s in enumerate(steps, 1):
            source = f" ({s.evidence})" if s.evidence else ""
            lines.append(f"  {n}. {s.action}: {s.effect}. Cost: {s.cost}.{source}")
    if note:
        lines.append(note)
    return "\n".join(lines) + "\n"
