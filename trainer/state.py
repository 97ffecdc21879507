"""What the steps of a run hand each other: `Run` and its parts.

`train.py` builds them in order (the fast-path choices, the model as it trains, the optimiser,
the meters) and `engine.train_one_epoch` takes the `Run`. Nothing here is kept at module level:
a run's state is on its `Run`, so two runs in one process never share it.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

from trainer.comm import GradientComm
from trainer.config import TrainConfig
from trainer.data.feeds import InputMeter, TrainData
from trainer.distributed import DistContext
from trainer.engine import ForwardClock, Progress, StopRequest, WarmupCosine
from trainer.flops import FlopMeter
from trainer.metrics import JSON, MetricsLog

AMP_DTYPES = {"none": None, "fp16": torch.float16, "bf16": torch.bfloat16}


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

    def wall_seconds(self) -> float:
        """Seconds the run has taken: earlier attempts' (a resume's checkpoint) and this one's."""
        return self.progress.wall_seconds + time.perf_counter() - self.started
