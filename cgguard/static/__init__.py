"""The static half: rules CGG001/CGG002 over Python source, and their fixes.

Never imports vLLM, torch or libcst. Entry points: :func:`cgguard.static.scan.check_source`
(one source text) and :mod:`cgguard.static.run` (paths).
"""
