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
from typing import Any

import pytest

from runai_tui.profiles import ProfileError, ProfileStore, submission_record
from runai_tui.profiles.overrides import effective_sets
from runai_tui.runai import submission
from runai_tui.runai.backend import Backend, select_backend
from runai_tui.runai.client import RunaiClient
from runai_tui.runai.installed import Capabilities
from runai_tui.shapes.cli_generations import parse_override
from runai_tui.shapes.errors import UsageError
from tests.fakes import FakeRunai, rule

RUNAI_TUI = shutil.which("runai-tui", path=str(Path(sys.executable).parent)) or "runai-tui"
SUBMITTED = rule("pytorch", "submit", stdout="Creating pytorch training try-2...\n")
RUNAI = Backend("runai", ["runai"])  # runai by name, where the test runs nothing


def prepare(*args: Any, **kwargs: Any) -> submission.Submission:
    return submission.prepare(*args, **{"backend": RUNAI, **kwargs})


def submits(fake: FakeRunai) -> list[list[str]]:
    return [c for c in fake.calls() if c[:3] == ["training", "pytorch", "submit"]]


def test_prepare_is_what_the_cli_dry_run_prints() -> None:
    base = ProfileStore().load("retinanet-tcp")
    backend = select_backend(None)  # as the command below selects it: the same environment
    prepared = submission.prepare(
        base,
        ["workers=3", "env.EXTRA=1"],
        backend=backend,
        name="try-2",
        project="team-b",
        project_explicit=True,
    )
    assert prepared.profile.workers == 3 and prepared.profile.env["EXTRA"] == "1"
    assert prepared.argv[:5] == [*backend.executable, "training", "pytorch", "submit", "try-2"]
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
        prepare(base, ["workers=two"])
    with pytest.raises(UsageError):
        prepare(base, name="Not_A_Label")
    # A field the installed runai lacks, once its generation is known (the form checks as
    # you type); unknown, the field passes until submit asks.
    late = prepare(base, ["preemptibility=preemptible"])
    assert late.profile.preemptibility == "preemptible"
    early = Capabilities(["/x/runai"], parse_override("2.20.1"), "env RUNAI_TUI_RUNAI_CLI")
    with pytest.raises(ProfileError, match="--preemptibility is not in the installed runai: "):
        prepare(base, ["preemptibility=preemptible"], cli=early)


def record_in(argv: list[str]) -> tuple[int, str]:
    """Where the submission record's `--annotation` is in argv, and its value."""
    mark = submission_record.ANNOTATION + "="
    [at] = [i for i, w in enumerate(argv) if w == "--annotation" and argv[i + 1].startswith(mark)]
    return at, argv[at + 1].removeprefix(mark)


def without_record(argv: list[str]) -> list[str]:
    at, _ = record_in(argv)
    return argv[:at] + argv[at + 2 :]


def test_submit_checks_the_installed_cli_then_submits(
    make_fake: Callable[..., FakeRunai], client_for: Callable[..., RunaiClient]
) -> None:
    base = ProfileStore().load("retinanet-tcp")
    old = make_fake([SUBMITTED], cli="2.18")
    prepared = submission.prepare(
        base, ["preemptibility=preemptible"], backend=client_for(old).backend, name="try-2"
    )
    with pytest.raises(ProfileError, match="preemptibility"):
        submission.submit(client_for(old), prepared)
    assert not submits(old)

    warnings: list[str] = []
    unknown = make_fake(
        [rule("--help", stdout="?\n"), rule("version", stdout="development build\n"), SUBMITTED]
    )
    result = asyncio.run(submission.asubmit(client_for(unknown), prepared, warn=warnings.append))
    assert result.name == "try-2"
    [sent] = submits(unknown)
    assert len(warnings) == 1 and "every flag is tried" in warnings[0]
    # What runs is the dry run's argv, the executable and the submission record included.
    assert [c for c in unknown.executed() if "submit" in c] == [prepared.argv]
    assert prepared.argv[0] == str(unknown.path)
    record = submission_record.decode(record_in(sent)[1])
    assert record.profile == "retinanet-tcp" and record.sets == ("preemptibility=preemptible",)
    assert record.data["preemptibility"] == "preemptible" and "extends" not in record.data
    assert record == prepared.record and record.name == "try-2"


def test_a_submission_prepared_for_another_backend_is_not_sent(
    make_fake: Callable[..., FakeRunai], client_for: Callable[..., RunaiClient]
) -> None:
    # Its preview named another executable: sending it through this client would run a command
    # nobody was shown.
    fake = make_fake([SUBMITTED])
    prepared = prepare(ProfileStore().load("retinanet-tcp"), name="try-2")
    with pytest.raises(ValueError, match="prepared for runai, not for .*/runai"):
        submission.submit(client_for(fake), prepared)
    assert fake.executed() == []


