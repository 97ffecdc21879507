"""One epoch of training: micro-batches, AMP, accumulation, clipping, logging, checkpoints, stops."""

from __future__ import annotations

import contextlib
import json
import math
import os
import resource
import signal
import time
import weakref
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import NamedTuple, TypedDict

import torch
from torch import nn
from torch.nn.parallel import DistributedDataParallel

from trainer import flight_recorder, test_hooks
from trainer.comm import GradientComm
from trainer.config import TrainConfig
from trainer.data.dataset import Target
from trainer.data.feeds import InputMeter
from trainer.data.transforms import to_model_input
from trainer.distributed import DistContext, all_gather_floats, all_reduce_sum
from trainer.errors import TrainerError
from trainer.flops import flop_meter
from trainer.metrics import JSON, MetricsLog

LOSS_TERMS = ("classification", "bbox_regression")
# What each train record's "ranks" object lists, one value per global rank ("tflops" when the
# model's FLOPs were counted, "mfu" when a rank's chip has a known peak; null where a rank has none).
RANK_FIGURES = ("step_time", "data_time", "img_s", "forward_time", "tflops", "mfu")


class ForwardClock:
    """Seconds this rank spends inside the model's own forward pass while training. Hooked on the
    module DDP wraps, so DDP's buffer broadcast (a wait for the other ranks) is outside it and
    nothing inside it waits for another rank: a rank that computes slower shows here, while
    every rank's wall step time is the same (each step's collectives wait for the slowest).

    On CUDA the forward pass only queues work for the device, so the host's clock would time the
    queueing: there CUDA events mark it, read once the step's figures reach the host."""

    def __init__(self, module: nn.Module) -> None:
        self.host_seconds = 0.0
        self.marks: list[tuple[torch.cuda.Event, torch.cuda.Event]] = []
        self._started = 0.0
        self._start_mark: torch.cuda.Event | None = None
        module.register_forward_pre_hook(self._start)
        module.register_forward_hook(self._stop)

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


_CLOCKS: weakref.WeakKeyDictionary[nn.Module, ForwardClock] = weakref.WeakKeyDictionary()


def forward_clock(model: nn.Module) -> ForwardClock:
    """The clock of `model`'s own module (inside DDP), hooked once per module."""
    inner = model.module if isinstance(model, DistributedDataParallel) else model
    if inner not in _CLOCKS:
        _CLOCKS[inner] = ForwardClock(inner)
    return _CLOCKS[inner]


@dataclass
class Progress:
    """Where the run is. ``step_in_epoch`` counts the batches of ``epoch`` already trained on."""

    epoch: int = 0
    step_in_epoch: int = 0
    global_step: int = 0


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


@dataclass
class Window:
    """Measurements between two metrics records."""

    steps: int = 0
    images: int = 0  # all ranks
    local_images: int = 0  # this rank's
    input_bytes: float = 0.0
    forward_time: float = 0.0
    allreduce_bytes: float = 0.0
    started: float = field(default_factory=time.perf_counter)
    losses: dict[str, float] = field(default_factory=dict)
    # The host timeline: seconds in each part of the loop (HOST_PARTS), and the clock's last mark.
    host: dict[str, float] = field(default_factory=dict)
    mark: float = field(default_factory=time.perf_counter)

    @property
    def data_time(self) -> float:
        """Seconds waiting for the loader."""
        return self.host.get("data", 0.0)

    def lap(self, part: str) -> None:
        """The time since the last mark goes to `part` (two clock reads: cheap every step)."""
        now = time.perf_counter()
        self.host[part] = self.host.get(part, 0.0) + now - self.mark
        self.mark = now

    def next(self) -> Window:
        """The window after this one, its first lap the record just written."""
        following = Window()
        following.host["record"] = following.mark - self.mark
        return following


