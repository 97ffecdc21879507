"""The one reader of a job's submission (knowledge/submitted.py): what describe shows of it, the
argv read word by word with the field table and the trainer's flag table, and the profile rebuilt
from it, as resubmit, compare and the remedies read it."""

from __future__ import annotations

import pytest

from runai_tui.knowledge.compare import argv_diff, submission_fields
from runai_tui.knowledge.submitted import data_from_argv, read_submission
from runai_tui.profiles import ProfileStore, submission_record
from runai_tui.runai import submission
from runai_tui.runai.backend import Backend
from runai_tui.shapes.errors import RuntimeFailure
from runai_tui.shapes.models import Job, JobDetail

LOCAL = Backend("local", ["runai-local"])


def described(name: str, spec: dict, pods: list | None = None) -> JobDetail:
    return JobDetail(Job(name), raw={"spec": spec, "pods": pods or []})


def test_describe_read_once_the_argv_the_record_and_the_pods_command() -> None:
    profile = ProfileStore().load("retinanet-local")
    prepared = submission.prepare(profile, ["workers=2"], backend=LOCAL, name="run")
    assert prepared.record is not None
    argv, record = prepared.argv, prepared.record.encode()
    detail = described(
        "run",
        {
            "submitArgv": argv,
            "workingDir": "/w",
            "annotations": {submission_record.ANNOTATION: record},
        },
        [{"name": "run-master-0", "command": ["python", "-m", "trainer", "--output-dir", "o"]}],
    )
    found = read_submission(detail)
    assert (found.job, found.argv, found.record, found.working_dir) == ("run", argv, record, "/w")
    assert found.pod_command == ["python", "-m", "trainer", "--output-dir", "o"]
    assert found.shown_argv()[0] == argv
    rebuilt = found.rebuild()
    assert rebuilt.sets == ("workers=2",) and rebuilt.profile.workers == 2
    # Without the record the argv is read back; without the argv, the pod's command stands in
    # for compare, and nothing can be rebuilt.
    bare = read_submission(described("run", {"submitArgv": argv}))
    assert bare.record is None and bare.rebuild().profile.workers == 2
    pod_only = read_submission(described("x", {}, [{"command": ["python", "x.py"]}]))
    assert pod_only.shown_argv() == (
        ["--", "python", "x.py"],
        "the master pod's command (describe; no submit argv kept)",
    )
    with pytest.raises(RuntimeFailure, match="cannot be known"):
        pod_only.rebuild()


def test_the_trainers_flags_are_read_by_the_trainers_table() -> None:
    """A boolean takes no value (the word after it is the command's own); an auto/on/off switch
    takes one only when one follows; a valued flag takes the next word."""
    argv = ["runai", "training", "pytorch", "submit", "j", "--large-shm", "--", "python", "-m",
            "trainer", "--sync-bn", "extra", "--compile", "--epochs", "2", "--no-pin-memory",
            "--channels-last", "off", "--classes", "-x"]  # fmt: skip
    assert submission_fields(argv) == [
        ("name", "j"),
        ("--large-shm", "(set)"),
        ("command", "python"),
        ("args -m", "trainer"),
        ("args --sync-bn", "(set)"),
        ("args (word)", "extra"),
        ("args --compile", "(set)"),
        ("args --epochs", "2"),
        ("args --no-pin-memory", "(set)"),
        ("args --channels-last", "off"),
        ("args --classes", "-x"),
    ]


def test_a_flag_without_its_value_is_said_in_one_line() -> None:
    argv = ["runai", "training", "pytorch", "submit", "j", "--workers"]
    with pytest.raises(ValueError, match="--workers: no value after it"):
        data_from_argv(argv)
    with pytest.raises(RuntimeFailure, match="cannot be read back into a profile: --workers"):
        read_submission(described("j", {"submitArgv": argv})).rebuild()
    # compare still lines it up
    assert ("--workers", "(set)") in submission_fields(argv)


def test_resubmits_difference_is_compares_view_of_the_two_argvs() -> None:
    profile = ProfileStore().load("retinanet-local")
    before = submission.prepare(profile, backend=LOCAL, name="a").argv
    after = submission.prepare(profile, ["trainer.lr=0.01"], backend=LOCAL, name="a-2").argv
    rows = {(r.key, r.a, r.b) for r in argv_diff(before, after)}
    assert ("name", "a", "a-2") in rows
    assert ("args --lr", "-", "0.01") in rows


def test_compare_finds_the_run_directory_from_the_same_reading() -> None:
    from runai_tui.workflows.run_sources import DEFAULT_OUTPUT_DIR, output_dir

    pods = [{"command": ["python", "-m", "trainer", "--output-dir", "o"]}]
    found = read_submission(described("j", {"workingDir": "/w"}, pods))
    assert output_dir(found, None) == "/w/o"
    plain = read_submission(described("j", {"workingDir": "/w"}))
    assert output_dir(plain, ["--", "sh", "x.sh", "--output-dir=/abs"]) == "/abs"
    assert output_dir(plain, None) == f"/w/{DEFAULT_OUTPUT_DIR}"
