"""Pure helpers: literal display text and the trainer's metric lines."""

from __future__ import annotations

import json
import math

from runai_tui.knowledge.records.progress import TrainingProgress, parse_metric_line
from runai_tui.util.text import literal


def test_literal_neutralises_escapes_and_keeps_markup_text() -> None:
    assert literal("\x1b[2J") == "^[[2J"
    assert literal("\x1b]0;pwned\x07") == "^[]0;pwned^G"
    assert literal("[bold red]boom[/]") == "[bold red]boom[/]"
    assert literal("a\x9bb") == "a\\x9bb"  # C1 CSI
    assert literal("del\x7f") == "del^?"
    assert literal("crlf\r") == "crlf"
    assert literal("a\tb") == "a       b"
    assert "\x1b" not in literal("\x1b" * 10)


def test_literal_cuts_very_long_lines() -> None:
    shown = literal("x" * 10_000, max_chars=100)
    assert shown.startswith("x" * 100)
    assert shown.endswith("[9900 more characters]")


def test_metric_lines_parse_with_prefixes_and_ignore_others() -> None:
    line = '{"kind":"train","step":5,"epoch":1,"loss":0.5,"lr":0.001,"images_per_sec":20.5}'
    assert parse_metric_line(line)["step"] == 5
    assert parse_metric_line("[rank0]: " + line)["loss"] == 0.5
    assert parse_metric_line("loss went down") is None
    assert parse_metric_line('{"kind": ') is None
    assert parse_metric_line('{"no_kind": 1}') is None


def test_progress_tracks_latest_values_and_bounded_loss_history() -> None:
    progress = TrainingProgress()
    assert not progress.feed("epoch 0 starting")
    assert progress.summary() == "no training metrics yet"
    for step in range(1, 501):
        record = (
            f'{{"kind":"train","step":{step},"epoch":{step // 100},"loss":{1.0 / step},'
            f'"lr":0.01,"images_per_sec":33.3,"total_steps":500}}'
        )
        assert progress.feed(record)
    assert (progress.step, progress.epoch, progress.total_steps) == (500, 5, 500)
    assert math.isclose(progress.loss, 1 / 500)
    assert len(progress.losses) == 400  # bounded
    progress.feed('{"kind":"eval","step":500,"epoch":5,"map":0.123,"map50":0.25,"eval_time":3.5}')
    assert progress.summary() == (
        "step 500/500 · epoch 5 · loss 0.0020 · lr 1.0e-02 · 33.3 img/s"
        " · eval: map 0.1230, map50 0.2500"
    )
    progress.feed('{"kind":"done","step":500,"epoch":5}')
    assert progress.summary().endswith(" · finished")


def test_progress_ignores_bad_values() -> None:
    progress = TrainingProgress()
    progress.feed('{"kind":"train","step":"x","loss":NaN,"lr":true}')
    assert progress.step is None and progress.loss is None and progress.lr is None
    assert not progress.losses


def test_progress_keeps_step_times_for_the_plan() -> None:
    progress = TrainingProgress()
    progress.feed('{"kind":"train","step":1,"loss":1.0}')
    assert progress.step_time is None and not progress.step_times
    for step, seconds in ((20, 2.5), (40, 0.5), (60, "slow"), (80, -1), (100, 0.25)):
        progress.feed(f'{{"kind":"train","step":{step},"step_time":{json.dumps(seconds)}}}')
    assert progress.step_time == 0.25
    assert list(progress.step_times) == [2.5, 0.5, 0.25]  # non-numbers and non-positive skipped


def test_a_resumed_run_says_how_often_and_the_steps_lost() -> None:
    from runai_tui.knowledge.records.progress import TrainingProgress

    progress = TrainingProgress()
    progress.feed('{"kind": "train", "step": 9, "loss": 1.0}')
    assert "resumed" not in progress.summary()
    progress.feed('{"kind": "resume", "step": 8, "lost": 1, "resumes": 2, "lost_total": 3}')
    assert "resumed 2x, 3 steps lost" in progress.summary()
