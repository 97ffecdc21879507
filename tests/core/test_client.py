"""RunaiClient against a fake `runai` run as a real subprocess (tests/fakes.py)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from runai_tui.runai.backend import Backend, find_local
from runai_tui.runai.client import DEFAULT_SHELL, RunaiClient
from runai_tui.runai.interactive import run_interactive
from runai_tui.shapes.errors import ErrorKind, RunaiError
from runai_tui.shapes.models import Phase
from tests.fakes import FakeRunai, rule

MakeFake = Callable[..., FakeRunai]
ClientFor = Callable[..., RunaiClient]
NOTICE = "A new version (v2.25.3) is available. Updating now...\n"


def pid_alive(pid: int) -> bool:
    """True while `pid` runs (a zombie awaiting its parent counts as gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return False
    return stat.rpartition(")")[2].split()[0] not in ("Z", "X")


def wait_gone(pid: int, within: float = 10.0) -> bool:
    """Poll until `pid` is gone (an orphaned grandchild is reaped by init at its own pace)."""
    deadline = time.monotonic() + within
    while pid_alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def page(names: list[str], next_token: str = "") -> str:
    return json.dumps(
        {"workloads": [{"name": n, "phase": "Running"} for n in names], "next": next_token}
    )


# --- list ------------------------------------------------------------------------------------


def test_list_bare_list(make_fake: MakeFake, client_for: ClientFor) -> None:
    fake = make_fake(
        [rule("training", "list", stdout=json.dumps([{"name": "a", "status": "Pending"}]))]
    )
    jobs = client_for(fake).list_jobs()
    assert [(j.name, j.phase) for j in jobs] == [("a", Phase.PENDING)]
    assert fake.calls() == [["training", "list", "--json"]]


def test_list_wrapped_with_notices_and_v1_status(
    make_fake: MakeFake, client_for: ClientFor
) -> None:
    body = json.dumps({"items": [{"Name": "old", "Status": "Succeeded", "Project": "p"}]})
    fake = make_fake([rule("training", "list", stdout=NOTICE + body + "\n", stderr=NOTICE)])
    [job] = client_for(fake, project="p").list_jobs()
    assert (job.name, job.phase, job.project) == ("old", Phase.COMPLETED, "p")
    assert fake.calls() == [["training", "list", "--json", "-p", "p"]]


def test_list_follows_three_pages(make_fake: MakeFake, client_for: ClientFor) -> None:
    fake = make_fake(
        [
            rule("list", "--next-token", "tok-2", stdout=page(["e"])),
            rule("list", "--next-token", "tok-1", stdout=page(["c", "d"], "tok-2")),
            rule("list", stdout=page(["a", "b"], "tok-1")),
        ]
    )
    jobs = client_for(fake).list_jobs()
    assert [j.name for j in jobs] == ["a", "b", "c", "d", "e"]
    assert fake.calls() == [
        ["training", "list", "--json"],
        ["training", "list", "--json", "--next-token", "tok-1"],
        ["training", "list", "--json", "--next-token", "tok-2"],
    ]
    assert not any("--no-pagination" in call for call in fake.calls())


def test_list_stops_on_a_repeated_token(make_fake: MakeFake, client_for: ClientFor) -> None:
    fake = make_fake([rule("list", stdout=page(["a"], "same"))])
    assert [j.name for j in client_for(fake).list_jobs()] == ["a", "a"]
    assert len(fake.calls()) == 2


async def test_async_list_follows_pages(make_fake: MakeFake, client_for: ClientFor) -> None:
    fake = make_fake(
        [
            rule("list", "--next-token", "t1", stdout=page(["b"])),
            rule("list", stdout=page(["a"], "t1")),
        ]
    )
    jobs = await client_for(fake, project="team").alist_jobs()
    assert [j.name for j in jobs] == ["a", "b"]
    assert fake.calls()[1] == ["training", "list", "--json", "-p", "team", "--next-token", "t1"]


# --- describe --------------------------------------------------------------------------------

DESCRIBE_LOCAL = {
    "name": "job-a",
    "phase": "Running",
    "projectName": "local",
    "pods": [{"name": "job-a-master-0", "phase": "Running", "role": "master", "nodeName": "local"}],
    "events": [{"createdAt": "2026-11-22T01:00:00Z", "type": "Normal", "reason": "Created",
                "message": "created"}],
    "notes": ["--large-shm has no effect on the local cluster"],
}  # fmt: skip
DESCRIBE_REST = {
    "general": {"workloadName": "job-a", "actualPhase": "Failed", "projectName": "p"},
    "pods": {"items": [{"podName": "job-a-worker-0", "k8sPhase": "Failed"}]},
}


@pytest.mark.parametrize("doc", [DESCRIBE_LOCAL, DESCRIBE_REST], ids=["local", "rest"])
def test_describe_shapes(make_fake: MakeFake, client_for: ClientFor, doc: dict) -> None:
    fake = make_fake(
        [
            rule("version", stdout="2.25.3\n"),
            rule("describe", "job-a", stdout=NOTICE + json.dumps(doc)),
        ]
    )
    detail = client_for(fake, project="p").describe("job-a")
    assert detail.job.name == "job-a"
    assert len(detail.pods) == 1 and detail.pods[0].name.startswith("job-a-")
    # The help decides (the fake answers 2.25's): `version` is not asked.
    assert fake.calls() == [
        ["training", "pytorch", "describe", "job-a", "-o", "json", *UNLIMITED, "-p", "p"],
    ]
    assert fake.help_calls() == [
        ["training", "pytorch", "--help"],
        ["training", "pytorch", "describe", "--help"],
    ]


UNLIMITED = ["--pod-limit", "-1", "--event-limit", "-1"]


def rest_describe(listed: int, requested: int) -> str:
    pods = [{"podName": f"big-worker-{i}", "k8sPhase": "Running"} for i in range(listed)]
    general = {"workloadName": "big", "actualPhase": "Running", "requestedPods": requested}
    return json.dumps({"general": general, "pods": {"items": pods}})


def test_describe_of_a_16_pod_job_lists_all_16_on_cli_2_25(
    make_fake: MakeFake, client_for: ClientFor
) -> None:
    # The real CLI's defaults: 10 pods unless --pod-limit says otherwise.
    fake = make_fake(
        [
            rule("version", stdout="2.25.3\n"),
            rule("describe", "--pod-limit", "-1", stdout=rest_describe(16, 16)),
            rule("describe", stdout=rest_describe(10, 16)),
        ]
    )
    detail = client_for(fake).describe("big")
    assert len(detail.pods) == 16 and detail.notes == []
    assert fake.calls()[-1][-4:] == UNLIMITED


def test_a_cli_without_the_limit_flags_says_it_listed_fewer_pods(
    make_fake: MakeFake, client_for: ClientFor
) -> None:
    # A CLI whose describe help lists no --pod-limit: describe as it is, and say what is missing.
    no_limits = (
        "Usage:\n  runai training pytorch describe [flags]\n\nFlags:\n  -o, --output string\n"
    )
    fake = make_fake(
        [
            rule("describe", "--help", stdout=no_limits),
            rule("version", stdout="2.20.1\n"),
            rule("describe", stdout=rest_describe(10, 16)),
        ]
    )
    detail = client_for(fake).describe("big")
    assert fake.calls() == [["training", "pytorch", "describe", "big", "-o", "json"], ["version"]]
    assert len(detail.pods) == 10
    assert detail.notes == [
        "runai 2.20.1 has no describe --pod-limit: it listed 10 of the job's "
        "16 pods (update the runai CLI)"
    ]


def test_an_unknown_cli_that_refuses_the_limit_flags_is_asked_again_without(
    make_fake: MakeFake, client_for: ClientFor
) -> None:
    refused = "Error: unknown flag: --pod-limit\nUsage:\n  runai training pytorch describe ...\n"
    fake = make_fake(
        [
            rule("describe", "--help", stdout="not cobra help\n"),
            rule("version", stdout="something new\n"),
            rule("describe", "--pod-limit", stderr=refused, exit=1),
            rule("describe", stdout=rest_describe(3, 3)),
        ]
    )
    detail = client_for(fake).describe("big")
    assert len(detail.pods) == 3 and detail.notes == []  # all pods listed: nothing to say
    assert [c[-1] for c in fake.calls()[1:]] == ["-1", "json"]


def test_an_unknown_cli_error_other_than_the_flags_is_not_retried(
    make_fake: MakeFake, client_for: ClientFor
) -> None:
    fake = make_fake(
        [
            rule("describe", "--help", stdout="not cobra help\n"),
            rule("version", stdout="something new\n"),
            rule("describe", stderr='workload "big" does not exist\n', exit=1),
        ]
    )
    with pytest.raises(RunaiError) as caught:
        client_for(fake).describe("big")
    assert caught.value.kind is ErrorKind.NOT_FOUND
    assert len(fake.calls()) == 3  # version, describe, and the list that names no other framework


async def test_async_describe(make_fake: MakeFake, client_for: ClientFor) -> None:
    fake = make_fake([rule("describe", "job-a", stdout=json.dumps(DESCRIBE_LOCAL))])
    detail = await client_for(fake).adescribe("job-a")
    assert detail.job.phase is Phase.RUNNING and detail.notes == DESCRIBE_LOCAL["notes"]


def test_describe_unparsable_is_other(make_fake: MakeFake, client_for: ClientFor) -> None:
    fake = make_fake([rule("describe", stdout="Name: job-a\nStatus: Running\n")])
    with pytest.raises(RunaiError) as info:
        client_for(fake).describe("job-a")
    assert info.value.kind is ErrorKind.OTHER
    assert info.value.message == "could not parse the workload description: Name: job-a"


def test_describe_exit_zero_missing_is_not_found(
    make_fake: MakeFake, client_for: ClientFor
) -> None:
    fake = make_fake([rule("describe", stdout="Job job-a does not exist in project p.\n")])
    with pytest.raises(RunaiError) as info:
        client_for(fake).describe("job-a")
    assert info.value.kind is ErrorKind.NOT_FOUND


# --- errors ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("response", "kind", "message"),
    [
        (
            {"stderr": "workload 'job-a' could not be found in project 'p'\n", "exit": 1},
            ErrorKind.NOT_FOUND,
            "workload 'job-a' could not be found in project 'p'",
        ),
        (
            # CLI v1: a missing job is reported on stdout with exit 0
            {"stdout": "Job job-a does not exist in project p. If the job exists in a "
                       "different project, use -p <project-name>.\n", "exit": 0},
            ErrorKind.NOT_FOUND,
            "Job job-a does not exist in project p. If the job exists in a different project, "
            "use -p <project-name>.",
        ),
        (
            {"stderr": NOTICE + "Error: could not locate desired workload\n", "exit": 1},
            ErrorKind.NOT_FOUND,
            "could not locate desired workload",
        ),
        (
            {"stderr": "Error: 401 Unauthorized\n", "exit": 1},
            ErrorKind.NOT_LOGGED_IN,
            "not logged in to Run:ai or the login expired (401 Unauthorized)",
        ),
        (
            {"stderr": "Error: token expired\n", "exit": 1},
            ErrorKind.NOT_LOGGED_IN,
            "not logged in to Run:ai or the login expired (token expired)",
        ),
        (
            {"stdout": NOTICE, "stderr": "\nError: cluster unreachable: dial tcp\nmore\n", "exit": 3},
            ErrorKind.OTHER,
            "runai training pytorch delete failed (exit 3): cluster unreachable: dial tcp",
        ),
    ],
)  # fmt: skip
def test_delete_error_classes(
    make_fake: MakeFake, client_for: ClientFor, response: dict, kind: ErrorKind, message: str
) -> None:
    fake = make_fake([rule("delete", "job-a", **response)])
    with pytest.raises(RunaiError) as info:
        client_for(fake, project="p").delete("job-a")
    assert info.value.kind is kind
    assert info.value.message == message
    assert info.value.argv == [str(fake.path), "training", "pytorch", "delete", "job-a", "-p", "p"]
    if kind is ErrorKind.NOT_LOGGED_IN:
        assert info.value.hint == "run: runai login"


