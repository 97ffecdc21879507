"""The wire, measured before the first step (--comm-check) or alone (`python -m trainer
comm-check`): what an all-reduce of each size moves, and which pair of neighbouring ranks is slow.

All-reduce over sizes from 1 MiB, doubling, up to max(the DDP bucket, min(256 MiB, the model's
gradient bytes)). For each size the time per all-reduce (the slowest rank's mean), and the two
bandwidths of NVIDIA's nccl-tests (doc/PERFORMANCE.md): algbw = size / time and, for
all-reduce, busbw = algbw x 2(n-1)/n, the figure to hold against the link's speed. Then a
point-to-point pass: each pair of neighbouring ranks (r, r+1 mod n), alone on the wire, sends
a buffer back and forth; the pair's one-way GB/s names a slow link by its ranks, pods and
nodes. Every rank also reads the link speeds the pod has (/sys/class/net/*/speed for TCP,
/sys/class/infiniband/*/ports/*/rate for RDMA) and records them with the NCCL_* variables that
choose among them, as written: `runai-tui diagnose` reads those as NCCL does and holds the
figures against what the wire NCCL uses should give.

Rank 0 writes the result as one `comm` record. Everything is torch.distributed's public API.
"""

from __future__ import annotations

import functools
import glob
import os
import re
import socket
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, cast

import torch
import torch.distributed as dist

from trainer import records
from trainer.config import TrainConfig, parse_config
from trainer.distributed import (
    DistContext,
    all_gather_objects,
    barrier,
    gloo_network,
    init_distributed,
    shutdown,
)
from trainer.metrics import JSON
from trainer.model import build_model

if TYPE_CHECKING:
    from torch import nn

MiB = 1 << 20
FIRST_BYTES = MiB
CAP_BYTES = 256 * MiB  # the model's gradient counts up to this
DEFAULT_BUCKET_MB = 25  # DDP's bucket_cap_mb default
SIZE_BUDGET_S = 0.1  # timed seconds per size (at least one all-reduce)
MAX_ITERS = 20
P2P_BYTES = 4 * MiB  # each direction of a pair's exchange
P2P_ITERS = 40  # round trips timed: a window of several of a throttled node's 100 ms periods
P2P_PASSES = 2  # every pair timed this often, the fastest kept: load elsewhere only slows one
CHOICES = ("auto", "on", "off")

Log = Callable[[str], None]
Record = dict[str, object]


def wanted(choice: str, environ: Mapping[str, str] | None = None) -> tuple[bool, str]:
    """(run it, why). auto: on when the job spans more than one pod, which torchrun tells as
    WORLD_SIZE (every process of the job) above LOCAL_WORLD_SIZE (this pod's)."""
    env = os.environ if environ is None else environ
    world = int(env.get("WORLD_SIZE", "1") or 1)
    local = int(env.get("LOCAL_WORLD_SIZE", str(world)) or world)
    if choice == "off":
        return False, "--comm-check off"
    if world < 2:
        return False, "one rank: nothing to measure"
    if choice == "on":
        return True, "--comm-check on"
    if world > local:
        return True, f"auto: {world} ranks over {world // max(local, 1)} pods"
    return False, f"auto: all {world} ranks in one pod (--comm-check on measures it anyway)"


def sizes(top: int) -> list[int]:
    """1 MiB, 2 MiB, 4 MiB... below `top`, then `top` itself."""
    out, size = [], FIRST_BYTES
    while size < top:
        out.append(size)
        size *= 2
    return [*out, max(top, FIRST_BYTES)]


def top_bytes(bucket_mb: int, gradient_bytes: int) -> int:
    """max(the DDP bucket, min(256 MiB, the gradient)), in whole float32 elements."""
    bucket = (bucket_mb or DEFAULT_BUCKET_MB) * MiB
    return max(bucket, min(CAP_BYTES, gradient_bytes)) // 4 * 4


def gradient_bytes(model: nn.Module) -> int:
    return sum(p.numel() * p.element_size() for p in model.parameters() if p.requires_grad)


