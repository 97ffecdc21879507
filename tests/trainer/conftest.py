"""Trainer tests: one intra-op thread for in-process training (2 busy cores oversubscribe badly),
and the test process's own signal handlers back after each test."""

from __future__ import annotations

import signal
from collections.abc import Iterator

import pytest
import torch


@pytest.fixture(autouse=True)
def one_torch_thread():
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(previous)


@pytest.fixture(autouse=True)
def signal_handlers_restored() -> Iterator[None]:
    """A run in this process installs the trainer's SIGTERM and SIGINT handlers (a stop
    request); left in place, a later test's Ctrl-C in this worker would only set its flag."""
    saved = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGINT)}
    yield
    for sig, handler in saved.items():
        signal.signal(sig, handler)