def test_suspend_resume_and_delete_succeed(make_fake: MakeFake, client_for: ClientFor) -> None:
    fake = make_fake(
        [
            rule("suspend", stdout="Job job-a not found\n"),  # v1: exit 0
            rule("resume", stdout=NOTICE + "workload job-a resumed\n"),
            rule("delete", stdout="workload job-a deleted\n"),
        ]
    )
    client = client_for(fake)
    with pytest.raises(RunaiError) as info:
        client.suspend("job-a")
    assert info.value.kind is ErrorKind.NOT_FOUND
    assert client.resume("job-a") == "workload job-a resumed"
    assert client.delete("job-a") == "workload job-a deleted"
    assert [c[:4] for c in fake.calls()] == [
        ["training", "pytorch", "suspend", "job-a"],
        # Not found as a PyTorch job: the list (asked once) could name another framework.
        ["training", "list", "--json"],
        ["training", "pytorch", "resume", "job-a"],
        ["training", "pytorch", "delete", "job-a"],
    ]


async def test_async_errors_and_verbs(make_fake: MakeFake, client_for: ClientFor) -> None:
    fake = make_fake(
        [
            rule("delete", stderr="Error: not logged in\n", exit=1),
            rule("suspend", stdout="suspended\n"),
            rule("resume", stdout="resumed\n"),
        ]
    )
    client = client_for(fake)
    with pytest.raises(RunaiError) as info:
        await client.adelete("job-a")
    assert info.value.kind is ErrorKind.NOT_LOGGED_IN
    assert await client.asuspend("job-a") == "suspended"
    assert await client.aresume("job-a") == "resumed"


