"""What the steps of a run hand each other: `Run` and its parts (its position, schedule, stop
request and forward clock among them).

`train.py` builds them in order (the fast-path choices, the model as it trains, the optimiser,
the meters) and `engine.train_one_epoch` takes the `Run`; this module imports no step. Nothing here is kept at module level:
a run's state is on its `Run`, so two runs in one process never share it.
"""

from __future__ import annotations

import dataclasses
import math
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import torch
from torch import nn

from trainer import flight_recorder
from trainer.comm import GradientComm
from trainer.config import TrainConfig
from trainer.data.feeds import InputMeter, TrainData
from trainer.distributed import DistContext
from trainer.flops import FlopMeter
from trainer.metrics import JSON, MetricsLog
from trainer.test_hooks import Stall

AMP_DTYPES = {"none": None, "fp16": torch.float16, "bf16": torch.bfloat16}


@dataclass
class Progress:
    """Where the run is. ``step_in_epoch`` counts the batches of ``epoch`` already trained on.
    Checkpoints hold it; the seconds are those of the attempts before this one (a resume
    restores them, and adds the time from the checkpoint to this attempt's start: the work
    lost after it and the gap until the restart), this attempt's own are on its Run's clock."""

    epoch: int = 0
    step_in_epoch: int = 0
    global_step: int = 0
    images: int = 0  # trained on, all ranks
    wall_seconds: float = 0.0
    eval_seconds: float = 0.0
    saved_at: float = 0.0  # unix time of the save (0: a checkpoint from before it was kept)
    gap_seconds: float = 0.0  # no attempt ran: from an attempt's last record to the next start


class WarmupCosine:
    """LR multiplier per optimiser step: linear warmup, then cosine to 0 (or constant).

    A callable object, so LambdaLR's state_dict keeps it as plain data.
    """

    def __init__(self, warmup_steps: int, warmup_factor: float, total_steps: int, cosine: bool):
        self.warmup_steps = warmup_steps
        self.warmup_factor = warmup_factor
        self.total_steps = max(total_steps, 1)
        self.cosine = cosine

    def __call__(self, step: int) -> float:
        if step < self.warmup_steps:
            alpha = step / self.warmup_steps
            return self.warmup_factor * (1 - alpha) + alpha
        if not self.cosine:
            return 1.0
        span = max(self.total_steps - self.warmup_steps, 1)
        progress = min((step - self.warmup_steps) / span, 1.0)
        return 0.5 * (1.0 + math.cos(math.pi * progress))


class StopRequest:
    """SIGTERM/SIGINT only set a flag; the training loop agrees on it across ranks at a step
    boundary, so every rank stops at the same step and no collective is left waiting."""

    def __init__(self) -> None:
        self.requested = False
        self.signal_name = ""

    def install(self) -> None:
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, self._handle)

    def _handle(self, signum: int, _frame: object) -> None:
        self.requested = True
        self.signal_name = signal.Signals(signum).name
        flight_recorder.dump_if_in_collective(self.signal_name)  # a stop that will never be agreed


class ForwardClock:
    """Seconds this rank spends inside the model's own forward pass while training. Hooked on the
    module DDP wraps, so DDP's buffer broadcast (a wait for the other ranks) is outside it and
    nothing inside it waits for another rank: a rank that computes slower shows here, while
    every rank's wall step time is the same (each step's collectives wait for the slowest).

    On CUDA the forward pass only queues work for the device, so the host's clock would time the
    queueing: there CUDA events mark it, read once the step's figures reach the host."""

    def __init__(self, module: nn.Module) -> None:
        """`module`: the model DDP wraps (the run's model_without_ddp)."""
        self.host_seconds = 0.0
        self.marks: list[tuple[torch.cuda.Event, torch.cuda.Event]] = []
        self._started = 0.0
        self._start_mark: torch.cuda.Event | None = None
        self._hooks = [module.register_forward_pre_hook(self._start),
                       module.register_forward_hook(self._stop)]  # fmt: skip

    def remove(self) -> None:
        """Unhook the module (a model that outlives its run: tests train one model again)."""
        for hook in self._hooks:
            hook.remove()

    def _start(self, module: nn.Module, _args: object) -> None:
        if not module.training:
            return
        first = next(module.parameters(), None)
        if first is not None and first.is_cuda:
            self._start_mark = torch.cuda.Event(enable_timing=True)
            self._start_mark.record()
        else:
            self._started = time.perf_counter()

    def _stop(self, module: nn.Module, _args: object, _out: object) -> None:
        if not module.training:
            return
        if self._start_mark is not None:
            end = torch.cuda.Event(enable_timing=True)
            end.record()
            self.marks.append((self._start_mark, end))
            self._start_mark = None
        else:
            self.host_seconds += time.perf_counter() - self._started

    def take(self) -> ForwardTime:
        """The forward passes since the previous take."""
        taken = ForwardTime(self.host_seconds, self.marks)
        self.host_seconds, self.marks = 0.0, []
        return taken


