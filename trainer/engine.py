"""One epoch of training: micro-batches, AMP, accumulation, clipping, logging, checkpoints, stops."""

from __future__ import annotations

import contextlib
import json
import math
import os
import resource
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from enum import Enum
from typing import NamedTuple, TypedDict

import torch
from torch import nn
from torch.nn.parallel import DistributedDataParallel

from trainer import records
from trainer.config import TrainConfig
from trainer.data.dataset import Target
from trainer.data.feeds import InputMeter
from trainer.data.transforms import to_model_input
from trainer.distributed import DistContext, all_gather_floats, all_reduce_sum
from trainer.errors import TrainerError
from trainer.flops import FlopMeter
from trainer.metrics import JSON
from trainer.state import ForwardTime, Progress, Run, StopRequest

LOSS_TERMS = ("classification", "bbox_regression")


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


def peak_memory_mb(device: torch.device) -> float:
    if device.type == "cuda":
        return torch.cuda.max_memory_allocated(device) / 2**20
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # kB on Linux


class EpochOutcome(Enum):
    """How `train_one_epoch` ended."""

    EPOCH_END = "epoch_end"  # the epoch's batches ran out
    MAX_STEPS = "max_steps"  # the run's last step (--max-steps, or the last epoch's last)
    STOPPED = "stopped"  # a stop request, agreed by every rank at the same step
    TARGET = "target"  # an evaluation (--eval-every-steps) reached --target-map


def train_one_epoch(
    run: Run,
    batches: Iterator[tuple[list[torch.Tensor], list[Target]]],
    save: Callable[[str], None],
    evaluate: Callable[[], bool],
) -> EpochOutcome:
    """Train on `batches` until the epoch ends, the run's last step, a stop request or an
    evaluation that reached the target. `save` writes a checkpoint (collective); `evaluate` runs
    an evaluation that is due (--eval-every-steps; collective) and says whether it reached
    --target-map; the epoch then goes on with the same batches."""
    cfg, ctx, model, opt, progress = run.cfg, run.ctx, run.net.model, run.opt, run.progress
    window = _start_window(run)
    unread: LaunchedStep | None = None  # the step before, whose figures the host has not read
    copier = BatchCopier(ctx.device)
    inputs = run.meters.inputs
    for images, targets in batches:
        window.lap("data")
        if run.stall is not None:
            run.stall.before_step(ctx.rank, progress.global_step)
        if cfg.log_samples:
            _log_samples(ctx, cfg, progress, targets)
        step_losses = _compute(run, copier.copy(images, targets), window)
        reduced, ready = _launch_reduce(ctx, step_losses, targets, run.stop, inputs)
        refuse_non_finite(run, reduced, ready)
        lr = _optimizer_step(cfg, model, opt.optimizer, opt.scheduler, opt.scaler)
        window.lap("optimizer")
        progress.global_step += 1
        progress.step_in_epoch += 1
        progress.images += len(images) * ctx.world_size
        launched = LaunchedStep(
            reduced, ready, progress.global_step, progress.epoch, len(images),
            run.meters.forward.take(), run.net.comm.take_bytes() if run.net.comm else 0.0,
        )  # fmt: skip
        due = _due(run)
        stopped, unread = _read_due(ctx, unread, launched, any(due), inputs, window)
        window.lap("read")
        logs, saves, ends, evaluates = due
        if logs:
            _log(run, window, lr)
            window = window.next()
        if saves:
            save("periodic")
            window.lap("checkpoint")
        if stopped:
            return EpochOutcome.STOPPED
        if ends:
            return EpochOutcome.MAX_STEPS
        if evaluates:
            if evaluate():
                return EpochOutcome.TARGET
            window = _start_window(run)  # evaluation's seconds are no step's
    if unread is not None and _read_step(ctx, unread, inputs, window):
        return EpochOutcome.STOPPED
    return EpochOutcome.EPOCH_END


def _start_window(run: Run) -> Window:
    """The model in training mode and a fresh log window: at an epoch's start and after an
    evaluation (which leaves the model in eval mode)."""
    run.net.model.train()
    run.meters.forward.take()  # what evaluation or an earlier epoch left is not this window's
    return Window()


def _compute(
    run: Run, batch: tuple[list[torch.Tensor], list[dict[str, torch.Tensor]]], window: Window
) -> torch.Tensor:
    """The step's forward and backward on a batch BatchCopier has sent; the copy's time and
    theirs go to the host timeline."""
    window.lap("copy")
    step_losses = _forward_backward(
        run.ctx, run.cfg, run.net.model, run.opt.scaler, *batch, run.path.dtype
    )
    window.lap("forward_backward")
    return step_losses