def test_not_installed(tmp_path: Path) -> None:
    client = RunaiClient(Backend("runai", [str(tmp_path / "no-such-runai")]))
    with pytest.raises(RunaiError) as info:
        client.list_jobs()
    assert info.value.kind is ErrorKind.NOT_INSTALLED
    assert info.value.message == "runai is not installed or not on PATH"
    assert "RUNAI_TUI_RUNAI" in info.value.hint and "--backend local" in info.value.hint
    with pytest.raises(RunaiError) as info:
        list(client.logs("x"))
    assert info.value.kind is ErrorKind.NOT_INSTALLED
    local = RunaiClient(Backend("local", [str(tmp_path / "no-runai-local")]))
    with pytest.raises(RunaiError) as info:
        local.cli_version()
    assert info.value.kind is ErrorKind.NOT_INSTALLED
    assert info.value.message.startswith("runai-local could not be started")


async def test_not_installed_async(tmp_path: Path) -> None:
    client = RunaiClient(Backend("runai", [str(tmp_path / "no-such-runai")]))
    with pytest.raises(RunaiError) as info:
        await client.alist_jobs()
    assert info.value.kind is ErrorKind.NOT_INSTALLED
    with pytest.raises(RunaiError) as info:
        async for _line in client.stream_logs("x"):
            pass
    assert info.value.kind is ErrorKind.NOT_INSTALLED


