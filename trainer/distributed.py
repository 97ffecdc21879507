"""Process-group setup from torchrun's environment, and the few collectives the trainer needs."""

from __future__ import annotations

import ctypes
import datetime
import os
import signal
import socket
import struct
import sys
from dataclasses import dataclass
from typing import TypeVar, cast

import torch
import torch.distributed as dist

from trainer import flight_recorder, test_hooks
from trainer.errors import ConfigError

T = TypeVar("T")


@dataclass(frozen=True)
class DistContext:
    rank: int
    world_size: int
    local_rank: int
    device: torch.device
    backend: str | None  # None when running as a single process without a process group

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    @property
    def distributed(self) -> bool:
        return self.backend is not None


def _env_int(name: str, default: int) -> int:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    try:
        return int(value)
    except ValueError:
        raise ConfigError(f"environment {name}={value!r}: expected an integer") from None


def init_distributed(
    device_choice: str = "auto", timeout_minutes: int = 30, output_dir: str | None = None
) -> DistContext:
    """Join the process group torchrun prepared: NCCL on GPUs, gloo on CPU, one device per rank.

    torchrun sets RANK/WORLD_SIZE/LOCAL_RANK per process. Without them (plain ``python -m trainer``)
    this is a single process with no process group.
    """
    die_with_launcher()
    world_size = _env_int("WORLD_SIZE", 1)
    local_rank = _env_int("LOCAL_RANK", 0)
    if "LOCAL_RANK" not in os.environ and world_size > 1:
        # A pod-level RANK/WORLD_SIZE (Kubeflow) without torchrun: those describe pods, not processes.
        raise ConfigError(
            "WORLD_SIZE is set but LOCAL_RANK is not: launch through torchrun "
            "(scripts/train-retinanet-ddp.sh does), not plain python"
        )
    use_cuda = device_choice == "cuda" or (device_choice == "auto" and torch.cuda.is_available())
    if use_cuda:
        if not torch.cuda.is_available():
            raise ConfigError("--device cuda: no CUDA device is visible to this process")
        if local_rank >= torch.cuda.device_count():
            raise ConfigError(
                f"LOCAL_RANK {local_rank} but only {torch.cuda.device_count()} visible GPU(s): "
                "nproc-per-node must not exceed the GPUs per pod"
            )
        device = torch.device("cuda", local_rank)
        torch.cuda.set_device(device)
    else:
        device = torch.device("cpu")
    if world_size == 1:
        return DistContext(0, 1, 0, device, None)
    backend = "nccl" if use_cuda else "gloo"
    if output_dir:
        flight_recorder.prepare(output_dir)  # before the group: torch reads the dump prefix then
    dist.init_process_group(
        backend=backend,
        timeout=datetime.timedelta(seconds=test_hooks.dist_timeout_seconds(timeout_minutes)),
        device_id=device if use_cuda else None,
    )
    flight_recorder.start(dist.get_rank(), backend)
    if backend == "gloo" and local_rank == 0:  # one line per pod: NCCL says its own (NCCL_DEBUG)
        print(f"trainer: rank {dist.get_rank()}: {gloo_network()}", flush=True)
    return DistContext(dist.get_rank(), dist.get_world_size(), local_rank, device, backend)


LOOPBACK = "lo"


def gloo_network(environ: dict[str, str] | None = None, host: str | None = None) -> str:
    """`Using network gloo/TCP on IFACE (how)`: where Gloo's TCP transport is, found as
    ProcessGroupGloo finds it (Gloo itself does not say): the interfaces GLOO_SOCKET_IFNAME
    names; else the address this host's name resolves to, if a socket can bind it, and the
    interface that holds it; else the loopback interface. `runai-tui diagnose` reads the line
    (a pod's TRANSPORT column)."""
    environ = dict(os.environ) if environ is None else environ
    named = environ.get("GLOO_SOCKET_IFNAME", "").strip()
    if named:
        return f"Using network gloo/TCP on {named} (GLOO_SOCKET_IFNAME)"
    host = socket.gethostname() if host is None else host
    address = _bindable_address(host)
    if address is None:
        return f"Using network gloo/TCP on {LOOPBACK} ({host} resolves to no address to bind)"
    iface = _interface_of(address)
    shown = iface or address  # an IPv6 address, or one no interface lists: the address itself
    return f"Using network gloo/TCP on {shown} ({address}, the address of {host})"


