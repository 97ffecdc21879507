"""watch, report and bundle without a running job: bad input is one line and exit 2 with nothing
submitted, one watcher per job (the lock, its stale holder taken over), and the figures the
report reads from the trainer's lines (steps lost after a resume, the work redone)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

import pytest

from runai_tui.cli import main
from runai_tui.knowledge.records.redone import redone
from runai_tui.shapes.errors import RuntimeFailure
from runai_tui.shapes.models import Phase
from runai_tui.util import paths
from runai_tui.util.redaction import Redactor
from runai_tui.workflows import watch_lock
from runai_tui.workflows.chain_report import chains_of
from runai_tui.workflows.watcher import Attempt, Policy


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, list[str]]:
    code = main(["--backend", "local", *argv])
    captured = capsys.readouterr()
    return code, captured.err.splitlines()


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["watch", "nope", "--recover"], "error: job 'nope': no such job"),
        (["watch", "--sweep", "lr.3fa9c1", "--recover"], "error: sweep lr.3fa9c1 has no jobs"),
        (["watch", "nope", "--max-attempts", "0"],
         "error: --max-attempts 0: must be 1 or more (the first submission counts as one)"),
        (["watch", "--recover"], "error: watch: give jobs or --sweep ID, one of them"),
        (["report", "--since", "yesterday"],
             "error: --since 'yesterday' is not a duration (expected digits and a unit)"),
        (["report", "--sweep", "lr.3fa9c1"], "error: sweep lr.3fa9c1 has no jobs"),
        (["bundle", "nope", "-o", "/nonexistent/dir/x.tar.gz"],
         "error: -o /nonexistent/dir/x.tar.gz: cannot write the bundle there: its folder "
         "/nonexistent/dir does not exist"),
    ],
)  # fmt: skip
def test_bad_input_is_one_line_exit_2_and_nothing_is_submitted(
    capsys: pytest.CaptureFixture[str], argv: list[str], said: str
) -> None:
    code, err = run(capsys, *argv)
    assert (code, err[0]) == (2, said)
    assert len(err) == 2 and err[1].startswith("hint: ")
    assert main(["--backend", "local", "list", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == []  # nothing submitted


def test_a_bundle_of_an_unknown_job_or_into_a_folder_is_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, err = run(capsys, "bundle", "nope", "-o", str(tmp_path / "x.tar.gz"))
    assert (code, err[0]) == (2, "error: job 'nope': no such job")
    assert not (tmp_path / "x.tar.gz").exists()
    code, err = run(capsys, "bundle", "nope", "-o", str(tmp_path))
    assert (code, err[0]) == (2, f"error: -o {tmp_path}: cannot write the bundle there: it is a "
                                 "folder")  # fmt: skip


def test_one_watcher_per_job_and_a_stale_lock_is_taken_over() -> None:
    first = watch_lock.take("team-a", "wk")
    assert first.took_over == ""
    with pytest.raises(RuntimeFailure, match=rf"^job wk is already watched by pid {os.getpid()} "):
        watch_lock.take("team-a", "wk")
    other = watch_lock.take("team-b", "wk")  # another project's job of that name
    other.release()
    first.release()
    again = watch_lock.take("team-a", "wk")  # released: free, and nobody's to take over
    assert again.took_over == ""
    again.release()
    # A watcher killed with its lock: the file still names it, the kernel's lock is gone.
    path = paths.state_dir() / "watch" / "team-a" / "wk.lock"
    path.write_text(json.dumps({"pid": 999999, "host": "laptop", "started": 1795000000.0}))
    stale = watch_lock.take("team-a", "wk")
    assert stale.took_over.startswith("pid 999999 on laptop since ")
    assert json.loads(path.read_text())["pid"] == os.getpid()
    stale.release()


def train(step: int, when: float, loss: float = 1.0) -> str:
    return json.dumps({"kind": "train", "step": step, "loss": loss, "time": when})


def test_steps_lost_are_the_steps_trained_again_after_a_resume() -> None:
    first = [train(s, 100.0 + 10 * s, loss=2.0 - s / 10) for s in range(1, 8)]  # killed after 7
    # The trainer's resume record counts the steps its metrics.jsonl had past the checkpoint
    # (a run whose log is gone included); the free-form resume line is not read.
    second = [
        "trainer: resumed from /data/runs/wk/checkpoints/step-000000006.pt: step 6, epoch 0, "
        "batch 6 of the epoch",
        json.dumps({"kind": "resume", "step": 6, "lost": 1, "resumes": 1, "lost_total": 1}),
        *(train(s, 500.0 + 10 * s, loss=1.5) for s in range(7, 13)),
        json.dumps({"kind": "eval", "step": 12, "map": 0.125}),
        json.dumps({"kind": "eval", "step": 12, "map": 0.25}),
    ]
    figures = redone(first + second)
    # Resumed from step 6: step 7 is trained again; the first run spent 10 s past step 6.
    assert (figures.steps, figures.seconds, figures.resumes) == (1, 10.0, 1)
    assert (figures.last_step, figures.best_map) == (12, 0.25)
    assert figures.best_loss == pytest.approx(1.3)
    # Without the resume record (a log cut short), the step sequence going back says it.
    bare = redone(first + [train(s, 500.0 + s, 1.5) for s in range(5, 9)])
    assert (bare.steps, bare.seconds, bare.resumes) == (3, 30.0, 1)
    assert redone(first).steps == 0
    # The record's own count wins over the steps seen (a metrics.jsonl that held more).
    record = json.dumps({"kind": "resume", "step": 6, "lost": 2, "resumes": 1, "lost_total": 2})
    counted = redone([*first, record, *second[2:]])
    assert (counted.steps, counted.seconds, counted.resumes) == (2, 10.0, 1)
    # A resume whose earlier log is gone: the newest record's run totals are the floor.
    later = json.dumps({"kind": "resume", "step": 9, "lost": 1, "resumes": 3, "lost_total": 5})
    gone = redone([train(9, 1.0), train(10, 2.0), later])
    assert (gone.steps, gone.resumes) == (5, 3)


def attempt(name: str, number: int, parent: str | None, minute: int) -> Attempt:
    created = datetime(2026, 11, 28, 1, minute, tzinfo=timezone.utc)
    return Attempt(name, number, parent, Phase.FAILED, created)


def test_jobs_group_into_chains_by_their_records() -> None:
    jobs = [
        attempt("wk-r3", 3, "wk-r2", 30),
        attempt("wk", 1, None, 0),
        attempt("lr-1", 1, None, 5),
        attempt("wk-r2", 2, "wk", 10),
        attempt("orphan-r2", 2, "orphan", 20),  # its parent was deleted: it starts its chain
    ]
    chains = chains_of(jobs)
    assert [[a.name for a in c.attempts] for c in chains] == [
        ["wk", "wk-r2", "wk-r3"], ["lr-1"], ["orphan-r2"]]  # fmt: skip
    assert Policy(backoff=60).delay(1) == 60 and Policy(backoff=60).delay(3) == 240
    assert Policy(backoff=60).delay(20) == 1800  # capped


def test_the_bundle_redacts_every_value_the_record_redacts() -> None:
    described = {
        "spec": {
            "submitArgv": ["runai", "-e", "HF_TOKEN=hf_abcdef123", "-e", "NCCL_DEBUG=INFO",
                           "-e", "TOKEN_FILE=/run/secret"],
            "env": {"WANDB_API_KEY": "wandb-key-42", "DB_PASSWORD": "${DB_PASSWORD}",
                    "API_KEY": "1"},
            "pods": [{"env": [{"name": "AWS_SECRET_ACCESS_KEY", "value": "aws-xyz"}]}],
        }
    }  # fmt: skip
    redactor = Redactor(scan=False)
    redactor.learn(described)
    assert redactor.known == {"hf_abcdef123", "wandb-key-42", "aws-xyz"}
    assert redactor.short == {"API_KEY"}  # under 6 characters: replaced only where it lives
    text = "login with hf_abcdef123 then wandb-key-42 aws-xyz, at step 1"
    assert redactor.text(text) == "login with <redacted> then <redacted> <redacted>, at step 1"
    shown = json.dumps(redactor.document(described))
    assert "hf_abcdef123" not in shown and "aws-xyz" not in shown and "${DB_PASSWORD}" in shown
    assert '"API_KEY": "<redacted:short>"' in shown


def test_watch_report_and_bundle_import_neither_textual_nor_torch(tmp_path: Path) -> None:
    code = (
        "import sys, io, contextlib\n"
        "from runai_tui.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):\n"
        "    assert main(['--backend', 'local', 'report', '--since', '1h']) == 0\n"
        "    assert main(['--backend', 'local', 'watch', 'nope', '--recover']) == 2\n"
        f"    assert main(['--backend', 'local', 'bundle', 'nope', '-o', '{tmp_path}/b.tgz']) == 2\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('textual', 'torch', 'rich')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "[]"