def test_timeout_kills_the_command(make_fake: MakeFake, client_for: ClientFor) -> None:
    fake = make_fake([rule("list", sleep=60, spawn_child=True)])
    with pytest.raises(RunaiError) as info:
        client_for(fake, timeout=1.0).list_jobs()
    assert info.value.kind is ErrorKind.TIMEOUT
    assert info.value.message == "`runai training list` timed out after 1 s"
    assert "--timeout" in info.value.hint
    for record in fake.records():  # the fake logs itself as soon as it starts
        assert not pid_alive(record["pid"])
        assert wait_gone(record["child_pid"])  # the whole process group went


async def test_async_timeout(make_fake: MakeFake, client_for: ClientFor) -> None:
    fake = make_fake([rule("whoami", sleep=60)])
    with pytest.raises(RunaiError) as info:
        await client_for(fake, timeout=0.5).awhoami()
    assert info.value.kind is ErrorKind.TIMEOUT
    assert all(not pid_alive(r["pid"]) for r in fake.records())


async def test_async_call_does_not_block_the_loop(
    make_fake: MakeFake, client_for: ClientFor
) -> None:
    fake = make_fake([rule("version", sleep=0.5, stdout="Version: 2.25.3\n")])
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0.01)
            ticks += 1

    task = asyncio.create_task(ticker())
    try:
        assert (await client_for(fake).acli_version()).line == "Version: 2.25.3"
    finally:
        task.cancel()
    assert ticks > 0  # the loop ran other work while the fake slept