def _due(run: Run) -> tuple[bool, bool, bool, bool]:
    """Whether the step just trained writes a metrics record, saves a checkpoint, ends the run,
    is evaluated (--eval-every-steps, when there is a validation set)."""
    cfg, step = run.cfg, run.progress.global_step
    saves = bool(cfg.checkpoint_every) and step % cfg.checkpoint_every == 0
    evaluates = (
        bool(cfg.eval_every_steps)
        and step % cfg.eval_every_steps == 0
        and run.data.val_set is not None
    )
    return step % cfg.log_every == 0, saves, step >= run.total_steps, evaluates


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
    inputs: InputMeter | None,
) -> tuple[torch.Tensor, torch.cuda.Event | None]:
    """One small all-reduce per step: the loss terms (for the finite check and the log), the
    stop flag (so all ranks stop at this same step), and the count of skipped images. On CUDA
    its result is copied to pinned host memory behind an event, so nothing here waits."""
    skipped = sum(len(t["skipped"]) for t in targets)
    io = inputs.take() if inputs else []
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
    inputs: InputMeter | None,
    window: Window,
) -> tuple[bool, LaunchedStep | None]:
    """The host reads a step's figures (losses, stop votes) one step late, when the device has
    long produced them, so it queues the next step without waiting for this one; it reads the
    step just launched at once only when `now` (a record, a checkpoint or the run's end needs
    it) or on a stop. Every rank reads at the same steps, so all agree on a stop.

    Returns whether a rank asked to stop, and the step left unread."""
    stopped = unread is not None and _read_step(ctx, unread, inputs, window)
    if now or stopped:
        return _read_step(ctx, launched, inputs, window) or stopped, None
    return stopped, launched


def _read_step(
    ctx: DistContext, launched: LaunchedStep, inputs: InputMeter | None, window: Window
) -> bool:
    """Wait for a step's figures, check its loss is finite and add it to the log window;
    returns whether any rank asked to stop at that step."""
    if launched.ready is not None:
        launched.ready.synchronize()
    reduced = launched.reduced
    n_terms = len(LOSS_TERMS)
    stop_votes, skipped_total = float(reduced[n_terms]), float(reduced[n_terms + 1])
    if inputs:
        input_bytes, hits, opens = reduced[n_terms + 2 :].tolist()
        window.input_bytes += input_bytes
        inputs.hits += hits
        inputs.opens += opens
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


def refuse_non_finite(run: Run, reduced: torch.Tensor, ready: torch.cuda.Event | None) -> None:
    """Stop the run, before the optimizer applies the step, when its loss or its gradients are
    not finite: such a step never reaches the weights. The loss terms are the all-reduced ones and
    DDP all-reduces the gradients, so every rank stops at the same step. Under fp16 only the loss
    is checked: the GradScaler skips a step with inf gradients itself and lowers its scale.

    It costs one read to the host per step (the gradients' largest magnitude); on CUDA that read
    waits for the backward pass, and the loss terms are on the host by then."""
    ctx, model, progress, amp = run.ctx, run.net.model, run.progress, run.path.amp.chosen
    grads = [p.grad for p in model.parameters() if p.grad is not None]
    finite_grads = True
    if run.opt.scaler is None and grads:
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
        f"{PRECISION[amp]} on {ctx.device.type}"
    )
    hint = non_finite_hint(amp, ctx.device.type)
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


def _log(run: Run, window: Window, lr: float) -> None:
    ctx, progress, meters = run.ctx, run.progress, run.meters
    elapsed = max(time.perf_counter() - window.started, 1e-9)
    tflops, mfu = _achieved_tflops(meters.flops, window, elapsed)
    # Every rank's own figures (records.RANK_FIGURES, in its order), in one small all-gather
    # (every rank logs at the same step), so rank 0's record shows a slow rank by name.
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
        records.KIND: records.TRAIN,
        "step": progress.global_step,
        "total_steps": run.total_steps,  # the run's length: readers show step/total and an ETA
        "epoch": progress.epoch,
        "epochs": run.cfg.epochs,
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
        for i, name in enumerate(records.RANK_FIGURES)
        if any(math.isfinite(row[i]) for row in per_rank)
    }  # fmt: skip
    if run.net.comm is not None:
        # Gradient bytes this rank handed to the all-reduce per step (what the hook sent).
        record["allreduce_bytes"] = round(window.allreduce_bytes / window.steps)
    if meters.inputs:
        # Sample bytes (JPEG + JSON) read from shards by all ranks per second, and the share of
        # shard opens served from --cache-dir over the run so far (None without a cache).
        record["input_bytes_per_sec"] = round(window.input_bytes / elapsed, 1)
        inputs = meters.inputs
        hit_rate = inputs.hits / inputs.opens if inputs.opens else 0.0
        record["cache_hit_rate"] = round(hit_rate, 4) if inputs.cached else None
    run.metrics.write(record)


def _achieved_tflops(
    flops: FlopMeter | None, window: Window, elapsed: float
) -> tuple[float, float]:
    """This rank's model TFLOP/s over the window and its share of the chip's bf16 peak; NaN
    where the FLOPs were not counted or the peak is not known (all_gather_floats sends floats)."""
    if flops is None:
        return math.nan, math.nan
    tflops = flops.flops_since(window.started, window.local_images) / elapsed / 1e12
    return tflops, tflops / flops.peak.tflops if flops.peak else math.nan
