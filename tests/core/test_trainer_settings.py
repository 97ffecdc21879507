"""`--set trainer.NAME=VALUE`: a flag of the trainer, validated against its flag table
(runai_tui/trainer_flags/, generated from trainer/config.py) and written exactly once into the
profile's command or args; through the real `runai-tui` for submit, lint and plan."""

from __future__ import annotations

import json

import pytest

from runai_tui.knowledge.trainer_facts import trainer_args
from runai_tui.profiles import ProfileError, ProfileStore, apply_overrides
from runai_tui.trainer_flags import set_flag as set_trainer_flag
from tests.core.test_cli import run

ENTRY = ["/data/scripts/vision/shell/train-retinanet-ddp.sh"]
LOCAL = ProfileStore().load("retinanet-local")


def test_replaces_the_value_where_args_pass_the_flag() -> None:
    args = ["--lr", "0.1", "--batch-size", "2"]
    assert set_trainer_flag(ENTRY, args, "lr", "0.01") == (
        ENTRY,
        ["--lr", "0.01", "--batch-size", "2"],
    )


def test_keeps_the_equals_spelling() -> None:
    args = ["--dataset", "coco", "--batch-size=2"]
    assert set_trainer_flag(ENTRY, args, "batch-size", "4")[1] == [
        "--dataset",
        "coco",
        "--batch-size=4",
    ]


def test_appends_the_flag_when_nothing_passes_it() -> None:
    assert set_trainer_flag(ENTRY, ["--workers", "0"], "amp", "bf16")[1] == [
        "--workers", "0", "--amp", "bf16"
    ]  # fmt: skip


def test_the_flag_appears_exactly_once_even_when_given_twice_and_in_the_command() -> None:
    command = ["python", "-m", "trainer", "--lr", "0.5"]
    command2, args = set_trainer_flag(
        command, ["--lr=0.2", "--seed", "1", "--lr", "9"], "lr", "0.01"
    )
    assert command2 == ["python", "-m", "trainer", "--lr", "0.01"]
    assert args == ["--seed", "1"]


def test_words_before_the_trainer_are_not_its_flags() -> None:
    command = ["torchrun", "--nproc-per-node", "2", "-m", "trainer"]
    assert set_trainer_flag(command, [], "workers", "2") == (command, ["--workers", "2"])


def test_a_boolean_flag_is_the_switch_or_its_no_form() -> None:
    on = set_trainer_flag(ENTRY, ["--no-sync-bn", "--seed", "1"], "sync-bn", "true")[1]
    assert on == ["--sync-bn", "--seed", "1"]
    off = set_trainer_flag(ENTRY, on, "sync-bn", "false")[1]
    assert off == ["--no-sync-bn", "--seed", "1"]
    # Empty: the trainer's default again (the flag removed)
    assert set_trainer_flag(ENTRY, off, "sync-bn", "")[1] == ["--seed", "1"]
    assert set_trainer_flag(ENTRY, ["--lr", "1"], "lr", "")[1] == []


def test_an_auto_on_off_switch_alone_does_not_take_the_next_flag_as_its_value() -> None:
    args = ["--compile", "--seed", "1", "--channels-last", "off"]
    assert set_trainer_flag(ENTRY, args, "compile", "off")[1] == [
        "--compile", "off", "--seed", "1", "--channels-last", "off"
    ]  # fmt: skip
    assert set_trainer_flag(ENTRY, args, "channels-last", "on")[1] == [
        "--compile", "--seed", "1", "--channels-last", "on"
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("lr", "abc", "'abc': expected a number (the trainer's --lr)"),
        ("batch-size", "2.5", "'2.5': expected a whole number (the trainer's --batch-size)"),
        ("amp", "bf17", "'bf17': expected one of auto, none, fp16, bf16"),
        ("sync-bn", "maybe", "'maybe': expected true or false (--sync-bn or --no-sync-bn)"),
        ("compile", "yes", "'yes': expected one of auto, on, off"),
        (
            "ddp-comm-hook",
            "int8",
            "'int8': expected none, bf16, fp16, powersgd or powersgd:RANK (e.g. powersgd:2)",
        ),
    ],
)
def test_a_value_the_trainer_would_refuse_is_refused(name: str, value: str, message: str) -> None:
    with pytest.raises(ValueError) as error:
        set_trainer_flag(ENTRY, [], name, value)
    assert str(error.value) == message


def test_the_override_goes_through_the_field_table_and_the_plan_reads_it() -> None:
    profile = apply_overrides(
        LOCAL, ["trainer.batch_size=4", "trainer.lr=0.01", "trainer.amp=none"]
    )
    words = trainer_args(profile)
    assert words is not None
    assert words.count("--batch-size") == 1 and words[words.index("--batch-size") + 1] == "4"
    assert words[-4:] == ["--amp", "none", "--lr", "0.01"]  # --amp replaced, --lr appended
    assert len(words) == len(LOCAL.args) + 2
    assert profile.origins["args"][0] == "--set trainer.amp=none"
    with pytest.raises(ProfileError) as error:
        apply_overrides(LOCAL, ["trainer.lr=0.01", "trainer.lrr=1", "trainer.frobnicate=2"])
    assert [str(p) for p in error.value.problems] == [
        "--set trainer.lrr=1: trainer.lrr: not a flag of the trainer; did you mean 'trainer.lr'?",
        "--set trainer.frobnicate=2: trainer.frobnicate: not a flag of the trainer; see: python -m trainer --help",
    ]