# The parts of a step on the host's clock, in loop order, as each train record's host_timeline
# gives them: the loader wait (data_time), the host-to-device copies, forward and backward (on
# CUDA: the queueing of their kernels), the loss all-reduce and the optimizer step, the read of
# the figures one step late, the metrics record and the checkpoint.
HOST_PARTS = ("data", "copy", "forward_backward", "optimizer", "read", "record", "checkpoint")


class BatchCopier:
    """A batch's host-to-device copies and its uint8-to-float conversion. On CUDA they run on a
    side stream: from the loader's pinned memory, this batch's copy overlaps the previous step's
    kernels still queued on the main stream, which waits for it before its next kernel. On the
    CPU the conversion only."""

    def __init__(self, device: torch.device) -> None:
        self.device = device
        self.stream = torch.cuda.Stream(device) if device.type == "cuda" else None

    def copy(
        self, images: list[torch.Tensor], targets: list[Target]
    ) -> tuple[list[torch.Tensor], list[dict[str, torch.Tensor]]]:
        if self.stream is None:
            return self._copy(images, targets)
        main = torch.cuda.current_stream(self.device)
        with torch.cuda.stream(self.stream):
            inputs, device_targets = self._copy(images, targets)
        main.wait_stream(self.stream)
        for tensor in [*inputs, *(t for d in device_targets for t in d.values())]:
            tensor.record_stream(main)  # made on the side stream, used on the main one
        return inputs, device_targets

    def _copy(
        self, images: list[torch.Tensor], targets: list[Target]
    ) -> tuple[list[torch.Tensor], list[dict[str, torch.Tensor]]]:
        inputs = to_model_input(images, self.device)
        device_targets = [
            {
                "boxes": t["boxes"].to(self.device, non_blocking=True),
                "labels": t["labels"].to(self.device, non_blocking=True),
            }
            for t in targets
        ]
        return inputs, device_targets


class OptimizerOptions(TypedDict, total=False):
    fused: bool


def optimizer_options(device_type: str) -> OptimizerOptions:
    """SGD's and AdamW's fused kernels on CUDA (one launch for all parameters); on a CPU torch's
    own default, the per-parameter loop: foreach measured no faster there (docs/performance.md)."""
    return {"fused": True} if device_type == "cuda" else {}


def amp_dtype(cfg: TrainConfig) -> torch.dtype | None:
    return {"none": None, "fp16": torch.float16, "bf16": torch.bfloat16}[cfg.amp]


def peak_memory_mb(device: torch.device) -> float:
    if device.type == "cuda":
        return torch.cuda.max_memory_allocated(device) / 2**20
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # kB on Linux


def train_one_epoch(
    ctx: DistContext,
    cfg: TrainConfig,
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    scheduler: torch.optim.lr_scheduler.LRScheduler,
    scaler: torch.amp.GradScaler | None,
    loader: Iterable[tuple[list[torch.Tensor], list[Target]]],
    progress: Progress,
    total_steps: int,
    metrics: MetricsLog,
    save: Callable[[str], None],
    stop: StopRequest,
    meter: InputMeter | None = None,
    comm: GradientComm | None = None,
) -> str:
    """Train until the epoch ends, ``total_steps`` is reached, or a stop is requested.

    Returns "epoch_end", "max_steps" or "stopped".
    """
    model.train()
    dtype = amp_dtype(cfg)
    window = Window()
    clock = forward_clock(model)
    clock.take()  # what evaluation or an earlier epoch left is not this window's
    unread: LaunchedStep | None = None  # the step before, whose figures the host has not read
    copier = BatchCopier(ctx.device)
    for images, targets in loader:
        window.lap("data")
        test_hooks.stall(ctx.rank, progress.global_step)
        if cfg.log_samples:
            _log_samples(ctx, cfg, progress, targets)
        step_losses = _compute(ctx, cfg, model, scaler, copier.copy(images, targets), dtype, window)
        reduced, ready = _launch_reduce(ctx, step_losses, targets, stop, meter)
        refuse_non_finite(ctx, cfg, model, scaler, reduced, ready, progress)
        lr = _optimizer_step(cfg, model, optimizer, scheduler, scaler)
        window.lap("optimizer")
        progress.global_step += 1
        progress.step_in_epoch += 1
        launched = LaunchedStep(
            reduced, ready, progress.global_step, progress.epoch, len(images), clock.take(),
            comm.take_bytes() if comm is not None else 0.0,
        )  # fmt: skip
        logs, saves, ends = _due(cfg, progress.global_step, total_steps)
        stopped, unread = _read_due(ctx, unread, launched, logs or saves or ends, meter, window)
        window.lap("read")
        if logs:
            _log(ctx, metrics, progress, window, lr, total_steps, cfg.epochs, meter, comm, model)
            window = window.next()
        if saves:
            save("periodic")
            window.lap("checkpoint")
        if stopped:
            return "stopped"
        if ends:
            return "max_steps"
    if unread is not None and _read_step(ctx, unread, meter, window):
        return "stopped"
    return "epoch_end"


