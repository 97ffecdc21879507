"""Describe's raw view in the TUI shows the job's document with its secrets redacted, as the
bundle does (runai_tui/util/redaction.py)."""

from __future__ import annotations

import json

from runai_tui.shapes.models import Job, JobDetail, Phase
from runai_tui.tui.screens.describe import raw_lines
from runai_tui.util.redaction import REDACTED, SHORT
from tests import secret_corpus as corpus


def test_the_raw_view_shows_no_secret() -> None:
    env = [f"{k}={v}" for k, v in corpus.ENV.items()]
    raw = {"name": "leaky", "spec": {"flags": {"environment-variable": env},
           "submitArgv": ["runai", "--command", "--", "sh", "-c", f"echo {corpus.AWS_KEY_ID}"]}}  # fmt: skip
    lines = raw_lines(JobDetail(Job("leaky", Phase.FAILED), raw=raw))
    text = "\n".join(lines)
    assert not [s for s in corpus.SECRET_VALUES if s in text]
    shown = json.loads(text)["spec"]["flags"]["environment-variable"]
    assert f"HF_TOKEN={REDACTED}" in shown and f"API_KEY={SHORT}" in shown
    assert "NCCL_IB_PKEY=0" in shown
