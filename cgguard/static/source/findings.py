"""What a check produces: findings, each with an optional fix made of text edits."""

from __future__ import annotations

from dataclasses import dataclass, field

# How safe a fix is to apply (ruff's terms). "safe" fixes are applied by `cgguard fix`;
# "display-only" fixes are shown as a suggestion and never applied.
SAFE = "safe"
UNSAFE = "unsafe"
DISPLAY_ONLY = "display-only"


@dataclass(frozen=True)
class TextEdit:
    start: int  # character offsets into the source text
    end: int
    text: str


@dataclass(frozen=True)
class Fix:
    applicability: str
    description: str
    edits: tuple[TextEdit, ...]


@dataclass(frozen=True)
class Finding:
    path: str
    line: int  # 1-based
    col: int  # 1-based, in characters
    end_line: int
    end_col: int  # 1-based, exclusive
    code: str
    message: str
    fix: Fix | None = None
    # Physical lines of the statement the finding belongs to (suppressions may sit
    # on any of them).
    stmt_lines: tuple[int, int] = field(default=(0, 0), compare=False)

    def sort_key(self):
        return (self.path, self.line, self.col, self.code)


@dataclass(frozen=True)
class FileError:
    """A file that could not be checked, with one line saying why."""

    path: str
    reason: str