def _compute(
    ctx: DistContext,
    cfg: TrainConfig,
    model: nn.Module,
    scaler: torch.amp.GradScaler | None,
    batch: tuple[list[torch.Tensor], list[dict[str, torch.Tensor]]],
    dtype: torch.dtype | None,
    window: Window,
) -> torch.Tensor:
    """The step's forward and backward on a batch BatchCopier has sent; the copy's time and
    theirs go to the host timeline."""
    window.lap("copy")
    step_losses = _forward_backward(ctx, cfg, model, scaler, *batch, dtype)
    window.lap("forward_backward")
    return step_losses


def _due(cfg: TrainConfig, step: int, total_steps: int) -> tuple[bool, bool, bool]:
    """Whether `step` writes a metrics record, saves a checkpoint, ends the run."""
    saves = bool(cfg.checkpoint_every) and step % cfg.checkpoint_every == 0
    return step % cfg.log_every == 0, saves, step >= total_steps


def _forward_backward(
    ctx: DistContext,
    cfg: TrainConfig,
    model: nn.Module,
    scaler: torch.amp.GradScaler | None,
    inputs: list[torch.Tensor],
    device_targets: list[dict[str, torch.Tensor]],
    dtype: torch.dtype | None,
) -> torch.Tensor:
    """Forward and backward over the batch's --grad-accum micro-batches (on the device already:
    BatchCopier); returns the step's loss terms, each the mean over the micro-batches."""
    micro = cfg.micro_batch_size
    step_losses = torch.zeros(len(LOSS_TERMS), device=ctx.device)
    for k in range(cfg.grad_accum):
        last = k == cfg.grad_accum - 1
        # Gradients all-reduce only on the last micro-batch (DDP wraps the model when
        # ctx.distributed).
        sync = (
            model.no_sync()
            if isinstance(model, DistributedDataParallel) and not last
            else contextlib.nullcontext()
        )
        chunk = slice(k * micro, (k + 1) * micro)
        with sync:
            with torch.autocast(ctx.device.type, dtype=dtype, enabled=dtype is not None):
                loss_dict = model(inputs[chunk], device_targets[chunk])
            terms = torch.stack([loss_dict[name].float() for name in LOSS_TERMS])
            loss = terms.sum() / cfg.grad_accum
            (scaler.scale(loss) if scaler else loss).backward()
        step_losses += terms.detach() / cfg.grad_accum
    return step_losses


class LaunchedStep(NamedTuple):
    """A trained step whose figures may still be on their way to the host."""

    reduced: torch.Tensor  # the all-reduced loss terms and flags, on the host once `ready`
    ready: torch.cuda.Event | None  # None: already on the host
    step: int
    epoch: int
    local_images: int
    forward: ForwardTime
    allreduce_bytes: float


