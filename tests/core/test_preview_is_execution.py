"""What the dry run shows is what the submit executes, byte for byte, the executable and the
submission record included: `submit --dry-run` (text and --json) and `resubmit --dry-run --json`
against the whole argv a recording stand-in `runai` (tests/fake_runai) is executed with, for
every shipped profile, with `--set` and `--name` (on the local cluster, against the argv
runai-local records: tests/local/test_resubmit.py). The record never copies a secret env value,
and one over its budget is refused before anything runs."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from runai_tui.profiles import (
    ProfileStore,
    apply_overrides,
    shipped_profiles_dir,
    submission_record,
)
from runai_tui.runai.argv import display_argv
from tests.fakes import FakeRunai, fake_runai, rule

RUNAI_TUI = shutil.which("runai-tui", path=str(Path(sys.executable).parent)) or "runai-tui"
SHIPPED = sorted(p.stem for p in shipped_profiles_dir().glob("*.yaml"))
# Plain, then with overrides and a name of its own (the record holds both).
VARIANTS = {
    "plain": [],
    "set-and-name": ["--set", "workers=3", "--set", "env.EXTRA=a b", "--name", "try-2"],
}
MARK = f"{submission_record.ANNOTATION}="
LIST_JSON = json.dumps({"workloads": [{"name": "first", "phase": "Failed", "projectName": "p"}]})


def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [RUNAI_TUI, *args], capture_output=True, text=True, timeout=60,
        env={**os.environ, **(env or {})},
    )  # fmt: skip


def submits(fake: FakeRunai) -> list[list[str]]:
    """The whole argv of every submit, the executed program first."""
    return [c for c in fake.executed() if c[1:4] == ["training", "pytorch", "submit"]]


def record_of(argv: list[str]) -> submission_record.Record:
    [value] = [w.removeprefix(MARK) for w in argv if w.startswith(MARK)]
    return submission_record.decode(value)


def describe_with(argv: list[str], name: str) -> str:
    """describe's JSON of job `name`, carrying the record `argv` was submitted with."""
    [value] = [w.removeprefix(MARK) for w in argv if w.startswith(MARK)]
    return json.dumps(
        {
            "name": name,
            "phase": "Failed",
            "projectName": "p",
            "annotations": {submission_record.ANNOTATION: value},
            "pods": [{"name": f"{name}-master-0", "phase": "Failed"}],
        }
    )


@pytest.mark.parametrize("variant", sorted(VARIANTS))
@pytest.mark.parametrize("profile", SHIPPED)
def test_the_submit_sends_the_dry_runs_argv_byte_for_byte(
    tmp_path: Path, profile: str, variant: str
) -> None:
    args = ["submit", "--profile", profile, *VARIANTS[variant]]
    fake = fake_runai(tmp_path, [rule("pytorch", "submit", stdout="Creating pytorch training\n")])
    dry_json = run(*args, "--dry-run", "--json", env=fake.env())
    dry_text = run(*args, "--dry-run", env=fake.env())
    assert dry_json.returncode == 0 and dry_text.returncode == 0, dry_json.stderr + dry_text.stderr
    argv = json.loads(dry_json.stdout)["argv"]
    # The text is the same argv, shell-quoted on one line, nothing folded.
    assert dry_text.stdout == display_argv(argv) + "\n"
    assert shlex.split(dry_text.stdout) == argv
    done = run(*args, env=fake.env())
    assert done.returncode == 0, done.stderr
    [sent] = submits(fake)
    assert json.dumps(sent).encode() == json.dumps(argv).encode()
    assert argv[0] == str(fake.path)  # the executable the backend runs, not a stand-in name
    record = record_of(sent)
    assert record.profile == profile
    if variant == "set-and-name":
        assert record.name == "try-2" and record.sets == ("workers=3", "env.EXTRA=a b")
        assert record.data["workers"] == 3 and record.data["env"]["EXTRA"] == "a b"


@pytest.mark.parametrize("profile", SHIPPED)
def test_resubmit_sends_its_dry_runs_argv_byte_for_byte(tmp_path: Path, profile: str) -> None:
    first = json.loads(
        run("submit", "--profile", profile, "--set", "workers=3", "--dry-run", "--json").stdout
    )["argv"]  # on whichever backend: only its record is used
    fake = fake_runai(
        tmp_path,
        [
            rule("pytorch", "describe", "first", stdout=describe_with(first, "first")),
            rule("training", "list", stdout=LIST_JSON),
            rule("pytorch", "submit", stdout="Creating pytorch training\n"),
        ],
    )
    extra = ["--set", "env.NCCL_DEBUG=WARN", "--name", "second"]
    dry = run("resubmit", "first", *extra, "--dry-run", "--json", env=fake.env())
    assert dry.returncode == 0, dry.stderr
    argv = json.loads(dry.stdout)["argv"]
    text = run("resubmit", "first", *extra, "--dry-run", env=fake.env())
    assert text.stdout.splitlines()[-1] == display_argv(argv)
    assert not submits(fake)
    done = run("resubmit", "first", *extra, "--yes", env=fake.env())
    assert done.returncode == 0, done.stderr
    [sent] = submits(fake)
    assert json.dumps(sent).encode() == json.dumps(argv).encode()
    assert argv[0] == str(fake.path)
    record = record_of(sent)
    assert record.profile == profile and record.name == "second"
    assert record.sets == ("workers=3", "env.NCCL_DEBUG=WARN")


