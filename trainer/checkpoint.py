"""Checkpoints: atomic files of plain data that ``torch.load(..., weights_only=True)`` accepts.

Layout: OUTPUT_DIR/checkpoints/step-000001234.pt, newest K kept. Resume takes the newest file that
loads; a file cut short by a crash never has its final name, because it is written to a temporary
file, fsynced and renamed.
"""

from __future__ import annotations

import contextlib
import functools
import os
import random
import re
from collections.abc import Callable, Mapping
from typing import Any, TypedDict

import numpy as np
import torch

from trainer import run_lock
from trainer.errors import ConfigError, TrainerError
from trainer.files import atomic_open_binary

FORMAT_VERSION = 1
NAME = re.compile(r"^step-(\d{9})\.pt$")
# A checkpoint's contents as weights-only loading gives them back: plain data and tensors, read
# by key (model, optimizer, progress, rng, stream, config, ...).
Contents = dict[str, Any]


class _GeneratorStates(TypedDict):
    torch: torch.Tensor
    numpy: list[object]  # the legacy MT19937 state (numpy_state_to_plain)
    python: list[Any]  # random.getstate() as [version, internal state, gauss]


class RngState(_GeneratorStates, total=False):
    """One process's generators as tensors and plain lists (CUDA's where there is one)."""

    cuda: torch.Tensor


def checkpoint_dir(output_dir: str) -> str:
    return os.path.join(output_dir, "checkpoints")


def list_checkpoints(output_dir: str) -> list[tuple[int, str]]:
    """(step, path), newest first."""
    directory = checkpoint_dir(output_dir)
    if not os.path.isdir(directory):
        return []
    found = []
    for name in os.listdir(directory):
        m = NAME.match(name)
        if m:
            found.append((int(m.group(1)), os.path.join(directory, name)))
    return sorted(found, reverse=True)


def atomic_torch_save(
    obj: object, path: str, before_replace: Callable[[], None] | None = None
) -> None:
    with atomic_open_binary(path, before_replace) as f:
        torch.save(obj, f)


def save_checkpoint(output_dir: str, step: int, state: Mapping[str, object], keep: int) -> str:
    """Write step-N.pt, then delete the complete checkpoints of earlier steps beyond the newest
    ``keep``. Never a temporary file (another writer's `.step-….pt.*.tmp`, about to be renamed)
    and never a later step than this one: the clean-up touches only what this run has passed.
    A run whose output-dir lock was taken over writes nothing: run_lock.LockLost, checked
    before the write and again before its rename (the write takes seconds)."""
    run_lock.check_held(output_dir)
    path = os.path.join(checkpoint_dir(output_dir), f"step-{step:09d}.pt")
    fence = functools.partial(run_lock.check_held, output_dir)
    atomic_torch_save({"format": FORMAT_VERSION, **state}, path, fence)
    for _, old in older_checkpoints(output_dir, step, keep):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(old)
    return path


def older_checkpoints(output_dir: str, step: int, keep: int) -> list[tuple[int, str]]:
    """The complete checkpoints the rotation after saving STEP deletes: those of earlier steps,
    past the newest ``keep`` counting STEP's own."""
    earlier = [(s, path) for s, path in list_checkpoints(output_dir) if s < step]
    return earlier[max(keep - 1, 0) :]


def load_checkpoint(path: str) -> Contents:
    try:
        ckpt = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # a truncated or foreign file; torch raises several types
        raise TrainerError(
            f"{path}: cannot load checkpoint ({type(exc).__name__}: {exc})"
        ) from None
    if not isinstance(ckpt, dict) or ckpt.get("format") != FORMAT_VERSION:
        raise TrainerError(f"{path}: not a trainer checkpoint (format {FORMAT_VERSION} expected)")
    return ckpt


def find_resume_checkpoint(
    output_dir: str, resume: str, warn: Callable[[str], None] = print
) -> tuple[str, Contents] | None:
    """``resume``: auto (newest loadable in the output dir), none, or a path."""
    if resume == "none":
        return None
    if resume != "auto":
        return resume, load_checkpoint(resume)
    for _, path in list_checkpoints(output_dir):
        try:
            return path, load_checkpoint(path)
        except TrainerError as exc:
            warn(f"skipping unreadable checkpoint: {exc}")
    return None


def check_compatible(ckpt: Contents, path: str, model: str, class_names: list[str]) -> None:
    saved = ckpt.get("config", {})
    if saved.get("model") != model:
        raise ConfigError(
            f"{path}: checkpoint is for --model {saved.get('model')}, this run uses {model}; "
            "use a fresh --output-dir or --resume none"
        )
    saved_classes = ckpt.get("class_names", [])
    if len(saved_classes) != len(class_names):
        raise ConfigError(
            f"{path}: checkpoint has {len(saved_classes)} classes, the dataset has "
            f"{len(class_names)}; use a fresh --output-dir or --resume none"
        )
    if saved_classes != class_names:
        first = next(
            i for i, (a, b) in enumerate(zip(saved_classes, class_names, strict=True)) if a != b
        )
        raise ConfigError(
            f"{path}: class {first + 1} is {saved_classes[first]!r} in the checkpoint but "
            f"{class_names[first]!r} in the dataset; use a fresh --output-dir or --resume none"
        )


def numpy_state_to_plain(np_state: object) -> list[object]:
    """A legacy MT19937 state tuple as a list that weights-only loading accepts."""
    assert isinstance(np_state, tuple)  # the legacy generator's state is a tuple
    return [np_state[0], torch.from_numpy(np_state[1].astype(np.int64)), *np_state[2:]]


def numpy_state_from_plain(saved: list[Any]) -> tuple[Any, ...]:
    kind, keys, *rest = saved
    return (kind, keys.numpy().astype(np.uint32), *rest)


def rng_state() -> RngState:
    """This process's generators as tensors and plain lists."""
    state: RngState = {
        "torch": torch.get_rng_state(),
        "numpy": numpy_state_to_plain(np.random.get_state(legacy=True)),
        "python": [random.getstate()[0], list(random.getstate()[1]), random.getstate()[2]],
    }
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state()
    return state


def set_rng_state(state: RngState) -> None:
    torch.set_rng_state(state["torch"])
    np.random.set_state(numpy_state_from_plain(state["numpy"]))
    version, internal, gauss = state["python"]
    random.setstate((version, tuple(internal), gauss))
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state(state["cuda"])
