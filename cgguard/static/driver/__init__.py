"""The driver: decides what the rules see and runs them fast.

One file's text goes one way through its stages, each a module with one job, called
in turn by :mod:`.check`: :mod:`.prefilter` (bytes) -> :mod:`.screen` (text and
Python's tree: what libcst parses) -> :mod:`.parse` (libcst) -> :mod:`.analyse` (the
rules) -> :mod:`.report` (findings) -> :mod:`.fixer` (fixes, re-parsed, written
atomically). :mod:`.project` follows flows across a project's modules with the same
stages, over the index of its modules (:mod:`.projectindex`); :mod:`.run` maps files over them (:mod:`.parallel`: one or two processes).
Entry points: :func:`.check.check_source` (one text) and :mod:`.run` (paths).
"""