def before_training(
    choice: str,
    ctx: DistContext,
    model: nn.Module,
    bucket_mb: int,
    write: Callable[[Mapping[str, JSON]], None],
    log: Log,
    step: int,
) -> None:
    """The check at the start of a run (--comm-check): one `comm` record, or one line saying
    why not. Collective: every rank calls it."""
    run, why = wanted(choice)
    if not run or not ctx.distributed:
        if choice != "off":
            log(f"comm check skipped ({why})")
        return
    record = measure(ctx, top_bytes(bucket_mb, gradient_bytes(model)), log)
    if ctx.is_main:
        write(cast("dict[str, JSON]", {records.KIND: records.COMM, "step": step, **record}))


def measure(ctx: DistContext, top: int, log: Log) -> Record:
    """Every rank runs it; rank 0's record is the one written."""
    started = time.perf_counter()
    where = all_gather_objects(ctx, where_am_i(ctx))
    table = [all_reduce_row(ctx, size) for size in sizes(top)]
    pairs = p2p_pass(ctx, where)
    seconds = time.perf_counter() - started
    record: Record = {
        "backend": ctx.backend,
        "algorithm": algorithm(ctx.backend),
        "transport": where[0]["transport"],
        "world_size": ctx.world_size,
        "pods": len({w["pod"] for w in where}),
        "ranks": where,
        "sizes": table,
        "busbw_gbs": table[-1]["busbw_gbs"],
        "pairs": pairs,
        "slowest_pair": min(pairs, key=lambda p: float(p["gbs"])) if pairs else None,  # type: ignore[arg-type]
        "seconds": round(seconds, 3),
    }
    log(summary(record))
    return record


def summary(record: Mapping[str, object]) -> str:
    slowest = record.get("slowest_pair")
    pair = ""
    if isinstance(slowest, dict):
        pair = (
            f"; slowest pair ranks {slowest['ranks'][0]}-{slowest['ranks'][1]} "
            f"({' / '.join(slowest['nodes'])}) {slowest['gbs']} GB/s"
        )
    return (
        f"comm check: all-reduce busbw {record['busbw_gbs']} GB/s at the largest size "
        f"({record['backend']}, {record['transport']}){pair}; took {record['seconds']} s"
    )