# --- submit, whoami, version -----------------------------------------------------------------


def test_submit_passes_argv_unchanged_and_adds_project(
    make_fake: MakeFake, client_for: ClientFor
) -> None:
    fake = make_fake([rule("submit", stdout=NOTICE + "Creating pytorch training job-a...\n")])
    tricky = "echo \"$(whoami)\" `date` 'x y'\nnext"
    argv = ["runai", "training", "pytorch", "submit", "job-a", "--image", "img:1", "-e", "A=b c",
            "--command", "--", "sh", "-c", tricky]  # fmt: skip
    result = client_for(fake, project="team").submit(argv)
    assert result.name == "job-a"
    assert result.output == "Creating pytorch training job-a..."
    assert fake.calls() == [
        ["training", "pytorch", "submit", "job-a", "--image", "img:1", "-e", "A=b c",
         "-p", "team", "--command", "--", "sh", "-c", tricky]
    ]  # fmt: skip


async def test_async_submit_generated_name_and_own_project(
    make_fake: MakeFake, client_for: ClientFor
) -> None:
    fake = make_fake([rule("submit", stdout="Creating pytorch training pytorch-06027b58...\n")])
    argv = ["runai", "training", "pytorch", "submit", "--name-prefix", "pytorch", "-p", "own"]
    result = await client_for(fake, project="team").asubmit(argv)
    assert result.name == "pytorch-06027b58"
    assert fake.calls() == [argv[1:]]  # the profile's own -p is kept, none added


def test_submit_failure_is_classified(make_fake: MakeFake, client_for: ClientFor) -> None:
    fake = make_fake([rule("submit", stderr="Error: unknown flag: --bogus\n", exit=1)])
    with pytest.raises(RunaiError) as info:
        client_for(fake).submit(["runai", "training", "pytorch", "submit", "j", "--bogus"])
    assert info.value.kind is ErrorKind.OTHER
    assert info.value.message == (
        "runai training pytorch submit does not know the flag --bogus (this runai CLI lacks it)"
    )
    assert "runai-tui info" in info.value.hint


def test_whoami_and_version(make_fake: MakeFake, client_for: ClientFor) -> None:
    fake = make_fake(
        [
            rule("whoami", stdout=NOTICE + "alice@example.com\n"),
            rule("version", stdout="Version: 2.18.94\nBuildDate: 2024-01-01\n", stderr=NOTICE),
        ]
    )
    client = client_for(fake, project="p")
    assert client.whoami() == "alice@example.com"
    assert client.cli_version().line == "Version: 2.18.94"
    assert client.cli_version().version == "2.18.94"  # asked once, then cached
    assert fake.calls() == [["whoami"], ["version"]]  # no -p on non-workload commands


def test_whoami_not_logged_in_even_with_exit_zero(
    make_fake: MakeFake, client_for: ClientFor
) -> None:
    fake = make_fake([rule("whoami", stdout="You are currently not logged in to Run:AI\n")])
    with pytest.raises(RunaiError) as info:
        client_for(fake).whoami()
    assert info.value.kind is ErrorKind.NOT_LOGGED_IN


# --- exec ------------------------------------------------------------------------------------


def test_exec_argv(make_fake: MakeFake, client_for: ClientFor) -> None:
    fake = make_fake([])
    exe = str(fake.path)
    assert client_for(fake).exec_argv("job-a") == [
        exe, "training", "pytorch", "exec", "job-a", "--stdin", "--tty", "--", *DEFAULT_SHELL
    ]  # fmt: skip
    assert DEFAULT_SHELL[:2] == ["sh", "-c"] and "bash" in DEFAULT_SHELL[2]
    assert client_for(fake, project="p").exec_argv(
        "job-a", pod="job-a-worker-1", command=["nvidia-smi", "-L"], tty=False
    ) == [exe, "training", "pytorch", "exec", "job-a", "-p", "p", "--pod", "job-a-worker-1",
          "--", "nvidia-smi", "-L"]  # fmt: skip


