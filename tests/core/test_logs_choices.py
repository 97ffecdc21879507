"""Ranks to pods, durations, selectors and the logs flags per CLI generation: the pure parts of
`logs --rank/--since/--previous` and the bulk verbs (the processes are driven in tests/local)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from runai_tui.runai.bulk import Selector, select
from runai_tui.runai.installed import Capabilities, CobraHelp, check_logs_flags
from runai_tui.runai.pod_logs import pod_for_rank, pods_by_rank, waiting_on
from runai_tui.shapes.cli_generations import parse_override
from runai_tui.shapes.errors import UsageError
from runai_tui.shapes.models import Job, JobDetail, Phase, Pod
from runai_tui.util.duration import go_duration, parse_duration


def detail(*pods: str, phase: Phase = Phase.RUNNING, requested: int | None = None) -> JobDetail:
    job = Job("j", phase, requested_pods=requested)
    return JobDetail(job, [Pod(name, Phase.RUNNING) for name in pods])


def test_ranks_follow_the_operator() -> None:
    with_master = detail("j-worker-1", "j-master-0", "j-worker-0")
    assert pods_by_rank(with_master) == {0: "j-master-0", 1: "j-worker-0", 2: "j-worker-1"}
    assert pod_for_rank(detail("j-worker-0", "j-worker-1"), 1) == "j-worker-1"  # --no-master
    # Nothing listed yet (Pending on some CLIs): the Kubeflow names from the pod count.
    assert pod_for_rank(detail(requested=3), 2) == "j-worker-1"
    with pytest.raises(
        UsageError, match=r"rank 3 is out of range: job 'j' has 3 pod\(s\) \(ranks 0-2\)"
    ):
        pod_for_rank(with_master, 3)


def test_waiting_on_says_what_is_pending() -> None:
    pending = JobDetail(Job("j", Phase.PENDING), [Pod("j-master-0", Phase.PENDING)])
    assert waiting_on(pending, None) == "pod j-master-0 is Pending"
    assert waiting_on(JobDetail(Job("j", Phase.PENDING)), "j-master-0") == "job j is Pending"
    assert waiting_on(detail("j-master-0"), None) is None
    assert (
        waiting_on(JobDetail(Job("j", Phase.FAILED), [Pod("j-master-0", Phase.PENDING)]), None)
        is None
    )


def test_durations() -> None:
    assert parse_duration("1h30m", "--since") == 5400
    assert parse_duration("7d", "--older-than") == 7 * 86400
    assert go_duration(parse_duration("2d", "--since")) == "48h"
    assert go_duration(300) == "5m" and go_duration(45) == "45s" and go_duration(1.5) == "1.5s"
    for bad in ("", "7", "d7", "1x", "-1s"):
        with pytest.raises(UsageError, match="is not a duration"):
            parse_duration(bad, "--since")


def test_selector_by_glob_status_and_age() -> None:
    now = datetime(2026, 1, 10, tzinfo=timezone.utc)
    jobs = [
        Job("sweep-1", Phase.COMPLETED, created=now - timedelta(days=8)),
        Job("sweep-2", Phase.COMPLETED, created=now - timedelta(days=1)),
        Job("sweep-3", Phase.RUNNING, created=now - timedelta(days=9)),
        Job("other", Phase.COMPLETED, created=now - timedelta(days=9)),
        Job("sweep-4", Phase.COMPLETED),  # no creation time: never old enough
    ]
    week = Selector("sweep-*", ("Completed",), 7 * 86400)
    assert select(jobs, week, now) == ["sweep-1"]
    assert select(jobs, Selector("sweep-*", ("succeeded",)), now) == [
        "sweep-1",
        "sweep-2",
        "sweep-4",
    ]
    assert select(jobs, Selector("nothing-*"), now) == []


def test_logs_flags_from_help_override_or_unknown() -> None:
    caps = Capabilities(["/x/runai"])
    caps.helps["logs"] = CobraHelp(frozenset({"--since", "--follow"}), frozenset())
    with pytest.raises(UsageError, match=r"logs --previous is not in the installed runai: "):
        check_logs_flags(["--since", "--previous"], caps)
    check_logs_flags(["--since"], caps)
    check_logs_flags(["--previous", "--since"], Capabilities(["/x"], parse_override("2.18")))
    check_logs_flags(["--previous"], Capabilities(["/x"]))  # unknown: let runai answer
