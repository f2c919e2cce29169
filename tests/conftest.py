"""Shared fixtures: the repository root and the shared reference data."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"


@pytest.fixture(scope="session")
def repo() -> Path:
    return REPO


@pytest.fixture(scope="session")
def shared() -> Path:
    if not SHARED.exists():
        pytest.skip("../shared is not present in this checkout")
    return SHARED
