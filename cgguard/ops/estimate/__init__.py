"""``cgguard estimate``: the memory the profiling KV cache takes for a model, per-token
against per-sequence. The release estimated (``release``), a hybrid model's block size
(``hybrid``) and the command (``cli``).
"""
