"""Sweeps without a cluster: the grid's parsing, the product, the names and their checks, the sweep
ID, and the record's sweep fields (old records still readable)."""

from __future__ import annotations

import json

import pytest

from runai_tui import submission_record, sweep
from runai_tui.errors import UsageError
from runai_tui.local import jobspec


def test_grid_values_split_on_commas_outside_brackets() -> None:
    axes = sweep.parse_grid(["trainer.lr=0.01, 0.02,0.04", "args=[a,b],[c]"])
    assert axes == [
        sweep.Axis("trainer.lr", ("0.01", "0.02", "0.04")),
        sweep.Axis("args", ("[a,b]", "[c]")),
    ]


def test_the_product_varies_the_first_grid_slowest() -> None:
    axes = sweep.parse_grid(["trainer.lr=0.01,0.02", "trainer.batch-size=2,4,8"])
    combos = sweep.combinations(axes)
    assert len(combos) == 6
    assert combos[0] == {"trainer.lr": "0.01", "trainer.batch-size": "2"}
    assert combos[1] == {"trainer.lr": "0.01", "trainer.batch-size": "4"}
    assert combos[3] == {"trainer.lr": "0.02", "trainer.batch-size": "2"}
    assert sweep.grid_sets(combos[5]) == ["trainer.lr=0.02", "trainer.batch-size=8"]


@pytest.mark.parametrize(
    ("items", "said"),
    [
        ([], "at least one --grid"),
        (["trainer.lr"], "expected FIELD=V1,V2"),
        (["=0.1,0.2"], "expected FIELD=V1,V2"),
        (["trainer.lr="], "expected FIELD=V1,V2"),
        (["trainer.lr=0.1,,0.2"], "an empty value"),
        (["trainer.lr=0.1,0.1"], "'0.1' is given twice"),
        (["trainer.batch-size=2", "trainer.batch_size=4"], "already a grid"),
    ],
)
def test_a_malformed_grid_is_one_usage_error(items: list[str], said: str) -> None:
    with pytest.raises(UsageError) as caught:
        sweep.parse_grid(items)
    assert said in caught.value.message
    assert caught.value.exit_code == 2


def test_names_count_from_one_and_leave_room_for_pod_suffixes() -> None:
    assert sweep.names_for("lr", 3) == ["lr-1", "lr-2", "lr-3"]
    assert sweep.names_for("a" * 47, 9)[-1] == "a" * 47 + "-9"
    assert sweep.names_for("a" * 47, 10)[-1] == "a" * 47 + "-10"  # 50 characters
    with pytest.raises(UsageError, match="at most 50"):
        sweep.names_for("a" * 48, 10)
    with pytest.raises(UsageError, match="DNS-1123"):
        sweep.names_for("Bad_Name", 2)


def test_the_name_limit_is_the_local_clusters() -> None:
    assert sweep.MAX_JOB_NAME == jobspec.MAX_NAME


def test_taken_names_are_all_named() -> None:
    with pytest.raises(UsageError) as caught:
        sweep.check_free(["lr-1", "lr-2", "lr-3"], ["lr-2", "other", "lr-3"], "lr")
    assert "lr-2, lr-3 are taken: nothing submitted" in caught.value.message
    sweep.check_free(["lr-1"], ["lr-10", "lr"], "lr")  # a prefix of a name is no clash


def test_sweep_ids_carry_their_prefix() -> None:
    made = sweep.new_id("retinanet-lr")
    assert sweep.id_prefix(made) == "retinanet-lr"
    assert made != sweep.new_id("retinanet-lr")
    for bad in ("retinanet-lr", "lr.XYZ123", "lr.abc", "Lr.abcdef", ".abcdef"):
        with pytest.raises(UsageError, match="not a sweep ID"):
            sweep.id_prefix(bad)


def test_the_record_carries_the_sweep_and_its_values() -> None:
    record = submission_record.Record(
        "retinanet-local", ("trainer.lr=0.02",), {"job_name": "x"}, "lr-2", (), "lr.0a1b2c",
        {"trainer.lr": "0.02"},
    )  # fmt: skip
    back = submission_record.decode(record.encode())
    assert back == record
    assert json.loads(record.encode())["v"] == submission_record.VERSION


def test_a_record_without_a_sweep_reads_as_before() -> None:
    old = {"v": 2, "profile": "p", "sets": [], "data": {}}
    back = submission_record.decode(json.dumps(old))
    assert back.sweep is None
    assert back.values == {}
    assert "sweep" not in submission_record.Record("p").encode()
    with pytest.raises(ValueError, match="sweep values"):
        submission_record.decode(json.dumps({**old, "sweep": "p.000000", "values": {"a": 1}}))