def test_new_settings_are_checked_and_the_master_copies_too() -> None:
    base = ProfileStore().load("retinanet-tcp")
    prepared = prepare(
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
            prepare(base, [bad])
    # 2.18-2.20 spell the master's environment --master-environment: refused before submit.
    early = Capabilities(["/x/runai"], parse_override("2.19"), "env RUNAI_TUI_RUNAI_CLI")
    # The shipped profile recovers in place through --restart-policy, which 2.18-2.20 lack: the
    # submit goes without it (test_with_the_cli_known_...); asked for, it is refused in one line
    # that names the field; `--set FIELD=` drops the fields there.
    assert prepare(base, [], cli=early).warnings
    with pytest.raises(ProfileError) as caught:
        prepare(base, ["restart_policy=OnFailure"], cli=early)
    assert "restart_policy: --restart-policy is not in the installed runai" in str(caught.value)
    seed_recovery = ["restart_policy=", "master_restart_policy=", "backoff_limit="]
    with pytest.raises(ProfileError) as caught:
        prepare(base, ["master_gpus=1", *seed_recovery], cli=early)
    assert "--master-environment-variable (the master gets it as master settings are set)" in (
        str(caught.value)
    )


def test_a_recorded_submission_rebuilds_the_same_argv() -> None:
    base = ProfileStore().load("retinanet-local")
    first = prepare(base, ["workers=2"], name="run")
    record = submission_record.decode(record_in(first.argv)[1])
    rebuilt, unknown = submission_record.profile_of(record, "job run")
    assert unknown == ()
    again = prepare(rebuilt, ["large_shm=true"], name="run-2", prior_sets=record.sets)
    assert again.sets == ("workers=2", "large_shm=true")
    assert again.argv == prepare(base, ["workers=2", "large_shm=true"], name="run-2").argv


def test_a_record_keeps_one_set_per_field_and_names_its_parent_and_attempt() -> None:
    base = ProfileStore().load("retinanet-local")
    first = prepare(base, ["env.GLOO_SOCKET_IFNAME=nonexist0", "trainer.lr=0.01"], name="run")
    record = submission_record.decode(record_in(first.argv)[1])
    assert (record.parent, record.attempt, record.attempt_number) == (None, None, 1)
    rebuilt, _ = submission_record.profile_of(record, "job run")
    # Attempt after attempt, the same field set again: the record holds it once, the newest.
    sets, parent = record.sets, "run"
    for attempt in (2, 3, 4):
        again = prepare(rebuilt, ["env.GLOO_SOCKET_IFNAME=lo", "trainer.lr=0.02"],
                        name=f"run-{attempt}", prior_sets=sets, parent=parent,
                        attempt=attempt)  # fmt: skip
        kept = submission_record.decode(record_in(again.argv)[1])
        sets, parent = kept.sets, f"run-{attempt}"
        assert kept.sets == ("env.GLOO_SOCKET_IFNAME=lo", "trainer.lr=0.02")
        assert (kept.parent, kept.attempt) == (f"run-{attempt - 1}" if attempt > 2 else "run",
                                               attempt)  # fmt: skip
    # What the effective sets apply is what all of them applied.
    history = ["env.GLOO_SOCKET_IFNAME=nonexist0", "env={A: '1'}", "env.B=2",
               "trainer.lr=0.1", "args=[--lr, '0.3']", "trainer.batch_size=4"]  # fmt: skip
    kept_sets = effective_sets(history)
    assert kept_sets == ("env={A: '1'}", "env.B=2", "args=[--lr, '0.3']", "trainer.batch_size=4")
    assert prepare(base, list(kept_sets)).profile.data == prepare(base, history).profile.data
    with pytest.raises(ValueError, match="attempt is not a whole number"):
        submission_record.decode('{"v":2,"profile":"p","sets":[],"data":{},"attempt":"2"}')


@pytest.mark.parametrize("name", ["retinanet-tcp", "retinanet-rdma", "retinanet-local"])
def test_a_submit_argv_reads_back_into_the_profile_that_built_it(name: str) -> None:
    from runai_tui.knowledge.submitted import data_from_argv

    profile = ProfileStore().load(name)
    profile = prepare(profile, ["exclude_node=[node-7]", "cpu.request=2"]).profile
    argv = prepare(profile, name="x").argv
    again, _ = submission_record.profile_of(
        submission_record.Record(name, (), data_from_argv(argv)), "t"
    )
    assert without_record(prepare(again, name="x").argv) == without_record(argv)


def test_what_cannot_be_rebuilt_is_said_in_one_line() -> None:
    from runai_tui.knowledge.submitted import submitted
    from runai_tui.shapes.errors import RuntimeFailure
    from runai_tui.shapes.models import Job, JobDetail

    bare = JobDetail(Job("by-hand"), raw={"pods": [{"command": ["python", "x.py"]}]})
    with pytest.raises(RuntimeFailure, match="image, resources and env cannot be known"):
        submitted(bare)
    odd = JobDetail(Job("odd"), raw={"spec": {"submitArgv": ["runai", "training", "pytorch",
                                                               "submit", "odd", "--attach"]}})  # fmt: skip
    with pytest.raises(RuntimeFailure, match="--attach is not a profile field"):
        submitted(odd)
    broken = JobDetail(Job("b"), raw={"spec": {"annotations": {submission_record.ANNOTATION: "{"}}})
    with pytest.raises(RuntimeFailure, match="its submission record .* is unreadable"):
        submitted(broken)


def test_a_version_1_record_still_rebuilds() -> None:
    """Jobs submitted before the record named `--name` and left secrets out carry version 1: the
    whole resolved profile, `description` included."""
    from runai_tui.knowledge.submitted import submitted
    from runai_tui.shapes.models import Job, JobDetail

    base = ProfileStore().load("retinanet-tcp")
    data = {k: v for k, v in base.data.items() if k != "extends"}
    data["workers"] = 3
    old = json.dumps({"v": 1, "profile": "retinanet-tcp", "sets": ["workers=3"], "data": data})
    found = submitted(
        JobDetail(Job("old"), raw={"annotations": {submission_record.ANNOTATION: old}})
    )
    assert found.sets == ("workers=3",) and found.profile.workers == 3
    again = prepare(found.profile, name="old-2", prior_sets=found.sets)
    assert again.argv == prepare(base, ["workers=3"], name="old-2").argv


def test_the_masters_secret_is_left_out_too_and_put_back_by_path() -> None:
    sets = ["master_env.DB_PASSWORD=pw-xyz", "env.NCCL_DEBUG=WARN", "env.HF_TOKEN=${HF}"]
    prepared = prepare(ProfileStore().load("retinanet-tcp"), sets)
    record = prepared.record
    assert record is not None and record.redacted == ("master_env.DB_PASSWORD",)
    assert "pw-xyz" not in record.encode() and "pw-xyz" in " ".join(prepared.argv)
    # A reference to a secret (`${HF}`) is no secret: copied as given, as lint lets it pass.
    assert record.data["env"]["HF_TOKEN"] == "${HF}"
    assert record.sets == ("master_env.DB_PASSWORD=<redacted>", *sets[1:])
    again, unknown = submission_record.profile_of(
        record, "t", {"master_env.DB_PASSWORD": "pw-new", "env.NCCL_DEBUG": "not a secret"}
    )
    assert unknown == () and again.master_env == {"DB_PASSWORD": "pw-new"}
    assert again.env["NCCL_DEBUG"] == "WARN"  # only a redacted value is taken from elsewhere
    lacking, unknown = submission_record.profile_of(record, "t")
    assert unknown == ("master_env.DB_PASSWORD",) and "DB_PASSWORD" not in lacking.master_env


def test_with_the_cli_known_the_preview_goes_without_the_shipped_restart_policies() -> None:
    """What the TUI's form previews and submits (prepare with the CLI's capabilities): 2.19 goes
    without the shipped profile's restart policies and says so once; 2.25 keeps them."""
    seed = ProfileStore().load("retinanet-tcp")
    early = Capabilities(["runai"], parse_override("2.19"), "test")
    prepared = prepare(seed, cli=early)
    assert "--restart-policy" not in prepared.argv
    assert "--master-restart-policy" not in prepared.argv
    assert prepared.profile.restart_policy is None and seed.restart_policy == "OnFailure"
    assert prepared.record is not None and "restart_policy" not in prepared.record.data
    [said] = prepared.warnings
    assert said.startswith(
        "the installed runai has no --restart-policy, --master-restart-policy: submitting without "
        "restart_policy, master_restart_policy (set by the shipped profile retinanet-tcp)"
    )
    assert submission.degradable(prepared.profile, early) == []  # nothing left to drop
    late = prepare(seed, cli=Capabilities(["runai"], parse_override("2.25"), "test"))
    assert late.warnings == () and "--master-restart-policy" in late.argv
    # Asked for (even the shipped value): refused, naming that field alone.
    with pytest.raises(ProfileError) as refused:
        prepare(seed, ["master_restart_policy=OnFailure"], cli=early)
    assert [p.field for p in refused.value.problems] == ["master_restart_policy"]
