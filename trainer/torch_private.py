"""Every private torch name the trainer uses, in one place, each found by feature test.

Private names differ between torch builds of the same version (the CPU wheel, PyPI's CUDA wheel,
NGC's images): a signature gains or loses an argument, an entry point exists only where NCCL was
built in, the type stubs differ. So nothing here is chosen by version number or named as an
attribute mypy would check: each candidate is looked up by string, called, and kept only when
its answer has the expected shape. Where none works the caller gets None and a one-line reason,
never an exception.

The list (each with its fallback; tests/trainer/test_torch_private.py covers every row):

| private name | what for | fallback |
|---|---|---|
| torch._C._distributed_c10d._dump_fr_trace(backend=) | Flight Recorder buffer, builds that keep one recorder per backend | the next row |
| torch._C._distributed_c10d._dump_nccl_trace() | the NCCL recorder's buffer (NCCL builds only) | the next row |
| torch._C._distributed_c10d._dump_fr_trace() | the one shared recorder's buffer (no backend argument) | the next row |
| torch._C._distributed_c10d._dump_fr_trace_json() / _dump_nccl_trace_json() | the same buffer as JSON | no in-process dump: torch's own watchdog dump (TORCH_FR_DUMP_ON_TIMEOUT) still works, and the run says so in one line |

torchvision and the rest of torch are used through public names only (the detector's backbone is
built with `BackboneWithFPN`, norm layers are matched by their public classes).
"""

from __future__ import annotations

import importlib
import json
import pickle
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

C10D_MODULE = "torch._C._distributed_c10d"


@dataclass(frozen=True)
class TraceDumper:
    """A working way to read this process's Flight Recorder buffer as torch's dump pickle."""

    name: str  # how it was called, for the log line: "_dump_fr_trace(backend='gloo')"
    read: Callable[[], bytes]


def _candidates(backend: str) -> list[tuple[str, str, dict[str, Any], bool]]:
    """(display name, attribute, keyword arguments, answers in JSON) in order of preference:
    the pickle variants first (they carry everything), the one made for this backend first."""
    no_stacks: dict[str, Any] = {"includeStackTraces": False}
    per_backend = ("_dump_fr_trace", {**no_stacks, "backend": backend})
    nccl = ("_dump_nccl_trace", no_stacks)
    shared = ("_dump_fr_trace", no_stacks)
    pickled = [per_backend, nccl, shared] if backend == "nccl" else [per_backend, shared]
    jsons = ["_dump_nccl_trace_json", "_dump_fr_trace_json"]
    if backend != "nccl":
        jsons.reverse()
    out = [(_display(a, kw), a, kw, False) for a, kw in pickled]
    out += [(f"{a}()", a, {}, True) for a in jsons]
    return out


def _display(attribute: str, kwargs: dict[str, Any]) -> str:
    shown = ", ".join(f"{k}={v!r}" for k, v in kwargs.items() if k != "includeStackTraces")
    return f"{attribute}({shown})"


def _is_trace(data: object) -> bool:
    return isinstance(data, dict) and "entries" in data and "pg_status" in data


def _reader(
    function: Callable[..., bytes], kwargs: dict[str, Any], as_json: bool
) -> Callable[[], bytes]:
    def read() -> bytes:
        raw = function(**kwargs)
        if as_json:  # the same fields; written as the pickle the dump readers expect
            return pickle.dumps(json.loads(raw))
        return bytes(raw)

    return read


def find_trace_dumper(backend: str, module: object | None = None) -> TraceDumper | None:
    """The first candidate that answers with a Flight Recorder trace in this process, or None.
    Call it once the process group exists: a recorder that has seen no group may answer empty,
    which still counts (the shape is what is tested). `module` replaces torch's for tests."""
    if module is None:
        try:
            module = importlib.import_module(C10D_MODULE)
        except ImportError:  # torch built without distributed support
            return None
    for name, attribute, kwargs, as_json in _candidates(backend):
        function = getattr(module, attribute, None)
        if not callable(function):
            continue
        read = _reader(function, kwargs, as_json)
        try:
            data = pickle.loads(read())
        except Exception:  # noqa: BLE001 - a wrong signature (TypeError) or a disabled recorder
            continue
        if _is_trace(data):
            return TraceDumper(name, read)
    return None


def unavailable_line(torch_version: str) -> str:
    """What a run prints when no candidate works."""
    major_minor = ".".join(torch_version.split("+")[0].split(".")[:2])
    return (
        f"flight recorder unavailable in this torch ({major_minor}): "
        "hang dumps only from torch's own watchdog"
    )
