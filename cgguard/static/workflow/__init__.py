"""The workflow around the rules: configuration, file discovery, suppressions,
selection, output formats, rule documentation and diffs.
"""
