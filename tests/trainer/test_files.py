"""The trainer's atomic writer (checkpoints, run.json, synthetic images on a shared PVC): new
files honour the umask, replaced files keep their mode, the directory is fsynced. It is
runai-tui's too: runai_tui/util/atomic.py is a link to trainer/files.py."""

from __future__ import annotations

import os
import stat

import pytest
from PIL import Image

from trainer import files
from trainer.data import synthetic


@pytest.fixture
def set_umask():
    previous = os.umask(0o022)
    os.umask(previous)
    yield os.umask
    os.umask(previous)


def mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


@pytest.mark.parametrize(("mask", "expected"), [(0o022, 0o644), (0o002, 0o664)])
def test_new_files_honour_the_umask(tmp_path, set_umask, mask, expected):
    set_umask(mask)
    path = str(tmp_path / "runs" / "run.json")
    files.atomic_write(path, "{}")
    assert mode(path) == expected
    assert sorted(os.listdir(tmp_path / "runs")) == ["run.json"]


def test_a_replaced_file_keeps_its_mode_and_the_directory_is_fsynced(
    tmp_path, set_umask, monkeypatch
):
    set_umask(0o002)
    path = tmp_path / "metrics.jsonl"
    path.write_text("old\n")
    path.chmod(0o640)
    synced = []
    real = files.fsync_directory
    monkeypatch.setattr(files, "fsync_directory", lambda d: (synced.append(d), real(d)))
    files.atomic_write(str(path), "new\n")
    assert path.read_text() == "new\n" and mode(path) == 0o640
    assert synced == [tmp_path]


def test_the_synthetic_writer_uses_the_atomic_helper(tmp_path, set_umask, monkeypatch):
    set_umask(0o002)
    index = synthetic.make_synthetic_index(2, 1, seed=0, base_size=48, split="train")
    used = []
    real = files.atomic_open_binary
    monkeypatch.setattr(synthetic, "atomic_open_binary", lambda p: (used.append(p), real(p))[1])
    synthetic.write_jpegs(index, str(tmp_path / "images"), seed=0)
    names = sorted(os.listdir(tmp_path / "images"))
    assert names == [index.file_name(0), index.file_name(1)] and len(used) == 2
    for name in names:
        path = tmp_path / "images" / name
        assert mode(path) == 0o664
        assert Image.open(path).format == "JPEG"


def test_runai_tui_writes_with_this_very_file():
    from pathlib import Path

    from runai_tui.util import atomic

    link = Path(atomic.__file__)
    assert link.is_symlink() and link.resolve() == Path(files.__file__).resolve()
