"""Fixtures shared by the static half's tests."""

from __future__ import annotations

import os

import pytest

from cgguard.static.core import project


@pytest.fixture
def project_reads(monkeypatch) -> list[str]:
    """The files this process reads as a project's bytes (``project.read_bytes``, which a
    project index takes when it is made), by name, in order."""
    read: list[str] = []
    real = project.read_bytes

    def counted(path: str) -> bytes | None:
        read.append(os.path.basename(path))
        return real(path)

    monkeypatch.setattr(project, "read_bytes", counted)
    return read
