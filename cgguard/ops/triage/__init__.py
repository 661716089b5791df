"""``cgguard triage``: is a vLLM start-up failure the per-token profiling KV cache?
Reading a log (``read``), its facts start by start (``facts``), the verdict
(``verdict``), what to do (``advice``), the output (``render``) and the command (``cli``).
"""