def _bindable_address(host: str) -> str | None:
    try:
        found = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    except OSError:
        return None
    for family, kind, proto, _, address in found:
        try:
            with socket.socket(family, kind, proto) as probe:
                probe.bind(address)
        except OSError:
            continue
        return str(address[0])
    return None


def _interface_of(address: str) -> str | None:
    """The interface that holds IPv4 `address` (SIOCGIFADDR on each; Linux), else None."""
    if address.startswith("127."):
        return LOOPBACK  # all of 127/8 is the loopback's, though it lists 127.0.0.1 only
    try:
        import fcntl  # lazy: POSIX only

        names = [name for _, name in socket.if_nameindex()]
    except (ImportError, OSError):
        return None
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        for name in names:
            request = struct.pack("256s", name.encode()[:15])
            try:
                held = socket.inet_ntoa(fcntl.ioctl(probe.fileno(), SIOCGIFADDR, request)[20:24])
            except OSError:
                continue  # no IPv4 address
            if held == address:
                return name
    return None


SIOCGIFADDR = 0x8915  # linux/sockios.h: an interface's IPv4 address


def die_with_launcher() -> None:
    """torchrun starts each worker in a session of its own, so a kill of the launcher's process
    group (how a local pod is killed) would leave the workers running. Ask Linux to SIGKILL this
    worker when its parent, the launcher, dies."""
    if sys.platform != "linux" or "TORCHELASTIC_RUN_ID" not in os.environ:
        return
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, int(signal.SIGKILL), 0, 0, 0)  # 1 = PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass  # not fatal: without it, a hard kill of the launcher leaves this process behind


def shutdown(ctx: DistContext) -> None:
    flight_recorder.stop()
    if ctx.distributed and dist.is_initialized():
        dist.destroy_process_group()


def barrier(ctx: DistContext) -> None:
    if ctx.distributed:
        if ctx.backend == "nccl":
            dist.barrier(device_ids=[ctx.device.index])
        else:
            dist.barrier()


def all_reduce_sum(ctx: DistContext, tensor: torch.Tensor) -> torch.Tensor:
    """Sum in place over ranks (a no-op for a single process) and return the tensor."""
    if ctx.distributed:
        dist.all_reduce(tensor, op=dist.ReduceOp.SUM)
    return tensor


def all_gather_floats(ctx: DistContext, values: list[float]) -> list[list[float]]:
    """Every rank's ``values`` (same length everywhere), by rank: one all-gather of a small
    tensor on the rank's device, no pickling."""
    mine = torch.tensor(values, dtype=torch.float64, device=ctx.device)
    if not ctx.distributed:
        return [mine.tolist()]
    gathered = torch.empty(ctx.world_size * len(values), dtype=torch.float64, device=ctx.device)
    dist.all_gather_into_tensor(gathered, mine)
    return gathered.view(ctx.world_size, len(values)).tolist()


def all_gather_objects(ctx: DistContext, obj: T) -> list[T]:
    if not ctx.distributed:
        return [obj]
    gathered: list[object] = [None] * ctx.world_size
    dist.all_gather_object(gathered, obj)
    return cast("list[T]", gathered)  # every rank sent the same kind of object


def broadcast_object(ctx: DistContext, obj: T | None) -> T:
    """Rank 0's ``obj`` on every rank; the other ranks may pass None."""
    box = [obj]
    if ctx.distributed:
        dist.broadcast_object_list(box, src=0)
    return cast("T", box[0])  # rank 0's, which is never None


def gather_objects(ctx: DistContext, obj: T) -> list[T] | None:
    """Every rank's ``obj`` on rank 0 (None elsewhere)."""
    if not ctx.distributed:
        return [obj]
    gathered: list[object] | None = [None] * ctx.world_size if ctx.is_main else None
    dist.gather_object(obj, gathered, dst=0)
    return cast("list[T] | None", gathered)  # every rank sent the same kind of object


def broadcast_buffers(ctx: DistContext, module: torch.nn.Module) -> None:
    """Rank 0's buffers (BatchNorm running statistics) on every rank. In training each rank
    updates them from its own batch after DDP's broadcast, so they differ slightly by the end."""
    if ctx.distributed:
        for buffer in module.buffers():
            dist.broadcast(buffer, src=0)
