"""The driver: decides what the rules see and runs them fast.

Byte prefilter, function cutting, parsing, parallel map over files, applying
fixes safely (re-parse, atomic write). Entry points: :func:`scan.check_source`
(one text) and :mod:`run` (paths).
"""
