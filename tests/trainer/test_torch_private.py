"""Every private torch name the trainer uses (trainer/torch_private.py), found by feature test.

The real torch installed here answers through one of the candidates; the candidate order is also
checked against modules that have exactly the signatures seen in real builds (the CPU wheel's
`_dump_fr_trace(..., backend)`, PyPI's CUDA wheel's `_dump_fr_trace(...)` with no backend and
`_dump_nccl_trace`, JSON-only variants), and against a torch with none of them."""

from __future__ import annotations

import ast
import datetime
import json
import os
import pickle
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch
import torch.distributed as dist

from trainer import flight_recorder, torch_private

REPO = Path(__file__).resolve().parents[2]
TRACE = {"version": "2.10", "pg_config": {}, "pg_status": {"0": {}}, "entries": []}


def test_the_installed_torch_has_a_working_dump_in_a_real_gloo_group(tmp_path: Path) -> None:
    dist.init_process_group(
        "gloo", init_method=f"file://{tmp_path}/store", rank=0, world_size=1,
        timeout=datetime.timedelta(seconds=30),
    )  # fmt: skip
    try:
        dist.all_reduce(torch.ones(4))
        dumper = torch_private.find_trace_dumper("gloo")
        if dumper is None:  # a torch whose gloo has no recorder: the fallback is the one line
            assert "flight recorder unavailable in this torch" in torch_private.unavailable_line(
                torch.__version__
            )
            return
        trace = pickle.loads(dumper.read())
        assert {"entries", "pg_status"} <= set(trace)
        assert dumper.name.startswith("_dump_")
    finally:
        dist.destroy_process_group()


class _Build:
    """A `torch._C._distributed_c10d` with the entry points of one real build."""

    def __init__(self, **functions: object) -> None:
        self.__dict__.update(functions)


def _fr_with_backend(includeCollectives=None, includeStackTraces=None, onlyActive=None,
                     backend=None) -> bytes:  # fmt: skip
    return pickle.dumps({**TRACE, "backend": backend})


def _fr_without_backend(includeCollectives=None, includeStackTraces=None, onlyActive=None) -> bytes:
    return pickle.dumps({**TRACE, "backend": "shared"})


def _nccl(includeCollectives=None, includeStackTraces=None, onlyActive=None) -> bytes:
    return pickle.dumps({**TRACE, "backend": "nccl-recorder"})


def _json(includeCollectives=None, onlyActive=None) -> bytes:
    return json.dumps({**TRACE, "pg_status": {"0": {"last_completed_collective": "3"}}}).encode()


def _broken(*args: object, **kwargs: object) -> bytes:
    raise RuntimeError("recorder disabled")


@pytest.mark.parametrize(
    ("build", "backend", "name", "recorder"),
    [
        (_Build(_dump_fr_trace=_fr_with_backend), "gloo", "_dump_fr_trace(backend='gloo')", "gloo"),
        (_Build(_dump_fr_trace=_fr_without_backend), "gloo", "_dump_fr_trace()", "shared"),
        (_Build(_dump_fr_trace=_fr_without_backend, _dump_nccl_trace=_nccl), "nccl",
         "_dump_nccl_trace()", "nccl-recorder"),
        (_Build(_dump_fr_trace=_fr_with_backend, _dump_nccl_trace=_nccl), "nccl",
         "_dump_fr_trace(backend='nccl')", "nccl"),
        (_Build(_dump_fr_trace=_broken, _dump_fr_trace_json=_json), "gloo",
         "_dump_fr_trace_json()", None),
    ],
)  # fmt: skip
def test_candidates_are_tried_in_order_by_what_each_build_accepts(
    build: _Build, backend: str, name: str, recorder: str | None
) -> None:
    dumper = torch_private.find_trace_dumper(backend, module=build)
    assert dumper is not None and dumper.name == name
    trace = pickle.loads(dumper.read())  # always the pickle the dump readers take
    assert trace.get("backend") == recorder
    if recorder is None:  # JSON answers keep their fields
        assert trace["pg_status"]["0"]["last_completed_collective"] == "3"


def test_no_working_candidate_gives_none_and_the_one_line() -> None:
    assert torch_private.find_trace_dumper("gloo", module=_Build()) is None
    assert torch_private.find_trace_dumper("nccl", module=_Build(_dump_fr_trace=_broken)) is None
    line = torch_private.unavailable_line("2.14.1+cu130")
    assert line == (
        "flight recorder unavailable in this torch (2.14): hang dumps only from torch's own watchdog"
    )


