"""What a vLLM release decides and computes, read from its source or its rules: which
runner a model gets, its defaults, model configs, memory arithmetic and how it groups a
hybrid model's layers. The commands (``doctor``, ``estimate``, ``triage``) build on it;
it imports none of them.
"""