def _launch_reduce(
    ctx: DistContext,
    step_losses: torch.Tensor,
    targets: list[Target],
    stop: StopRequest,
    meter: InputMeter | None,
) -> tuple[torch.Tensor, torch.cuda.Event | None]:
    """One small all-reduce per step: the loss terms (for the finite check and the log), the
    stop flag (so all ranks stop at this same step), and the count of skipped images. On CUDA
    its result is copied to pinned host memory behind an event, so nothing here waits."""
    skipped = sum(len(t["skipped"]) for t in targets)
    io = meter.take() if meter else []
    flags = torch.tensor([float(stop.requested), float(skipped), *io])
    cuda = ctx.device.type == "cuda"
    # From pinned memory a host-to-device copy need not wait for the device's queued work.
    flags = flags.pin_memory().to(ctx.device, non_blocking=True) if cuda else flags.to(ctx.device)
    reduced = all_reduce_sum(ctx, torch.cat([step_losses, flags]))
    if not cuda:
        return reduced.cpu(), None
    host = torch.empty(reduced.shape, dtype=reduced.dtype, pin_memory=True)
    host.copy_(reduced, non_blocking=True)
    ready = torch.cuda.Event()
    ready.record()
    return host, ready


def _read_due(
    ctx: DistContext,
    unread: LaunchedStep | None,
    launched: LaunchedStep,
    now: bool,
    meter: InputMeter | None,
    window: Window,
) -> tuple[bool, LaunchedStep | None]:
    """The host reads a step's figures (losses, stop votes) one step late, when the device has
    long produced them, so it queues the next step without waiting for this one; it reads the
    step just launched at once only when `now` (a record, a checkpoint or the run's end needs
    it) or on a stop. Every rank reads at the same steps, so all agree on a stop.

    Returns whether a rank asked to stop, and the step left unread."""
    stopped = unread is not None and _read_step(ctx, unread, meter, window)
    if now or stopped:
        return _read_step(ctx, launched, meter, window) or stopped, None
    return stopped, launched


def _read_step(
    ctx: DistContext, launched: LaunchedStep, meter: InputMeter | None, window: Window
) -> bool:
    """Wait for a step's figures, check its loss is finite and add it to the log window;
    returns whether any rank asked to stop at that step."""
    if launched.ready is not None:
        launched.ready.synchronize()
    reduced = launched.reduced
    n_terms = len(LOSS_TERMS)
    stop_votes, skipped_total = float(reduced[n_terms]), float(reduced[n_terms + 1])
    if meter:
        input_bytes, hits, opens = reduced[n_terms + 2 :].tolist()
        window.input_bytes += input_bytes
        meter.hits += hits
        meter.opens += opens
    mean_losses = reduced[:n_terms] / ctx.world_size
    total_loss = float(mean_losses.sum())  # finite: refuse_non_finite checked it before the step
    _count_step(ctx, window, launched, total_loss, mean_losses.tolist(), skipped_total)
    return stop_votes > 0


PRECISION = {"none": "fp32", "bf16": "bf16", "fp16": "fp16"}


def non_finite_hint(amp: str, device_type: str) -> str:
    """What to try when a step's loss or gradients are not finite, for the precision in use."""
    if amp == "fp16":
        return "try --amp bf16 (fp16's narrow range overflows), lower --lr or use --clip-grad"
    if amp == "bf16" and device_type == "cpu":
        return (
            "try --amp none (fp32), and report this CPU with the output of "
            "benchmarks/cpu_bf16_tiny_maps.py (a CPU's bf16 kernels can be at fault: "
            "trainer/README.md, bf16 on a CPU)"
        )
    if amp == "bf16":
        return "try --amp none (fp32) to rule the precision out, lower --lr or use --clip-grad"
    return "lower --lr (or raise --warmup-steps), use --clip-grad, or check the data"


