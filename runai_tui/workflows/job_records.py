"""A job's trainer records, read from its pods' logs: every rank's latest figures (`ranks`) and
every record of every pod as flat rows (`metrics`, for spreadsheets and notebooks).

Core: the client is a parameter (anything with `adescribe` and `stream_logs`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field

from runai_tui.knowledge.records.progress import TrainingProgress, parse_metric_line
from runai_tui.shapes.json_types import JSONObject
from runai_tui.shapes.models import master_pod
from runai_tui.trainer_flags import records
from runai_tui.workflows.sources import LogSource, StreamsLogs

# Columns every metrics row starts with; the records' own keys follow in order of appearance.
LEAD_COLUMNS = ("pod", "rank", records.KIND, "step", "epoch", "time")
RANK_COLUMNS = tuple(f"rank_{name}" for name in records.RANK_FIGURES)


@dataclass
class PodRecords:
    pod: str
    records: list[JSONObject] = field(default_factory=list)


async def read_pod_records(client: LogSource, name: str, pod: str) -> PodRecords:
    """Every trainer record in one pod's log (the whole log, not followed)."""
    out = PodRecords(pod)

    def keep(line: str) -> None:
        record = parse_metric_line(line)
        if record is not None:
            out.records.append(record)

    await feed_pod_log(client, name, pod, keep)
    return out


async def feed_pod_log(
    client: StreamsLogs,
    name: str,
    pod: str | None,
    feed: Callable[[str], object],
    tail: int | None = None,
) -> None:
    """Each line of one pod's log (not followed; its last `tail` lines when given; None: runai's
    choice of pod) to `feed`, the stream closed however the read ends."""
    stream = client.stream_logs(name, pod=pod, follow=False, tail=tail)
    try:
        async for line in stream:
            feed(line)
    finally:
        with contextlib.suppress(Exception):
            await stream.aclose()


async def read_job_records(client: LogSource, name: str) -> list[PodRecords]:
    """Every pod's records, pod by pod (describe raises for an unknown job)."""
    detail = await client.adescribe(name)
    return [await read_pod_records(client, name, p.name) for p in detail.pods]


async def read_progress(
    client: StreamsLogs, name: str, *, pod: str | None = None, tail: int | None = None
) -> TrainingProgress:
    """A job's log (one pod's, not followed; its last `tail` lines when given) read into its
    progress: the one reading of a log into a TrainingProgress. Raises RunaiError."""
    progress = TrainingProgress()
    await feed_pod_log(client, name, pod, progress.feed, tail)
    return progress


async def master_progress(client: LogSource, name: str) -> tuple[str | None, TrainingProgress]:
    """The master pod's name and its progress (every rank's latest figures in `.ranks`)."""
    detail = await client.adescribe(name)
    pod = master_pod(detail.pods)
    if pod is None:
        return None, TrainingProgress()
    return pod.name, await read_progress(client, name, pod=pod.name)


def metric_rows(pods: list[PodRecords]) -> list[dict[str, object]]:
    """One row per record and rank: a train record with every rank's figures gives a row per
    rank (its `rank_step_time`, `rank_data_time`, `rank_img_s`); any other record one row, rank 0
    (the rank that writes them). Nested values other than "ranks" are kept as they are."""
    rows: list[dict[str, object]] = []
    for pod in pods:
        for record in pod.records:
            base = {k: v for k, v in record.items() if k != "ranks"}
            ranks = record.get("ranks")
            columns = (
                [ranks.get(n) for n in records.RANK_FIGURES] if isinstance(ranks, dict) else []
            )
            size = max((len(c) for c in columns if isinstance(c, list)), default=0)
            if not size:
                rows.append({"pod": pod.pod, "rank": 0, **base})
                continue
            for rank in range(size):
                figures = {
                    col: (c[rank] if isinstance(c, list) and rank < len(c) else None)
                    for col, c in zip(RANK_COLUMNS, columns, strict=True)
                }
                rows.append({"pod": pod.pod, "rank": rank, **base, **figures})
    return rows


def metric_columns(rows: list[dict[str, object]]) -> list[str]:
    """The CSV header: the lead columns, then every other key in order of first appearance."""
    columns = list(LEAD_COLUMNS)
    for row in rows:
        for key in row:
            if key not in columns:
                columns.append(key)
    return columns