def test_default_shell_picks_bash_when_present(tmp_path: Path) -> None:
    # The default exec command, run for real: bash when on PATH, else sh.
    import subprocess

    script = DEFAULT_SHELL[:2] + [DEFAULT_SHELL[2]]
    probe = "echo ${BASH_VERSION:+bash}"
    with_bash = subprocess.run(script, input=probe, capture_output=True, text=True, check=True)
    assert with_bash.stdout.strip() == ("bash" if os.path.exists("/bin/bash") else "")
    sh_only = tmp_path / "bin"
    sh_only.mkdir()
    (sh_only / "sh").symlink_to("/bin/sh")
    without = subprocess.run(
        ["/bin/sh", "-c", DEFAULT_SHELL[2]],
        input=probe,
        capture_output=True,
        text=True,
        env={"PATH": str(sh_only)},
        check=True,
    )
    assert without.stdout.strip() == ""


def test_run_interactive_returns_the_exit_code(tmp_path: Path) -> None:
    assert run_interactive([sys.executable, "-c", "import sys; sys.exit(3)"]) == 3
    with pytest.raises(RunaiError) as info:
        run_interactive([str(tmp_path / "missing")])
    assert info.value.kind is ErrorKind.NOT_INSTALLED


# --- logs ------------------------------------------------------------------------------------


def test_logs_sync_lines_and_flags(make_fake: MakeFake, client_for: ClientFor) -> None:
    fake = make_fake([rule("logs", lines=["step 1", "step 2 ünïcode", "", "last\r"])])
    lines = list(client_for(fake, project="p").logs("job-a", pod="job-a-worker-0", tail=50))
    assert lines == ["step 1", "step 2 ünïcode", "", "last"]
    assert fake.calls() == [
        ["training", "pytorch", "logs", "job-a", "-p", "p", "--pod", "job-a-worker-0",
         "--tail", "50"]
    ]  # fmt: skip


def test_logs_invalid_utf8_is_replaced(make_fake: MakeFake, client_for: ClientFor) -> None:
    fake = make_fake([rule("logs", stdout_hex="6f6bff0a", lines=["tail"])])
    assert list(client_for(fake).logs("job-a")) == ["ok\ufffd", "tail"]


def test_logs_failure_after_lines(make_fake: MakeFake, client_for: ClientFor) -> None:
    fake = make_fake(
        [rule("logs", lines=["one"], stderr="Error: could not locate desired workload\n", exit=1)]
    )
    seen: list[str] = []
    with pytest.raises(RunaiError) as info:
        for line in client_for(fake).logs("job-a"):
            seen.append(line)
    assert seen == ["one"]
    assert info.value.kind is ErrorKind.NOT_FOUND


def test_logs_sync_close_kills_the_child(make_fake: MakeFake, client_for: ClientFor) -> None:
    fake = make_fake([rule("logs", lines=["a", "b"], block=True, spawn_child=True)])
    lines = client_for(fake).logs("job-a", follow=True)
    assert [next(lines), next(lines)] == ["a", "b"]
    [record] = fake.records()
    assert pid_alive(record["pid"])  # the lines came while `logs --follow` still runs
    lines.close()
    assert not pid_alive(record["pid"])
    assert wait_gone(record["child_pid"])
    assert "--follow" in fake.calls()[0]


async def test_stream_logs_follow_then_aclose(make_fake: MakeFake, client_for: ClientFor) -> None:
    fake = make_fake([rule("logs", lines=["epoch 1", "epoch 2"], block=True, spawn_child=True)])
    stream = client_for(fake).stream_logs("job-a")
    assert [await stream.__anext__(), await stream.__anext__()] == ["epoch 1", "epoch 2"]
    [record] = fake.records()
    assert pid_alive(record["pid"])  # lines arrived before the child exited
    await stream.aclose()
    assert not pid_alive(record["pid"])  # killed and reaped
    assert await asyncio.to_thread(wait_gone, record["child_pid"])  # its whole group too
    assert fake.calls() == [["training", "pytorch", "logs", "job-a", "--follow"]]