def test_a_command_that_does_not_run_the_trainer_has_no_trainer_flags() -> None:
    other = apply_overrides(LOCAL, ["command=[python, train.py]", "args=[]"])
    with pytest.raises(ProfileError) as error:
        apply_overrides(other, ["trainer.lr=0.01"])
    assert str(error.value.problems[0]) == (
        "--set trainer.lr=0.01: trainer.lr: the command does not run the trainer "
        "(.../train-retinanet-ddp.sh or -m trainer); set args or command instead"
    )


# --- the real CLI ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("item", "line"),
    [
        (
            "trainer.lrr=1",
            "error: --set trainer.lrr=1: trainer.lrr: not a flag of the trainer; did you mean "
            "'trainer.lr'?",
        ),
        (
            "trainer.lr=fast",
            "error: --set trainer.lr=fast: trainer.lr: 'fast': expected a number (the trainer's "
            "--lr)",
        ),
        (
            "trainer.amp=bf17",
            "error: --set trainer.amp=bf17: trainer.amp: 'bf17': expected one of auto, none, "
            "fp16, bf16",
        ),
        ("lr=0.01", "error: --set lr=0.01: lr: unknown field; did you mean 'trainer.lr'?"),
    ],
)
def test_submit_refuses_a_bad_trainer_setting_with_one_line_and_exit_2(
    item: str, line: str
) -> None:
    out = run("submit", "--profile", "retinanet-tcp", "--set", item, "--dry-run")
    assert out.returncode == 2
    assert out.stderr.splitlines() == [line]
    assert out.stdout == ""


def test_submit_dry_run_json_passes_each_flag_once() -> None:
    out = run(
        "submit", "--profile", "retinanet-local", "--dry-run", "--json",
        "--set", "trainer.batch-size=4", "--set", "trainer.lr=0.01", "--set", "trainer.sync-bn=true",
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    argv = json.loads(out.stdout)["argv"]
    tail = argv[argv.index("--") + 1 :]
    assert tail.count("--batch-size") == 1 and tail[tail.index("--batch-size") + 1] == "4"
    assert tail[-3:] == ["--lr", "0.01", "--sync-bn"]
    record = next(w for w in argv if w.startswith("runai-tui.io/submission="))
    assert '"sets":["trainer.batch-size=4","trainer.lr=0.01","trainer.sync-bn=true"]' in record


def test_plan_shows_the_global_batch_and_the_scaled_lr_of_the_overrides() -> None:
    base = run("plan", "retinanet-local", "--no-measure", "--json")
    assert base.returncode == 0, base.stderr
    before = json.loads(base.stdout)
    out = run(
        "plan", "retinanet-local", "--no-measure", "--json",
        "--set", "trainer.batch-size=4", "--set", "trainer.lr=0.01",
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    plan = json.loads(out.stdout)
    assert plan["batch_size"] == 4 and plan["global_batch"] == 4 * plan["world_size"]
    assert plan["global_batch"] == 2 * before["global_batch"]
    assert plan["lr"] == pytest.approx(0.01 * plan["global_batch"] / 16)
    assert plan["lr_rule"] == f"0.01 (--lr) x {plan['global_batch']} / 16 (--lr-base-batch)"
    text = run("plan", "retinanet-local", "--no-measure", "--set", "trainer.batch-size=4")
    assert f"global batch: {plan['global_batch']}\n" in text.stdout


def test_lint_reads_the_overridden_flags() -> None:
    before = run("lint", "retinanet-tcp")
    assert "tcp-uncompressed-gradients" in before.stdout
    after = run("lint", "retinanet-tcp", "--set", "trainer.ddp-comm-hook=bf16")
    assert after.returncode in (0, 1), after.stderr
    assert "tcp-uncompressed-gradients" not in after.stdout
    bad = run("lint", "retinanet-tcp", "--set", "trainer.batch-size=two")
    assert bad.returncode == 2
    assert "'two': expected a whole number" in bad.stderr


def test_resubmit_counts_a_trainer_flag_and_args_as_the_same_field() -> None:
    """A remedy `trainer.workers=2` and your `--set args=[…]` both write args: yours wins."""
    from runai_tui.workflows.resubmit import _conflicts, _key

    assert _conflicts("trainer.workers", "args") and _conflicts("command", "trainer.lr")
    assert _conflicts("trainer.lr", "trainer.lr")
    assert _conflicts(_key("trainer.batch_size=4"), _key("trainer.batch-size=2"))
    assert not _conflicts("trainer.lr", "trainer.workers") and not _conflicts("trainer.lr", "env")