class ForwardTime(NamedTuple):
    host_seconds: float
    marks: list[tuple[torch.cuda.Event, torch.cuda.Event]]

    def seconds(self) -> float:
        """Once the device has run the marked work (its step's figures are on the host)."""
        return self.host_seconds + sum(a.elapsed_time(b) for a, b in self.marks) / 1000.0


@dataclass(frozen=True)
class Choice:
    """One fast-path decision: what the command line asked, what the run takes, and why."""

    asked: str
    chosen: str
    why: str


@dataclass(frozen=True)
class FastPath:
    """The run's fast-path choices, made once at start (trainer/amp.py, trainer/fast_path.py).
    The configuration keeps what was asked; this record is what the run trains with."""

    amp: Choice  # none (fp32), fp16 or bf16
    compile: Choice  # on or off
    channels_last: Choice  # on or off

    @property
    def dtype(self) -> torch.dtype | None:
        """The autocast dtype, None for fp32."""
        return AMP_DTYPES[self.amp.chosen]

    def record(self) -> dict[str, dict[str, str]]:
        """run.json's `amp`, `compile` and `channels_last`: each asked, chosen and why."""
        return {name: dataclasses.asdict(getattr(self, name)) for name in self.names()}

    def trained(self) -> dict[str, str]:
        """The configuration's values as the run trains with them (run.json's and every
        checkpoint's `config` carries these, so a resume keeps the precision)."""
        return {name: getattr(self, name).chosen for name in self.names()}

    @staticmethod
    def names() -> tuple[str, ...]:
        return tuple(f.name for f in dataclasses.fields(FastPath))


@dataclass
class Net:
    model: nn.Module  # what trains: wrapped in DDP when distributed
    model_without_ddp: nn.Module  # what checkpoints hold and evaluation runs
    comm: GradientComm | None  # the DDP communication hook, when distributed


@dataclass
class Optim:
    optimizer: torch.optim.Optimizer
    scheduler: torch.optim.lr_scheduler.LambdaLR
    schedule: WarmupCosine
    scaler: torch.amp.GradScaler | None  # fp16 only
    lr: float  # this run's learning rate: a resume keeps it, not the checkpoint's
    param_groups: list[dict[str, Any]]


@dataclass
class Meters:
    """What measures the training for its records: the seconds in the model's forward pass (every
    step), the model's FLOPs (None when they were not counted) and the shard input counters
    (shards only)."""

    forward: ForwardClock
    flops: FlopMeter | None = None
    inputs: InputMeter | None = None


@dataclass
class Evals:
    """The evaluations so far: where the last ran, what they cost, and the target's record once
    one reached it (--target-map)."""

    at_step: int = -1
    seconds: float = 0.0  # this attempt's evaluations
    best: float = -1.0  # the best --target-metric value so far (-1: none yet)
    reached: dict[str, JSON] | None = None


@dataclass
class Run:
    """What the steps after the optimiser share: the loop's state and where it is written."""

    cfg: TrainConfig
    ctx: DistContext
    log: Callable[[str], None]
    data: TrainData
    total_steps: int
    path: FastPath
    net: Net
    opt: Optim
    meters: Meters
    metrics: MetricsLog
    progress: Progress = field(default_factory=Progress)
    stop: StopRequest = field(default_factory=StopRequest)
    started: float = field(default_factory=time.perf_counter)  # this attempt's first moment
    last_saved_step: int = -1
    evals: Evals = field(default_factory=Evals)
    stall: Stall | None = None  # a test hook, read once at start (trainer/test_hooks.py)

    def wall_seconds(self) -> float:
        """Seconds the run has taken: earlier attempts' (a resume's checkpoint) and this one's."""
        return self.progress.wall_seconds + time.perf_counter() - self.started