async def test_stream_logs_cancel_kills_the_child(
    make_fake: MakeFake, client_for: ClientFor
) -> None:
    fake = make_fake([rule("logs", lines=["first"], block=True)])
    got_line = asyncio.Event()
    seen: list[str] = []

    async def consume() -> None:
        async for line in client_for(fake).stream_logs("job-a", tail=10):
            seen.append(line)
            got_line.set()

    task = asyncio.create_task(consume())
    await got_line.wait()
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    assert seen == ["first"]
    [record] = fake.records()
    assert not pid_alive(record["pid"])


async def test_stream_logs_to_the_end(make_fake: MakeFake, client_for: ClientFor) -> None:
    long_line = "x" * 200_000  # longer than one read
    fake = make_fake([rule("logs", lines=["a", long_line, "b"], stderr="some warning\n")])
    lines = [line async for line in client_for(fake).stream_logs("job-a", follow=False)]
    assert lines == ["a", long_line, "b"]
    assert "--follow" not in fake.calls()[0]


async def test_stream_logs_error_at_the_end(make_fake: MakeFake, client_for: ClientFor) -> None:
    fake = make_fake([rule("logs", stderr="Error: token expired\n", exit=1)])
    with pytest.raises(RunaiError) as info:
        async for _line in client_for(fake).stream_logs("job-a"):
            pass
    assert info.value.kind is ErrorKind.NOT_LOGGED_IN


async def test_stream_logs_missing_with_exit_zero(
    make_fake: MakeFake, client_for: ClientFor
) -> None:
    fake = make_fake([rule("logs", stderr="could not locate desired workload\n")])
    with pytest.raises(RunaiError) as info:
        async for _line in client_for(fake).stream_logs("job-a"):
            pass
    assert info.value.kind is ErrorKind.NOT_FOUND


# --- exit 0 answers that are failures; the local cluster ---------------------------------------


def test_list_exit_zero_not_logged_in(make_fake: MakeFake, client_for: ClientFor) -> None:
    fake = make_fake([rule("list", stdout=NOTICE + "You are currently not logged in to Run:AI\n")])
    with pytest.raises(RunaiError) as info:
        client_for(fake).list_jobs()
    assert info.value.kind is ErrorKind.NOT_LOGGED_IN
    assert info.value.argv[1:] == ["training", "list", "--json"]


def test_local_backend_not_found_has_no_login_hint(make_fake: MakeFake) -> None:
    fake = make_fake([rule("describe", stderr="workload 'x' could not be found\n", exit=1)])
    client = RunaiClient(Backend("local", [str(fake.path)]))
    with pytest.raises(RunaiError) as info:
        client.describe("x")
    assert info.value.kind is ErrorKind.NOT_FOUND
    assert info.value.hint == "check the name with `runai-tui list`"


def test_against_the_real_local_cluster() -> None:
    # The core talks to runai-local only through its command line, exactly as to runai.
    client = RunaiClient(Backend("local", find_local()))
    assert client.cli_version().version.startswith("runai-local ")
    assert client.list_jobs() == []  # a fresh XDG state (root conftest)
    with pytest.raises(RunaiError) as info:
        client.describe("no-such-job")
    assert info.value.kind is ErrorKind.NOT_FOUND
    assert "no-such-job" in info.value.message


# --- the whole job list, whichever paging the CLI has ----------------------------------------

SIXTY = [
    {"name": f"job-{i:02d}", "phase": "Running", "type": "Training", "framework": "PyTorch"}
    for i in range(60)
]


