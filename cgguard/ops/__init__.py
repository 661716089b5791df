"""Operator tools: ``cgguard doctor`` (is my vLLM affected?) and ``cgguard estimate``
(how much memory does the profiling KV cache take for my model?).

Neither imports vLLM or torch: doctor reads package metadata and lints source
files, estimate is arithmetic over a model's ``config.json``.

``release`` knows what a vLLM release decides and computes; ``doctor``, ``estimate``
and ``triage`` are the commands, each built on it (it imports none of them).
"""
