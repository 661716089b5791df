"""``cgguard doctor``: is an installed vLLM, or a source tree, affected, and which models
take the per-token path. The diagnosis (``diagnosis``), the fix plan for a tree
(``fix_plan``), the runtime guard's status (``guard_status``) and the command (``cli``).
"""