def refuse_non_finite(
    ctx: DistContext,
    cfg: TrainConfig,
    model: nn.Module,
    scaler: torch.amp.GradScaler | None,
    reduced: torch.Tensor,
    ready: torch.cuda.Event | None,
    progress: Progress,
) -> None:
    """Stop the run, before the optimizer applies the step, when its loss or its gradients are
    not finite: such a step never reaches the weights. The loss terms are the all-reduced ones and
    DDP all-reduces the gradients, so every rank stops at the same step. Under fp16 only the loss
    is checked: the GradScaler skips a step with inf gradients itself and lowers its scale.

    It costs one read to the host per step (the gradients' largest magnitude); on CUDA that read
    waits for the backward pass, and the loss terms are on the host by then."""
    grads = [p.grad for p in model.parameters() if p.grad is not None]
    finite_grads = True
    if scaler is None and grads:
        # The inf-norm: NaN and inf reach it, and no finite gradient overflows it.
        finite_grads = bool(torch.isfinite(nn.utils.get_total_norm(grads, math.inf)))
    if ready is not None:
        ready.synchronize()
    mean_losses = reduced[: len(LOSS_TERMS)] / ctx.world_size
    total_loss = float(mean_losses.sum())
    if finite_grads and math.isfinite(total_loss):
        return
    where = (
        f"at step {progress.global_step + 1} (epoch {progress.epoch}, "
        f"{PRECISION[cfg.amp]} on {ctx.device.type}"
    )
    hint = non_finite_hint(cfg.amp, ctx.device.type)
    if not math.isfinite(total_loss):
        terms = ", ".join(f"{n}={float(v)}" for n, v in zip(LOSS_TERMS, mean_losses, strict=True))
        raise TrainerError(
            f"non-finite loss {total_loss} {where}: {terms}); the step was not applied to the "
            f"weights; {hint}"
        )
    bad = [
        name.removeprefix("module.")  # DDP's wrapper
        for name, p in model.named_parameters()
        if p.grad is not None and not bool(torch.isfinite(p.grad).all())
    ]
    # Model order: the last is the nearest the loss, where the backward pass met it first.
    which = f"in {bad[0]}" if len(bad) == 1 else f"first {bad[0]}, nearest the loss {bad[-1]}"
    raise TrainerError(
        f"non-finite gradient {where}, loss {total_loss:.6g}): {len(bad)} of {len(grads)} "
        f"parameters, {which}; the step was not applied to the weights; {hint}"
    )


def _optimizer_step(
    cfg: TrainConfig,
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    scheduler: torch.optim.lr_scheduler.LRScheduler,
    scaler: torch.amp.GradScaler | None,
) -> float:
    """Clip (when asked), step and zero the gradients, advance the schedule; returns the
    learning rate the step used."""
    if scaler:
        if cfg.clip_grad > 0:
            scaler.unscale_(optimizer)
            nn.utils.clip_grad_norm_(model.parameters(), cfg.clip_grad)
        scaler.step(optimizer)
        scaler.update()
    else:
        if cfg.clip_grad > 0:
            nn.utils.clip_grad_norm_(model.parameters(), cfg.clip_grad)
        optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    lr: float = optimizer.param_groups[0]["lr"]
    scheduler.step()
    return lr


def _count_step(
    ctx: DistContext,
    window: Window,
    launched: LaunchedStep,
    total_loss: float,
    mean_losses: list[float],
    skipped_total: float,
) -> None:
    """Add one step to the log window: images, forward time, bytes sent, losses."""
    window.steps += 1
    window.images += launched.local_images * ctx.world_size
    window.local_images += launched.local_images
    window.forward_time += launched.forward.seconds()
    window.allreduce_bytes += launched.allreduce_bytes
    for name, value in zip(("loss", *LOSS_TERMS), (total_loss, *mean_losses), strict=True):
        window.losses[name] = window.losses.get(name, 0.0) + value
    window.losses["skipped_images"] = window.losses.get("skipped_images", 0.0) + skipped_total