def all_reduce_row(ctx: DistContext, size: int) -> Record:
    """One size: a warm-up all-reduce, then as many as SIZE_BUDGET_S allows (the same count on
    every rank: the slowest warm-up decides), timed; the slowest rank's mean."""
    buf = torch.ones(size // 4, dtype=torch.float32, device=ctx.device)
    warm = _timed(ctx, lambda: dist.all_reduce(buf), 1)
    slowest = torch.tensor([warm], dtype=torch.float64, device=ctx.device)
    dist.all_reduce(slowest, op=dist.ReduceOp.MAX)
    iters = max(1, min(MAX_ITERS, int(SIZE_BUDGET_S / max(float(slowest.item()), 1e-6))))
    barrier(ctx)
    mean = _timed(ctx, lambda: dist.all_reduce(buf), iters) / iters
    worst = torch.tensor([mean], dtype=torch.float64, device=ctx.device)
    dist.all_reduce(worst, op=dist.ReduceOp.MAX)
    seconds = float(worst.item())
    algbw, busbw = bandwidths(size, seconds, ctx.world_size)
    return {
        "bytes": size,
        "time_ms": round(seconds * 1e3, 3),
        "algbw_gbs": round(algbw, 3),
        "busbw_gbs": round(busbw, 3),
        "iters": iters,
    }


def bandwidths(size: int, seconds: float, world: int) -> tuple[float, float]:
    """nccl-tests' (algbw, busbw) in GB/s of an all-reduce of `size` bytes over `world` ranks
    (doc/PERFORMANCE.md): algbw = size / time, busbw = algbw x 2(n-1)/n."""
    algbw = size / seconds / 1e9
    return algbw, algbw * 2 * (world - 1) / world


def _timed(ctx: DistContext, op: Callable[[], object], iters: int) -> float:
    started = time.perf_counter()
    for _ in range(iters):
        op()
    if ctx.device.type == "cuda":
        torch.cuda.synchronize(ctx.device)
    return time.perf_counter() - started


def neighbour_pairs(world: int) -> list[tuple[int, int]]:
    """(r, r+1 mod n) for every rank; one pair for two ranks."""
    if world < 2:
        return []
    return [(0, 1)] if world == 2 else [(r, (r + 1) % world) for r in range(world)]


def p2p_pass(ctx: DistContext, where: list[Record]) -> list[Record]:
    """Each neighbouring pair alone: a warm-up exchange, then P2P_ITERS timed round trips of
    P2P_BYTES each way, timed on the pair's first rank; P2P_PASSES passes over the pairs, the
    fastest of each pair's kept (a slow link or node is slow in every pass, a busy moment on a
    shared host in one). One-way GB/s = 2 x bytes x trips / time."""
    mine: list[float] = []
    out = torch.ones(P2P_BYTES // 4, dtype=torch.float32, device=ctx.device)
    back = torch.empty_like(out)
    pairs = neighbour_pairs(ctx.world_size)
    for a, b in pairs * P2P_PASSES:
        barrier(ctx)
        if ctx.rank not in (a, b):
            continue
        peer = b if ctx.rank == a else a

        trip = functools.partial(_round_trip, out, back, peer, ctx.rank == a)
        trip()
        seconds = _timed(ctx, trip, P2P_ITERS)
        if ctx.rank == a:
            mine.append(seconds)
    times = all_gather_objects(ctx, mine)
    rows = []
    for a, b in pairs:
        seconds = min(times[a])  # a rank leads one pair at most, once a pass
        rows.append(
            {
                "ranks": [a, b],
                "pods": [where[a]["pod"], where[b]["pod"]],
                "nodes": [where[a]["node"], where[b]["node"]],
                "time_ms": round(seconds / P2P_ITERS * 1e3, 3),
                "gbs": round(2 * P2P_BYTES * P2P_ITERS / seconds / 1e9, 3),
            }
        )
    return rows


def _round_trip(out: torch.Tensor, back: torch.Tensor, peer: int, first: bool) -> None:
    if first:
        dist.send(out, peer)
        dist.recv(back, peer)
    else:
        dist.recv(back, peer)
        dist.send(out, peer)


def algorithm(backend: str | None) -> str:
    """What picks the all-reduce algorithm: NCCL_ALGO when set, else NCCL's tuner; gloo's
    ProcessGroup runs its ring all-reduce on CPU tensors."""
    if backend == "nccl":
        chosen = os.environ.get("NCCL_ALGO", "")
        return f"NCCL_ALGO={chosen}" if chosen else "NCCL's choice (NCCL_ALGO unset)"
    return "gloo ring"


# -- where a rank is, and its link -----------------------------------------------------------


def where_am_i(ctx: DistContext) -> Record:
    """This rank's pod (POD_NAME, else the host name), node (NODE_NAME when the pod is told it,
    else "?") and what its link is made of, as the pod reads it (`link_facts`)."""
    return {
        "rank": ctx.rank,
        "pod": os.environ.get("POD_NAME") or socket.gethostname(),
        "node": os.environ.get("NODE_NAME") or "?",
        **link_facts(ctx.backend, dict(os.environ)),
    }


# The variables that choose NCCL's network. The trainer records them as written and reads no
# meaning into them: runai-tui's knowledge/nccl_env.py reads them as NCCL does (strtoll for
# NCCL_IB_DISABLE, prefix lists for NCCL_IB_HCA and NCCL_SOCKET_IFNAME) and picks the link.
NET_VARIABLES = ("NCCL_IB_DISABLE", "NCCL_IB_HCA", "NCCL_SOCKET_IFNAME")


def link_facts(backend: str | None, env: Mapping[str, str], sys_root: str = "/sys") -> Record:
    """{"transport": in words, "env": the NET_VARIABLES set, "rdma": [[device:port, Gb/s]]
    of every RDMA port, "net": [[interface, Gb/s or None]] of every interface} for NCCL; for
    gloo, whose interface the trainer finds itself (distributed.gloo_network), the transport
    and its "link": {"kind": "tcp", "iface", "gbps", "note": why no speed}."""
    if backend == "nccl":
        return {
            "transport": "nccl (the network NCCL picks; NCCL_DEBUG=INFO names it)",
            "env": {k: env[k] for k in NET_VARIABLES if k in env},
            "rdma": [[port, gbps] for port, gbps in rdma_rates(sys_root)],
            "net": [[iface, interface_speed(sys_root, iface)[0]] for iface in interfaces(sys_root)],
        }
    said = gloo_network(dict(env))
    found = re.search(r"gloo/TCP on (\S+)", said)
    iface = found.group(1) if found else ""
    speed, note = interface_speed(sys_root, iface)
    link: Record = {"kind": "tcp", "iface": iface, "gbps": speed}
    if note:
        link["note"] = note
    return {"transport": f"gloo/TCP on {iface}", "link": link}


def interfaces(sys_root: str) -> list[str]:
    try:
        return sorted(os.listdir(os.path.join(sys_root, "class", "net")))
    except OSError:
        return []


def interface_speed(sys_root: str, iface: str) -> tuple[float | None, str]:
    """(Gb/s, "") from /sys/class/net/IF/speed (Mb/s), else (None, why not)."""
    if not iface:
        return None, "no interface named"
    path = os.path.join(sys_root, "class", "net", iface, "speed")
    try:
        with open(path, encoding="ascii") as f:
            mbps = int(f.read().strip())
    except (OSError, ValueError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        return None, f"{path}: {reason}"
    if mbps <= 0:
        return None, f"{path}: {mbps} (no speed: a virtual or down link)"
    return mbps / 1000, ""


RATE = re.compile(r"^\s*([\d.]+)\s*Gb/sec")


def rdma_rates(sys_root: str) -> list[tuple[str, float]]:
    """[(device:port, Gb/s)] of every port in /sys/class/infiniband/*/ports/*/rate
    ("100 Gb/sec (4X EDR)"); which of them NCCL uses is NCCL_IB_HCA's to say."""
    found = []
    for path in sorted(
        glob.glob(os.path.join(sys_root, "class", "infiniband", "*", "ports", "*", "rate"))
    ):
        parts = path.split(os.sep)
        device, port = parts[-4], parts[-2]
        try:
            with open(path, encoding="ascii") as f:
                match = RATE.match(f.read())
        except OSError:
            continue
        if match:
            found.append((f"{device}:{port}", float(match.group(1))))
    return found


# -- `python -m trainer comm-check` ----------------------------------------------------------


def main(args: list[str]) -> int:
    """The check alone, for a job that trains nothing: the training flags are accepted (the
    model and --ddp-bucket-mb size it; --device, --dist-timeout apply); the record goes to
    stdout only (the pod's log), never to the run's metrics.jsonl."""
    cfg = parse_config(args)
    run, why = wanted("on")
    if not run:
        print(f"trainer: comm check: {why} (WORLD_SIZE unset or 1); launch with torchrun on "
              "two ranks or more", file=sys.stderr, flush=True)  # fmt: skip
        return 2
    ctx = init_distributed(cfg.device, cfg.dist_timeout, None)
    try:
        log = (lambda m: print(f"trainer: {m}", flush=True)) if ctx.is_main else (lambda m: None)
        record = measure(ctx, top_bytes(cfg.ddp_bucket_mb, model_gradient_bytes(cfg)), log)
        if ctx.is_main:
            stamp = round(time.time(), 3)
            line = records.record_line(
                {records.KIND: records.COMM, "step": 0, **record, "time": stamp}
            )
            print(line, flush=True)
    finally:
        shutdown(ctx)
    return 0


def model_gradient_bytes(cfg: TrainConfig) -> int:
    """The gradient bytes of the model the flags name, built on the meta device (no memory,
    no weights read); 0 when it cannot be built (the bucket size then decides)."""
    if cfg.dataset == "synthetic":
        classes = cfg.synthetic_classes + 1
    elif cfg.classes:
        classes = len(cfg.classes.split(",")) + 1
    else:
        classes = 91 if cfg.dataset == "coco" else 602
    trainable = cfg.trainable_backbone_layers
    if trainable is None:  # build_model's default, kept though no weights are read here
        trainable = 3 if cfg.weights is not None or cfg.weights_backbone != "none" else 5
    bare = replace(cfg, weights=None, weights_backbone="none", trainable_backbone_layers=trainable)
    try:
        with torch.device("meta"):
            model = build_model(bare, classes)
    except Exception:  # noqa: BLE001 -- the size is a bound, not the point
        return 0
    return gradient_bytes(model)
