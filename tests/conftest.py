"""Shared fixtures: the repository root, the shared reference data, and one-board routers of validation."""

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


@pytest.fixture(scope="session")
def h100_board():
    """One HGX H100 board as `fabric-emu validate` builds it (preset ``hgx-h100``, no overrides)."""
    from collectives.validate import _router
    return _router("hgx-h100", {})


@pytest.fixture(scope="session")
def b200_board():
    """One HGX B200 board as `fabric-emu validate` builds it."""
    from collectives.validate import _router
    return _router("hgx-b200", {})