def test_the_whole_list_on_a_cli_whose_default_limit_is_50(
    make_fake: MakeFake, client_for: ClientFor, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 2.18-2.20: `--limit` (default 50) and `--offset`, no next token. Asked as it is, it
    # would stop at 50; runai-tui pages by offset until a page comes back short.
    fake = make_fake([], cli="2.18", jobs=SIXTY)
    jobs = client_for(fake).list_jobs()
    assert [j.name for j in jobs] == [j["name"] for j in SIXTY]
    assert fake.calls() == [["training", "list", "--json", "--limit", "500", "--offset", "0"]]
    monkeypatch.setattr("runai_tui.runai.client.OFFSET_PAGE", 25)
    assert len(client_for(fake).list_jobs()) == 60
    assert [c[-3:] for c in fake.calls()[1:]] == [
        ["25", "--offset", "0"],
        ["25", "--offset", "25"],
        ["25", "--offset", "50"],
    ]


@pytest.mark.parametrize("cli", ["2.25", "3.0"])
def test_the_whole_list_by_next_token(make_fake: MakeFake, client_for: ClientFor, cli: str) -> None:
    fake = make_fake([], cli=cli, jobs=SIXTY, page_size=25)
    jobs = client_for(fake, project="p").list_jobs()
    assert len(jobs) == 60 and len({j.name for j in jobs}) == 60
    assert fake.calls() == [
        ["training", "list", "--json", "-p", "p"],
        ["training", "list", "--json", "-p", "p", "--next-token", "25"],
        ["training", "list", "--json", "-p", "p", "--next-token", "50"],
    ]


def test_a_cli_with_only_limit_is_asked_for_enough(
    make_fake: MakeFake, client_for: ClientFor
) -> None:
    only_limit = (
        "Usage:\n  runai training list [flags]\n\nFlags:\n      --json\n      --limit int32\n"
    )
    fake = make_fake([rule("list", "--help", stdout=only_limit)], jobs=SIXTY)
    assert len(client_for(fake).list_jobs()) == 60
    assert fake.calls() == [["training", "list", "--json", "--limit", "100000"]]


# --- training jobs of other frameworks -------------------------------------------------------

MIXED = [
    {"name": "pt", "phase": "Running", "type": "Training", "framework": "PyTorch"},
    {"name": "tf", "phase": "Running", "type": "Training", "framework": "TensorFlow"},
    {"name": "plain", "phase": "Running", "type": "Training"},
]
MISSING = {"stderr": "Error: could not locate desired workload\n", "exit": 1}


def test_jobs_of_other_frameworks_go_to_their_own_subcommand(
    make_fake: MakeFake, client_for: ClientFor
) -> None:
    fake = make_fake(
        [
            rule("pytorch", "describe", "tf", **MISSING),
            rule("tensorflow", "describe", "tf", stdout=rest_describe(1, 1)),
            rule("standard", "delete", "plain", stdout="deleted\n"),
        ],
        cli="2.25",
        jobs=MIXED,
    )
    client = client_for(fake)
    # By name alone (the headless describe): pytorch first, then the list says TensorFlow.
    assert client.describe("tf").job.name == "big"
    assert [c[:4] for c in fake.calls()] == [
        ["training", "pytorch", "describe", "tf"],
        ["training", "list", "--json"],
        ["training", "tensorflow", "describe", "tf"],
    ]
    jobs = client.list_jobs()
    assert [(j.name, j.framework, j.family) for j in jobs] == [
        ("pt", "PyTorch", "pytorch"),
        ("tf", "TensorFlow", "tensorflow"),
        ("plain", "", "standard"),
    ]
    assert client.delete("plain") == "deleted"
    assert fake.calls()[-1] == ["training", "standard", "delete", "plain"]


def test_a_framework_the_cli_has_no_subcommand_for_is_read_only(
    make_fake: MakeFake, client_for: ClientFor
) -> None:
    fake = make_fake([rule("pytorch", "delete", "tf", **MISSING)], cli="2.18", jobs=MIXED)
    client = client_for(fake)
    client.list_jobs()
    with pytest.raises(RunaiError) as caught:
        client.delete("tf")
    assert caught.value.message == (
        "tf is a tensorflow training job and this runai has no `runai training tensorflow`: "
        "runai-tui shows it read-only"
    )
    assert not [c for c in fake.calls() if "delete" in c]
