"""`runai-tui resubmit` on the local cluster: bad input gets one line and an exit code, and
nothing is submitted; a dry run shows every override, the argv difference and the new command
line. The loops from a real fault to a fixed job are in test_resubmit_*.py."""

from __future__ import annotations

import json
import os

import pytest

from runai_tui.profiles import submission_record
from runai_tui.runai.argv import display_argv
from tests.local.conftest import describe, wait_phase
from tests.local.resubmit_loop import jobs, user_profile
from tests.local.test_through_runai_tui import tui

pytestmark = pytest.mark.slow  # jobs on the local cluster: real process groups


def test_bad_input_is_one_line_and_nothing_is_submitted() -> None:
    user_profile("quick", "job_name: quick\nimage: busybox:1\nworkers: 1\n"
                 "command: [sh, -c, 'echo fine']\n")  # fmt: skip
    dry = tui("submit", "--profile", "quick", "--dry-run", "--json")
    assert tui("submit", "--profile", "quick").returncode == 0
    try:
        wait_phase("quick", "Completed")
        # runai-local was executed with exactly the dry run's argv, its own path first and the
        # record included (it records the program as it was executed).
        sent = describe("quick")["spec"]["submitArgv"]
        argv = json.loads(dry.stdout)["argv"]
        assert os.path.basename(argv[0]) == "runai-local"
        assert json.dumps(sent) == json.dumps(argv)
        # The record travels with the job: next to it on the local cluster (spec.json).
        record = submission_record.decode(
            describe("quick")["spec"]["annotations"][submission_record.ANNOTATION]
        )
        assert record.profile == "quick" and record.data["workers"] == 1
        before = jobs()

        res = tui("resubmit", "nosuchjob", "--yes")
        assert res.returncode == 1 and len(res.stderr.splitlines()) == 2
        assert "nosuchjob" in res.stderr.splitlines()[0]

        res = tui("resubmit", "quick", "--name", "quick", "--yes")
        assert res.returncode == 1
        assert res.stderr.splitlines() == [
            "error: job name 'quick' is taken: nothing submitted",
            "hint: pick another --name, or leave it out for quick-2",
        ]

        # --apply-fixes is the name --apply-remedies had first, kept for scripts that use it.
        for flag in ("--apply-remedies", "--apply-fixes"):
            res = tui("resubmit", "quick", flag, "--yes")
            assert res.returncode == 0, (flag, res.stderr)
            assert res.stdout == (
                "no remedy to apply: diagnose finds nothing wrong with quick; nothing submitted\n"
            )

        res = tui("resubmit", "quick", "--set", "workers=two", "--yes")
        assert res.returncode == 2
        assert res.stderr.startswith("error: --set workers=two: workers: 'two': expected")
        res = tui("resubmit", "quick", "--set", "trainer.lr=0.01", "--yes")
        assert res.returncode == 2  # `sh -c` runs no trainer: it has no trainer flag to set
        assert res.stderr.startswith(
            "error: --set trainer.lr=0.01: trainer.lr: the command does not run the trainer"
        )

        res = tui("resubmit", "quick", "--json")
        assert res.returncode == 2 and res.stderr.startswith("error: --json goes with --dry-run")

        res = tui("resubmit", "quick")  # no terminal: asks for --yes
        assert res.returncode == 2
        assert res.stderr.startswith("error: refusing to submit 'quick-2' without a terminal")
        assert jobs() == before

        # --dry-run: every override shown, the argv difference, the new command line.
        res = tui("resubmit", "quick", "--set", "workers=2", "--dry-run")
        assert res.returncode == 0, res.stderr
        out = res.stdout.splitlines()
        assert out[0].startswith("resubmit quick as quick-2, from the recorded submission")
        assert "  --set workers=2  yours" in out
        assert any(line.startswith("≠ --workers") and line.endswith("2") for line in out)
        # The command as runai-local is executed: its path, then runai's words.
        program, rest = out[-1].split(" ", 1)
        assert program.endswith("/runai-local")
        assert rest.startswith("training pytorch submit quick-2 ")
        # The record is no difference; the command shows it, as the submit sends it.
        assert submission_record.ANNOTATION not in "\n".join(out[:-1])
        res = tui("resubmit", "quick", "--set", "workers=2", "--dry-run", "--json")
        plan = json.loads(res.stdout)
        assert out[-1] == display_argv(plan["argv"])
        assert submission_record.decode(
            next(w for w in plan["argv"] if w.startswith(submission_record.ANNOTATION)).partition(
                "="
            )[2]
        ).sets == ("workers=2",)
        assert (plan["job"], plan["name"], plan["submitted"]) == ("quick", "quick-2", None)
        assert plan["overrides"] == [{"set": "workers=2", "from": "--set", "code": "", "why": ""}]
        assert {"key": "--workers", "before": "1", "after": "2"} in plan["diff"]
        assert plan["argv"][4] == "quick-2"
        assert jobs() == before

        # The resubmit executes runai-local with exactly the argv its dry run showed.
        res = tui("resubmit", "quick", "--set", "workers=2", "--yes")
        assert res.returncode == 0, res.stderr
        assert json.dumps(describe("quick-2")["spec"]["submitArgv"]) == json.dumps(plan["argv"])
    finally:
        tui("delete", "quick", "quick-2", "--yes")
