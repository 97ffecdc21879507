"""The one submit sequence behind `runai-tui submit` and the submit screen: overrides, job name,
project, the installed CLI's flags, then the submit (tests/core/test_generations.py drives the
same through the installed command)."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from runai_tui.errors import UsageError
from runai_tui.profiles import ProfileError, ProfileStore
from runai_tui.runai import submission
from runai_tui.runai.capabilities import Capabilities
from runai_tui.runai.client import RunaiClient
from runai_tui.runai.generations import parse_override
from tests.fakes import FakeRunai, rule

RUNAI_TUI = shutil.which("runai-tui", path=str(Path(sys.executable).parent)) or "runai-tui"
SUBMITTED = rule("pytorch", "submit", stdout="Creating pytorch training try-2...\n")


def submits(fake: FakeRunai) -> list[list[str]]:
    return [c for c in fake.calls() if c[:3] == ["training", "pytorch", "submit"]]


def test_prepare_is_what_the_cli_dry_run_prints() -> None:
    base = ProfileStore().load("retinanet-tcp")
    prepared = submission.prepare(
        base, ["workers=3", "env.EXTRA=1"], name="try-2", project="team-b", project_explicit=True
    )
    assert prepared.profile.workers == 3 and prepared.profile.env["EXTRA"] == "1"
    assert prepared.argv[:5] == ["runai", "training", "pytorch", "submit", "try-2"]
    assert prepared.argv[prepared.argv.index("-p") + 1] == "team-b"

    dry = subprocess.run(
        [RUNAI_TUI, "-p", "team-b", "submit", "--profile", "retinanet-tcp", "--name", "try-2",
         "--set", "workers=3", "--set", "env.EXTRA=1", "--dry-run", "--json"],
        capture_output=True, text=True, timeout=60, env=os.environ,
    )  # fmt: skip
    assert dry.returncode == 0, dry.stderr
    assert json.loads(dry.stdout) == {"argv": prepared.argv}


def test_prepare_rejects_before_anything_runs() -> None:
    base = ProfileStore().load("retinanet-tcp")
    with pytest.raises(ProfileError, match="workers"):
        submission.prepare(base, ["workers=two"])
    with pytest.raises(UsageError):
        submission.prepare(base, name="Not_A_Label")
    # A field the installed runai lacks, once its generation is known (the form checks as
    # you type); unknown, the field passes until submit asks.
    late = submission.prepare(base, ["preemptibility=preemptible"])
    assert late.profile.preemptibility == "preemptible"
    early = Capabilities(["/x/runai"], parse_override("2.20.1"), "env RUNAI_TUI_RUNAI_CLI")
    with pytest.raises(ProfileError, match="--preemptibility is not in the installed runai: "):
        submission.prepare(base, ["preemptibility=preemptible"], cli=early)


def test_submit_checks_the_installed_cli_then_submits(
    make_fake: Callable[..., FakeRunai], client_for: Callable[..., RunaiClient]
) -> None:
    base = ProfileStore().load("retinanet-tcp")
    prepared = submission.prepare(base, ["preemptibility=preemptible"], name="try-2")

    old = make_fake([SUBMITTED], cli="2.18")
    with pytest.raises(ProfileError, match="preemptibility"):
        submission.submit(client_for(old), prepared)
    assert not submits(old)

    warnings: list[str] = []
    unknown = make_fake(
        [rule("--help", stdout="?\n"), rule("version", stdout="development build\n"), SUBMITTED]
    )
    result = asyncio.run(submission.asubmit(client_for(unknown), prepared, warn=warnings.append))
    assert result.name == "try-2"
    assert submits(unknown) == [prepared.argv[1:]]
    assert len(warnings) == 1 and "every flag is tried" in warnings[0]


def test_new_settings_are_checked_and_the_master_copies_too() -> None:
    base = ProfileStore().load("retinanet-tcp")
    prepared = submission.prepare(
        base,
        [
            "tolerations=[{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]",
            "env_secrets.WANDB_API_KEY=wandb,key=api-key",
            "supplemental_groups=[1001, 1002]",
            "termination_grace_period=120s",
            "master_gpus=1",
        ],
    )
    argv = prepared.argv
    assert argv[argv.index("--toleration") + 1] == (
        "operator=Exists,key=nvidia.com/gpu,effect=NoSchedule"
    )
    assert argv[argv.index("--env-secret") + 1] == "WANDB_API_KEY=wandb,key=api-key"
    assert argv[argv.index("--supplemental-groups") + 1] == "1001,1002"
    # master_gpus is a master setting: the workers' NIC and NCCL_* go to the master as well.
    assert "--master-extended-resource" in argv
    assert "NCCL_SOCKET_IFNAME=net1" in argv[argv.index("--master-environment-variable") :]
    for bad in ("termination_grace_period=soon", "supplemental_groups=[a]", "priority=urgent"):
        with pytest.raises(ProfileError):
            submission.prepare(base, [bad])
    # 2.18-2.20 spell the master's environment --master-environment: refused before submit.
    early = Capabilities(["/x/runai"], parse_override("2.19"), "env RUNAI_TUI_RUNAI_CLI")
    with pytest.raises(ProfileError) as caught:
        submission.prepare(base, ["master_gpus=1"], cli=early)
    assert "--master-environment-variable (the master gets it as master settings are set)" in (
        str(caught.value)
    )