def _log_samples(
    ctx: DistContext, cfg: TrainConfig, progress: Progress, targets: list[Target]
) -> None:
    """Which samples this rank trains on at which step (to audit sharding and resume order)."""
    directory = os.path.join(cfg.output_dir, "samples")
    os.makedirs(directory, exist_ok=True)
    record = {
        "step": progress.global_step + 1,
        "epoch": progress.epoch,
        "rank": ctx.rank,
        "indices": [int(t["index"]) for t in targets],
    }
    with open(os.path.join(directory, f"rank-{ctx.rank}.jsonl"), "a", encoding="utf-8") as f:
        f.write(json.dumps(record) + "\n")


def _log(
    ctx: DistContext,
    metrics: MetricsLog,
    progress: Progress,
    window: Window,
    lr: float,
    total_steps: int,
    epochs: int,
    meter: InputMeter | None = None,
    comm: GradientComm | None = None,
    model: nn.Module | None = None,
) -> None:
    elapsed = max(time.perf_counter() - window.started, 1e-9)
    tflops, mfu = _achieved_tflops(model, window, elapsed)
    # Every rank's own step time, data wait and images/s, in one small all-gather (every rank
    # logs at the same step), so rank 0's record shows a slow rank by name.
    mine = [
        elapsed / window.steps,
        window.data_time / window.steps,
        window.local_images / elapsed,
        window.forward_time / window.steps,
        tflops,
        mfu,
    ]
    per_rank = all_gather_floats(ctx, mine)
    record: dict[str, JSON] = {
        "kind": "train",
        "step": progress.global_step,
        "total_steps": total_steps,  # the run's length: readers show step/total and an ETA
        "epoch": progress.epoch,
        "epochs": epochs,
        "loss": round(window.losses["loss"] / window.steps, 6),
        "lr": lr,
        "images_per_sec": round(window.images / elapsed, 3),
        "data_time": round(window.data_time / window.steps, 6),
        "step_time": round(elapsed / window.steps, 6),
    }
    for name in LOSS_TERMS:
        record[f"loss_{name}"] = round(window.losses[name] / window.steps, 6)
    record["skipped_images"] = int(window.losses["skipped_images"])
    record["peak_memory_mb"] = round(peak_memory_mb(ctx.device), 1)
    # Where rank 0's host spent each step, seconds per step by part (HOST_PARTS); the rest of
    # step_time is Python between the marks.
    record["host_timeline"] = {
        part: round(window.host[part] / window.steps, 6)
        for part in HOST_PARTS
        if part in window.host
    }
    if math.isfinite(tflops):  # this rank's (rank 0's); the job's is the sum over "ranks"
        record["tflops"] = round(tflops, 6)
    if math.isfinite(mfu):
        record["mfu"] = round(mfu, 6)
    record["ranks"] = {
        name: [round(v, 3 if name == "img_s" else 6) if math.isfinite(v) else None
               for v in (row[i] for row in per_rank)]
        for i, name in enumerate(RANK_FIGURES)
        if any(math.isfinite(row[i]) for row in per_rank)
    }  # fmt: skip
    if comm is not None:
        # Gradient bytes this rank handed to the all-reduce per step (what the hook sent).
        record["allreduce_bytes"] = round(window.allreduce_bytes / window.steps)
    if meter:
        # Sample bytes (JPEG + JSON) read from shards by all ranks per second, and the share of
        # shard opens served from --cache-dir over the run so far (None without a cache).
        record["input_bytes_per_sec"] = round(window.input_bytes / elapsed, 1)
        hit_rate = meter.hits / meter.opens if meter.opens else 0.0
        record["cache_hit_rate"] = round(hit_rate, 4) if meter.cached else None
    metrics.write(record)


def _achieved_tflops(
    model: nn.Module | None, window: Window, elapsed: float
) -> tuple[float, float]:
    """This rank's model TFLOP/s over the window and its share of the chip's bf16 peak; NaN
    where the FLOPs were not counted or the peak is not known (all_gather_floats sends floats)."""
    counter = flop_meter(model) if model is not None else None
    if counter is None:
        return math.nan, math.nan
    tflops = counter.flops_since(window.started, window.local_images) / elapsed / 1e12
    return tflops, tflops / counter.peak.tflops if counter.peak else math.nan