@pytest.mark.slow  # trains
def test_a_torch_without_a_dump_trains_on_and_keeps_torchs_own_file(tmp_path: Path) -> None:
    """The trainer's side in a real 2-rank gloo run on a torch whose entry points all fail: rank 0
    prints the one line (with where torch's watchdog writes), no rank crashes, and a dump file
    torch itself wrote during the run is reported, never replaced."""
    script = tmp_path / "worker.py"
    script.write_text(
        textwrap.dedent(f"""
        import os, sys, time
        sys.path.insert(0, {str(REPO)!r})
        import torch, torch.distributed as dist
        from trainer import flight_recorder, torch_private
        torch_private.C10D_MODULE = "json"  # a module with no dump entry point at all
        flight_recorder.prepare({str(tmp_path)!r})
        dist.init_process_group("gloo")
        rank = dist.get_rank()
        flight_recorder.start(rank, "gloo")
        dist.all_reduce(torch.ones(2))
        assert flight_recorder.in_collective() is False
        path = flight_recorder.dump_prefix({str(tmp_path)!r}) + str(rank)
        if rank == 1:  # as torch's watchdog would, during this run
            os.makedirs(os.path.dirname(path), exist_ok=True)
            time.sleep(0.01)
            open(path, "wb").write(b"torch's own")
        print("dump:", flight_recorder.dump("collective failed"), flush=True)
        dist.destroy_process_group()
    """)
    )
    env = {k: v for k, v in os.environ.items() if k != "TORCH_FR_DUMP_TEMP_FILE"}
    done = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
         str(script)], capture_output=True, text=True, timeout=120, env=env,
    )  # fmt: skip
    out = done.stdout + done.stderr
    assert done.returncode == 0, out
    prefix = flight_recorder.dump_prefix(str(tmp_path))
    unavailable = (
        f"trainer: flight recorder unavailable in this torch "
        f"({'.'.join(torch.__version__.split('.')[:2])}): hang dumps only from torch's own "
        f"watchdog, to {prefix}N"
    )
    assert out.count(unavailable) == 1, out
    assert "dump: None" in out  # rank 0: nothing of its own to write
    assert f"[rank 1] flight recorder dump (torch's watchdog): {prefix}1" in out
    assert Path(prefix + "1").read_bytes() == b"torch's own"
    assert not Path(prefix + "0").exists()


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _private_uses(source: str) -> list[str]:
    """Private torch/torchvision names a module reaches for: `from torch.x import _y`,
    `import torch._x`, and attribute chains like `torch._C` or `nn.modules._BatchNorm`."""
    found = []
    roots = {"torch", "torchvision", "nn", "dist", "F"}
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in roots:
            parts = [*(node.module or "").split("."), *(a.name for a in node.names)]
            found += [f"from {node.module} import {a.name}" for a in node.names
                      if any(_private(p) for p in parts)]  # fmt: skip
        elif isinstance(node, ast.Import):
            found += [a.name for a in node.names if a.name.split(".")[0] in roots
                      and any(_private(p) for p in a.name.split(".")[1:])]  # fmt: skip
        elif isinstance(node, ast.Attribute) and _private(node.attr):
            base = node.value
            while isinstance(base, ast.Attribute):
                base = base.value
            if isinstance(base, ast.Name) and base.id in roots:
                found.append(ast.unparse(node))
    return found


def test_no_private_torch_name_outside_the_one_place() -> None:
    """trainer/torch_private.py is the only module that names a private torch entry point (and
    it does so by string, so no build's type stubs decide whether the trainer type-checks)."""
    offenders = {
        str(path.relative_to(REPO)): uses
        for path in sorted((REPO / "trainer").rglob("*.py"))
        if path.name != "torch_private.py" and (uses := _private_uses(path.read_text()))
    }
    assert offenders == {}
    assert _private_uses("from torchvision.models.detection.backbone_utils import _x\n"
                         "import torch._C\nk = nn.modules.batchnorm._BatchNorm\n") == [
        "from torchvision.models.detection.backbone_utils import _x", "torch._C",
        "nn.modules.batchnorm._BatchNorm"]  # fmt: skip
