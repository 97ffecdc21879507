"""Atomic writes on a shared PVC: new files honour the umask, replaced files keep their mode,
the directory is fsynced, and a failed write leaves the old file and no temp file behind."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from runai_tui.tui.files import write_lines_atomic
from runai_tui.util import atomic
from runai_tui.util.atomic import atomic_open, atomic_write


@pytest.fixture
def umask() -> Iterator[callable]:
    previous = os.umask(0o022)
    os.umask(previous)

    def set_umask(value: int) -> None:
        os.umask(value)

    yield set_umask
    os.umask(previous)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.parametrize(("mask", "expected"), [(0o022, 0o644), (0o002, 0o664)])
def test_a_new_file_honours_the_umask(tmp_path: Path, umask, mask: int, expected: int) -> None:
    umask(mask)
    target = tmp_path / "profiles" / "mine.yaml"
    atomic_write(target, "a: 1\n")
    assert target.read_text() == "a: 1\n"
    assert mode(target) == expected
    log = tmp_path / "saved.log"
    assert write_lines_atomic(log, ["x", "y"]) == 2
    assert mode(log) == expected


@pytest.mark.parametrize("mask", [0o022, 0o002, 0o077])
def test_a_replaced_file_keeps_its_mode(tmp_path: Path, umask, mask: int) -> None:
    umask(mask)
    target = tmp_path / "run.json"
    target.write_text("old")
    target.chmod(0o640)
    atomic_write(target, "new")
    assert target.read_text() == "new"
    assert mode(target) == 0o640


def test_a_failed_write_keeps_the_old_file_and_leaves_no_temp(tmp_path: Path) -> None:
    target = tmp_path / "x.yaml"
    target.write_text("old")
    with pytest.raises(RuntimeError), atomic_open(target) as handle:
        handle.write("half")
        raise RuntimeError("boom")
    assert target.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.yaml"]


def test_the_directory_is_fsynced_after_the_rename(tmp_path: Path, monkeypatch) -> None:
    synced: list[Path] = []
    real = atomic.fsync_directory
    monkeypatch.setattr(atomic, "fsync_directory", lambda d: (synced.append(d), real(d)))
    atomic_write(tmp_path / "a" / "b.txt", "x")
    assert synced == [tmp_path / "a"]
