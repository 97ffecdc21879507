"""Fixtures for the core tests: a fake `runai` (tests/fakes.py) and a client pointed at it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from runai_tui.runai.backend import Backend
from runai_tui.runai.client import RunaiClient
from tests.fakes import FakeRunai, fake_runai


@pytest.fixture
def make_fake(tmp_path: Path) -> Callable[..., FakeRunai]:
    """make_fake([rule(...), ...], default=None) -> FakeRunai under this test's tmp_path."""

    def make(
        rules: list[dict[str, Any]], default: dict[str, Any] | None = None, **extra: Any
    ) -> FakeRunai:
        return fake_runai(tmp_path, rules, default, **extra)

    return make


@pytest.fixture
def client_for() -> Callable[..., RunaiClient]:
    """client_for(fake, project=None, timeout=20.0) -> RunaiClient running that fake."""

    def make(fake: FakeRunai, project: str | None = None, timeout: float = 20.0) -> RunaiClient:
        return RunaiClient(Backend("runai", [str(fake.path)]), project=project, timeout=timeout)

    return make