def test_a_secret_env_value_is_never_recorded(tmp_path: Path) -> None:
    secret = "hf_abc123secret"
    args = ["submit", "--profile", "retinanet-tcp", "--set", f"env.HF_TOKEN={secret}"]
    argv = json.loads(run(*args, "--dry-run", "--json").stdout)["argv"]
    # The command carries it (lint warns: secret-in-env); the record only names it.
    assert f"HF_TOKEN={secret}" in argv
    [value] = [w for w in argv if w.startswith(MARK)]
    assert secret not in value
    record = record_of(argv)
    assert record.redacted == ("env.HF_TOKEN",)
    assert record.data["env"]["HF_TOKEN"] == submission_record.REDACTED
    assert record.sets == (f"env.HF_TOKEN={submission_record.REDACTED}",)

    fake = fake_runai(
        tmp_path,
        [
            rule("pytorch", "describe", "first", stdout=describe_with(argv, "first")),
            rule("training", "list", stdout=LIST_JSON),
            rule("pytorch", "submit", stdout="Creating pytorch training\n"),
        ],
    )
    # retinanet-tcp sets no HF_TOKEN: the value is nowhere, and the resubmit says so.
    refused = run("resubmit", "first", "--yes", env=fake.env())
    assert refused.returncode == 1
    assert refused.stderr.splitlines() == [
        "error: job first's record leaves out the value of env.HF_TOKEN (a secret is never "
        "recorded) and profile retinanet-tcp no longer sets it: nothing submitted",
        "hint: give it: --set env.HF_TOKEN=VALUE, or better from a Kubernetes Secret: "
        "--set env_secrets.HF_TOKEN=SECRET,key=KEY",
    ]
    assert not submits(fake)
    given = run("resubmit", "first", "--set", "env.HF_TOKEN=hf_new", "--yes", env=fake.env())
    assert given.returncode == 0, given.stderr
    [sent] = submits(fake)
    assert "HF_TOKEN=hf_new" in sent and f"HF_TOKEN={secret}" not in sent
    assert "hf_new" not in next(w for w in sent if w.startswith(MARK))


def test_a_redacted_value_comes_from_the_profile_as_it_is_now(tmp_path: Path) -> None:
    users = Path(os.environ["XDG_CONFIG_HOME"]) / "runai-tui" / "profiles"
    users.mkdir(parents=True, exist_ok=True)
    own = users / "with-token.yaml"
    own.write_text("extends: retinanet-tcp\nenv:\n  WANDB_API_KEY: k-one\n")
    try:
        argv = json.loads(run("submit", "--profile", "with-token", "--dry-run", "--json").stdout)[
            "argv"
        ]
        assert "k-one" not in next(w for w in argv if w.startswith(MARK))
        own.write_text("extends: retinanet-tcp\nenv:\n  WANDB_API_KEY: k-two\n")  # rotated
        fake = fake_runai(
            tmp_path,
            [
                rule("pytorch", "describe", "first", stdout=describe_with(argv, "first")),
                rule("training", "list", stdout=LIST_JSON),
            ],
        )
        dry = run("resubmit", "first", "--dry-run", "--json", env=fake.env())
        assert dry.returncode == 0, dry.stderr
        plan = json.loads(dry.stdout)
        assert "WANDB_API_KEY=k-two" in plan["argv"]
        assert any("WANDB_API_KEY" in note and "never recorded" in note for note in plan["notes"])
    finally:
        own.unlink()


def test_a_record_over_its_budget_is_refused_before_anything_runs(tmp_path: Path) -> None:
    big = "x" * 20_000
    sets = [f"env.BIG={big}"]
    fake = fake_runai(tmp_path, [rule("pytorch", "submit", stdout="Creating\n")])
    # The sizes as Kubernetes counts them: bytes of the key and of the value.
    profile = apply_overrides(ProfileStore().load("retinanet-tcp"), sets)
    encoded = submission_record.make(profile, sets).encode()
    size = len(submission_record.ANNOTATION.encode()) + len(encoded.encode())
    env = json.loads(encoded)["data"]["env"]
    env_size = len(json.dumps(env, separators=(",", ":")).encode())
    expected = (
        f"error: the submission record (runai-tui.io/submission) would be {size} bytes, over its "
        "16384-byte budget (all annotations of a Kubernetes object share 262144): nothing "
        f"submitted; shorten the largest field, env ({env_size} bytes), e.g. move long values "
        "into a file on the PVC\n"
    )
    for extra in (["--dry-run", "--json"], []):
        out = run("submit", "--profile", "retinanet-tcp", "--set", sets[0], *extra, env=fake.env())
        assert (out.returncode, out.stdout, out.stderr) == (2, "", expected)
    assert fake.calls() == []
