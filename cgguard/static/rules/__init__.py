"""The rules: what they recognise (vocabulary), how values flow to block counts
(flow), the fix each finding carries (edits) and its message.

Pure analysis of one parsed scope; knows nothing of files, config or output.
"""
