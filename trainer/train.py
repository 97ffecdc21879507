"""The training run, top to bottom: setup, data, model, optimiser, resume, the loop, the end.

Imported only after the command line has been checked, so usage errors never wait for torch.
`train` reads as the run's steps; each step is a function below it, in the same order (the
resume's in trainer/resume.py, an epoch's in trainer/engine.py), and the state they hand each
other is `Run` (trainer/state.py): the fast-path choices come back as a record (`FastPath`),
never written into the configuration, and the meters live on the `Run`.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import platform
import shutil
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone

import numpy as np
import PIL
import torch
import torchvision
from torch import nn
from torch.nn.parallel import DistributedDataParallel

from trainer import checkpoint, comm_check, fast_path, records, test_hooks
from trainer.amp import choose_amp
from trainer.comm import GradientComm, bucket_cap_mb, parse_hook
from trainer.compile_cache import cache_is_warm, compile_cache_dir, use_compile_cache
from trainer.config import TrainConfig
from trainer.data.feeds import TrainData, build_train_data
from trainer.data.stream import ShardFeed
from trainer.distributed import (
    DistContext,
    all_gather_objects,
    broadcast_buffers,
    broadcast_object,
    gather_objects,
)
from trainer.engine import EpochOutcome, optimizer_options, train_one_epoch
from trainer.errors import ConfigError, TrainerError
from trainer.evaluate import evaluate
from trainer.flops import FlopMeter, chip_peak, count_train_flops
from trainer.loss import FirstBatchChecked, box_loss_type
from trainer.metrics import JSON, MetricsLog, add_to_run_json, open_tensorboard, write_run_json
from trainer.model import build_model, enable_channels_last, parameter_groups
from trainer.resume import Checkpoint, count_time_since_checkpoint, resume
from trainer.state import Choice, FastPath, ForwardClock, Meters, Net, Optim, Run, WarmupCosine

PREEMPTED_EXIT_CODE = 143  # 128 + SIGTERM: the restart policy brings the job back to resume


def train(cfg: TrainConfig, ctx: DistContext) -> int:
    started = time.perf_counter()  # time to target counts from here
    log = make_log(ctx)
    setup(cfg, ctx, log)

    # Data: the index (files) or the manifest (shards) knows every image's size and boxes, and
    # every rank's number of steps, before any image is decoded (trainer/data/feeds.py).
    data = build_train_data(cfg, ctx, log)
    if data is None:
        return 0
    steps = count_steps(cfg, data)

    # Model. The checkpoint to resume from is found before the precision is chosen: a resumed
    # run keeps its own. Whether to compile is decided before the model is built, channels-last
    # after the precision (on a CPU it follows it).
    found = checkpoint.find_resume_checkpoint(cfg.output_dir, cfg.resume, warn=log)
    compiled = choose_compile(cfg, ctx, steps, found, log)
    model = build_model(cfg, data.num_classes).to(ctx.device)
    flops = measure_flops(cfg, ctx, model, log)  # on a copy of the eager model: before compile
    if cfg.loss == "batched":
        # Says on the first batch what it kept. --compile compiles its per-class pass.
        backend = test_hooks.compile_backend() if compiled.chosen == "on" else None
        model.loss_fn = FirstBatchChecked(model, cfg.model, log, backend)
    precision = choose_precision(cfg, ctx, model, found, log)
    layout = choose_channels_last(cfg, ctx, model, precision, log)
    path = FastPath(amp=precision, compile=compiled, channels_last=layout)
    net = wrap_model(cfg, ctx, model, path, log)

    # Optimiser, schedule and gradient scaler.
    opt = build_optimizer(cfg, ctx, net, data, steps, path, log)

    # The run's state, and what measures it. Resume: model, optimiser, schedule, scaler,
    # position and RNG, before anything is written.
    meters = Meters(ForwardClock(net.model_without_ddp), flops, data.inputs)
    run = Run(
        cfg, ctx, log, data, steps.total, path, net, opt, meters, open_metrics(cfg, ctx, log),
        started=started, stall=test_hooks.stall(),
    )  # fmt: skip
    resume(run, found)
    record_start(run, found)
    comm_check.before_training(  # the wire measured, one comm record (trainer/comm_check.py)
        cfg.comm_check, ctx, model, cfg.ddp_bucket_mb, run.metrics.write, log,
        run.progress.global_step,
    )  # fmt: skip

    # The loop. An epoch ends early at --max-steps, on a stop request, or at the first evaluation
    # that reaches --target-map.
    run.stop.install()
    outcome = train_epochs(run)

    # The end: a final checkpoint and evaluation (and the target's record when it was not
    # reached), or a checkpoint to resume from after a stop.
    if outcome is EpochOutcome.STOPPED:
        return stop_preempted(run)
    return finish(run)


@dataclass
class Steps:
    per_epoch: str  # for the log: "N", or the first epochs' counts when they differ
    total: int  # every epoch's steps, capped by --max-steps


def make_log(ctx: DistContext) -> Callable[[str], None]:
    """A log line on rank 0 only."""

    def log(message: str) -> None:
        if ctx.is_main:
            print(f"trainer: {message}", flush=True)

    return log


def setup(cfg: TrainConfig, ctx: DistContext, log: Callable[[str], None]) -> None:
    """Seeds, the output folder, and the versions and communication settings in the log."""
    torch.manual_seed(cfg.seed)  # same initial weights on every rank (DDP also broadcasts them)
    np.random.seed(cfg.seed + ctx.rank)
    if ctx.is_main:
        os.makedirs(cfg.output_dir, exist_ok=True)
    log(
        f"world size {ctx.world_size} ({ctx.backend or 'single process'}), device {ctx.device}, "
        f"torch {torch.__version__}, torchvision {torchvision.__version__}"
    )
    comm_env = " ".join(f"{k}={v}" for k, v in sorted(os.environ.items()) if k.startswith("NCCL_"))
    if comm_env and ctx.backend == "nccl":
        log(f"NCCL settings: {comm_env}")


def count_steps(cfg: TrainConfig, data: TrainData) -> Steps:
    """Every epoch's steps, known before the first image is decoded; an epoch without a step
    is a ConfigError."""
    epoch_steps = [data.feed.steps(e) for e in range(cfg.epochs)]
    if min(epoch_steps) == 0:
        raise ConfigError(data.too_few)
    per_epoch = (
        str(epoch_steps[0])
        if len(set(epoch_steps)) == 1
        else "/".join(map(str, epoch_steps[:3])) + "..."
    )
    total_steps = sum(epoch_steps)
    if cfg.max_steps:
        total_steps = min(total_steps, cfg.max_steps)
    return Steps(per_epoch, total_steps)


def measure_flops(
    cfg: TrainConfig, ctx: DistContext, model: nn.Module, log: Callable[[str], None]
) -> FlopMeter | None:
    """Count the model's training FLOPs per image once, for every record's tflops and mfu; the
    meter that scales the count by each training batch's pixels, None when counting failed.

    Counted at the padded shape of a 4:3 landscape image at --min-size (a typical photo in
    Open Images and COCO), on one image: the records scale it by each batch's real padded
    area, so the shape counted matters little. Counted on the meta device (trainer/flops.py), so
    it costs about a second and no device memory. Every rank counts its own unwrapped model (the
    same model everywhere: no collective needed)."""
    height, width = _train_size(cfg)
    try:
        count = count_train_flops(
            model, height, width, box_loss_type(cfg.model) if cfg.loss == "batched" else None, log
        )
    except Exception as exc:  # noqa: BLE001 -- a counter that fails costs the figure, not the run
        log(f"model FLOPs not counted ({type(exc).__name__}: {exc}); records carry no tflops")
        return None
    peak = chip_peak(cfg.peak_tflops, ctx.device)
    log(
        f"model FLOPs: {count.per_image / 1e9:.1f} GFLOP per training image (forward+backward) "
        f"at the padded {count.height}x{count.width}, counted in {count.seconds:.1f} s; records "
        "carry tflops"
        + (f" and mfu against {peak.tflops:g} TFLOP/s ({peak.source})" if peak else
           " (no mfu: no bf16 peak known for this device; --peak-tflops gives one)")
    )  # fmt: skip
    return FlopMeter(count, peak, model)


def choose_precision(
    cfg: TrainConfig,
    ctx: DistContext,
    model: nn.Module,
    found: Checkpoint | None,
    log: Callable[[str], None],
) -> Choice:
    """The precision the run trains in (a resumed run keeps its checkpoint's): what was asked,
    what was chosen and why."""
    amp = choose_amp(
        cfg.amp, ctx, model, cfg.micro_batch_size, _train_size(cfg),
        found[1].get("config", {}).get("amp") if found else None, log,
    )  # fmt: skip
    log(f"precision: {amp.amp if amp.amp != 'none' else 'fp32'} ({amp.why})")
    return Choice(cfg.amp, amp.amp, amp.why)


def choose_compile(
    cfg: TrainConfig,
    ctx: DistContext,
    steps: Steps,
    found: Checkpoint | None,
    log: Callable[[str], None],
) -> Choice:
    """Resolve --compile (auto: trainer/fast_path.py), rank 0's choice on every rank, and point
    torch.compile's caches at --compile-cache-dir; returns what was asked, what was chosen and
    why."""
    cache = compile_cache_dir(cfg)
    done = found[1].get("progress", {}).get("global_step", 0) if found else 0
    images = max(steps.total - done, 0) * cfg.batch_size
    height, width = _train_size(cfg)
    missing = _compiler_missing(ctx.device.type) if cfg.compile == "auto" else ""
    if missing:
        choice = fast_path.PathChoice(False, f"auto: {missing}")
    else:
        warm = ctx.is_main and cache_is_warm(cache)
        choice = fast_path.compile_choice(cfg.compile, ctx.device.type, images, height, width, warm)
    choice = broadcast_object(ctx, choice)
    log(f"compile {choice.value} ({choice.why})")
    if choice.on:
        use_compile_cache(cache, log)
    return Choice(cfg.compile, choice.value, choice.why)


def choose_channels_last(
    cfg: TrainConfig,
    ctx: DistContext,
    model: nn.Module,
    precision: Choice,
    log: Callable[[str], None],
) -> Choice:
    """Resolve --channels-last (auto: trainer/fast_path.py) for the precision chosen, convert the
    model when it turns on here (build_model did for an explicit on), and say why."""
    asked = cfg.channels_last
    choice = fast_path.channels_last_choice(asked, ctx.device.type, precision.chosen)
    if choice.on and asked == "auto":
        enable_channels_last(model)
    log(f"channels-last {choice.value} ({choice.why})")
    return Choice(asked, choice.value, choice.why)


def _compiler_missing(device_type: str) -> str:
    """Why inductor cannot compile here ("" when it can): Triton on CUDA, a C++ compiler on CPU."""
    if test_hooks.compile_backend() != "inductor":
        return ""
    if device_type == "cuda":
        return "" if importlib.util.find_spec("triton") else "Triton is not installed"
    compiler = os.environ.get("CXX", "g++")
    return "" if shutil.which(compiler) else f"no C++ compiler ({compiler}) on PATH"


def wrap_model(
    cfg: TrainConfig,
    ctx: DistContext,
    model: nn.Module,
    path: FastPath,
    log: Callable[[str], None],
) -> Net:
    """Compile (--compile), tune cuDNN, convert to SyncBatchNorm (--sync-bn), wrap in DDP."""
    if path.compile.chosen == "on":
        _compile(cfg, model, log)
    if ctx.device.type == "cuda":
        # The model pads each batch to multiples of 32, so a run meets a bounded set of shapes
        # (at most _padded_shapes of them): cuDNN's autotuner pays once per shape.
        torch.backends.cudnn.benchmark = True
        log(f"cudnn.benchmark on: padded batch shapes are multiples of 32, at most "
            f"{_padded_shapes(cfg)} at --min-size {cfg.min_size} --max-size {cfg.max_size}")  # fmt: skip
    if cfg.sync_bn and ctx.distributed and ctx.device.type == "cuda":
        model = torch.nn.SyncBatchNorm.convert_sync_batchnorm(model)  # before DDP wraps it
    elif cfg.sync_bn:
        log("--sync-bn ignored: SyncBatchNorm needs CUDA devices and more than one rank")
    if path.amp.chosen == "fp16" and ctx.device.type == "cpu":
        log("note: --amp fp16 on CPU is emulated and very slow; use bf16 or none on CPU")
    model_without_ddp = model
    comm: GradientComm | None = None
    if ctx.distributed:
        model, comm = _wrap_ddp(cfg, ctx, model, log)
    elif cfg.ddp_comm_hook != "none":
        log(f"--ddp-comm-hook {cfg.ddp_comm_hook} ignored: one process sends no gradients")
    return Net(model, model_without_ddp, comm)


def _compile(cfg: TrainConfig, model: nn.Module, log: Callable[[str], None]) -> None:
    # In place (nn.Module.compile): the state dict keeps its keys, checkpoints stay as they
    # are. The batched loss compiles its own per-class pass (FirstBatchChecked); the
    # matcher (shaped by each batch's box count), anchors and post-processing stay eager.
    backend = test_hooks.compile_backend()
    for part in ("backbone", "head"):
        module = model.get_submodule(part)
        module.compile(backend=backend)
    loss_part = " and the batched loss's per-class pass" if cfg.loss == "batched" else ""
    log(
        f"--compile: backbone+FPN, head{loss_part} compiled ({backend}) at their first step; "
        f"batches pad to multiples of 32, at most {_padded_shapes(cfg)} shapes at --min-size "
        f"{cfg.min_size} --max-size {cfg.max_size}: the first shape compiles a static graph, "
        "the second one graph dynamic in height and width that later shapes reuse "
        "(TORCH_LOGS=recompiles lists every recompile)"
    )


def _wrap_ddp(
    cfg: TrainConfig, ctx: DistContext, model: nn.Module, log: Callable[[str], None]
) -> tuple[nn.Module, GradientComm]:
    """The model in DDP, its buckets sized and its communication hook installed."""
    choice = parse_hook(cfg.ddp_comm_hook)
    cap = bucket_cap_mb(choice, str(ctx.backend), model, cfg.ddp_bucket_mb, log)
    ddp = DistributedDataParallel(
        model,
        device_ids=[ctx.device.index] if ctx.device.type == "cuda" else None,
        bucket_cap_mb=cap,
        gradient_as_bucket_view=cfg.gradient_as_bucket_view,
    )
    comm = GradientComm(choice, start_iter=cfg.warmup_steps)
    label = comm.install(ddp, log)
    log(
        f"DDP: --ddp-comm-hook {label} ({comm.describe()}); "
        f"{f'{cap} MiB buckets' if cap else 'default buckets (25 MiB, first 1 MiB)'}; "
        f"gradient_as_bucket_view {'on' if cfg.gradient_as_bucket_view else 'off'}"
    )
    return ddp, comm


def build_optimizer(
    cfg: TrainConfig,
    ctx: DistContext,
    net: Net,
    data: TrainData,
    steps: Steps,
    path: FastPath,
    log: Callable[[str], None],
) -> Optim:
    """SGD or AdamW with the learning rate scaled to the global batch, warmup then cosine or
    constant, and a gradient scaler for fp16."""
    global_batch = cfg.batch_size * ctx.world_size
    lr = cfg.resolved_lr(global_batch)
    weight_decay, norm_weight_decay = cfg.resolved_weight_decay()
    param_groups = parameter_groups(net.model_without_ddp, weight_decay, norm_weight_decay)
    paths = optimizer_options(ctx.device.type)  # fused on CUDA
    optimizer: torch.optim.Optimizer
    if cfg.optimizer == "sgd":
        optimizer = torch.optim.SGD(param_groups, lr=lr, momentum=cfg.momentum, **paths)
    else:
        optimizer = torch.optim.AdamW(param_groups, lr=lr, **paths)
    schedule = WarmupCosine(
        cfg.warmup_steps, cfg.warmup_factor, steps.total, cfg.lr_schedule == "cosine"
    )
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, schedule)
    scaler = torch.amp.GradScaler(ctx.device.type) if path.amp.chosen == "fp16" else None
    log(
        f"model {cfg.model}, {data.num_classes} classes incl. background, "
        f"{sum(p.numel() for p in net.model_without_ddp.parameters()) / 1e6:.1f}M parameters; "
        f"{cfg.optimizer} lr {lr:g} (= {cfg.resolved_lr(cfg.lr_base_batch):g} x global batch "
        f"{global_batch} / {cfg.lr_base_batch}), weight decay {weight_decay:g} "
        f"(norm layers {norm_weight_decay:g}); {steps.per_epoch} steps per epoch, "
        f"{steps.total} steps in total"
    )
    return Optim(optimizer, scheduler, schedule, scaler, lr, param_groups)


def open_metrics(cfg: TrainConfig, ctx: DistContext, log: Callable[[str], None]) -> MetricsLog:
    """metrics.jsonl on rank 0, and TensorBoard beside it when --tensorboard asks."""
    writer = None
    if cfg.tensorboard and ctx.is_main:
        writer, note = open_tensorboard(cfg.output_dir)
        log(note)
    return MetricsLog(cfg.output_dir, ctx.is_main, writer)


def record_start(run: Run, found: Checkpoint | None) -> None:
    """Drop metrics past the resumed step and write run.json: every rank's host and device,
    versions, environment, data contract, and the path taken (amp, channels_last, compile: each
    asked, chosen and why)."""
    cfg, ctx = run.cfg, run.ctx
    last_record = run.metrics.truncate_after(run.progress.global_step)  # fresh: an empty file
    if found:
        count_time_since_checkpoint(run, last_record)
    ranks = all_gather_objects(
        ctx, {"rank": ctx.rank, "host": socket.gethostname(), "device": str(ctx.device)}
    )
    if ctx.is_main:
        info = _run_info(cfg, ctx, run.path, ranks, found[0] if found else None)
        flops = run.meters.flops
        info["flops"] = flops.run_info() if flops else None
        write_run_json(cfg.output_dir, {**info, "data": run.data.info, **run.path.record()})


def train_epochs(run: Run) -> EpochOutcome:
    """Epoch after epoch until --epochs or --max-steps, evaluating every --eval-every epochs and
    every --eval-every-steps steps; returns the last epoch's outcome (STOPPED on a stop request,
    TARGET once an evaluation reached --target-map)."""
    cfg, progress, feed, val_set = run.cfg, run.progress, run.data.feed, run.data.val_set
    checkpoint_now = functools.partial(save, run)
    evaluate_now = functools.partial(evaluate_for_target, run)
    outcome = EpochOutcome.EPOCH_END
    while progress.epoch < cfg.epochs and progress.global_step < run.total_steps:
        batches = iter(feed.epoch_batches(progress.epoch, progress.step_in_epoch))
        run.log(
            f"epoch {progress.epoch}: from batch {progress.step_in_epoch} of "
            f"{feed.steps(progress.epoch)}"
        )
        outcome = train_one_epoch(run, batches, checkpoint_now, evaluate_now)
        if hasattr(batches, "close"):
            # A shard stream left mid-epoch (max steps, a stop) still holds its loader workers;
            # end them now, not when the generator is collected, so evaluation does not fork its
            # own workers beside them.
            batches.close()
        if outcome in (EpochOutcome.STOPPED, EpochOutcome.TARGET):
            return outcome
        if outcome is EpochOutcome.EPOCH_END:
            epoch_done = progress.epoch
            due = val_set is not None and (epoch_done + 1) % cfg.eval_every == 0
            if due and run.evals.at_step != progress.global_step and evaluate_for_target(run):
                return EpochOutcome.TARGET
            progress.epoch, progress.step_in_epoch = progress.epoch + 1, 0
    return outcome


def stop_preempted(run: Run) -> int:
    """A stop request: a checkpoint to resume from, and the exit code that brings the job back."""
    progress = run.progress
    run.log(
        f"received {run.stop.signal_name or 'a stop request'}: saving at step {progress.global_step}"
    )
    save(run, "preempted")
    run.metrics.write(
        {records.KIND: records.STOPPED, "step": progress.global_step, "epoch": progress.epoch}
    )
    run.metrics.close()
    return PREEMPTED_EXIT_CODE


def finish(run: Run) -> int:
    """The final checkpoint, a last evaluation unless this step was just evaluated, the target's
    record when it was never reached, done."""
    progress = run.progress
    save(run, "final")
    if run.data.val_set is not None and run.evals.at_step != progress.global_step:
        evaluate_for_target(run)
    if run.cfg.target_map is not None and run.evals.reached is None:
        record_target(run, reached=False)
    run.metrics.write(
        {records.KIND: records.DONE, "step": progress.global_step, "epoch": progress.epoch}
    )
    run.metrics.close()
    run.log(f"finished at step {progress.global_step}; outputs in {run.cfg.output_dir}")
    return 0


def save(run: Run, reason: str) -> None:
    """Collective (gathers every rank's RNG state); rank 0 writes."""
    cfg, ctx, progress, feed, comm = run.cfg, run.ctx, run.progress, run.data.feed, run.net.comm
    rngs = all_gather_objects(ctx, checkpoint.rng_state())
    positions = None
    if isinstance(feed, ShardFeed):  # every rank's stream position (exact resume)
        positions = all_gather_objects(ctx, feed.position())
    comm_states = None
    if comm is not None and comm.powersgd is not None:  # each rank's own error feedback
        comm_states = gather_objects(ctx, comm.state_dict())
    if not ctx.is_main or run.last_saved_step == progress.global_step:
        return
    state = {
        "model": run.net.model_without_ddp.state_dict(),
        "optimizer": run.opt.optimizer.state_dict(),
        "scheduler": run.opt.scheduler.state_dict(),
        "scaler": run.opt.scaler.state_dict() if run.opt.scaler else None,
        # The seconds so far, earlier attempts' included: a resumed run's time to target goes on.
        "progress": {
            **vars(progress),
            "saved_at": time.time(),
            "wall_seconds": run.wall_seconds(),
            "eval_seconds": progress.eval_seconds + run.evals.seconds,
        },
        "rng": rngs,
        "config": {**cfg.to_dict(), **run.path.trained()},
        "class_names": list(run.data.class_names),
        "world_size": ctx.world_size,
        "data": run.data.info,
        "stream": positions,
        "comm_hook": comm_states,
        "reason": reason,
        "versions": {
            "torch": str(torch.__version__),
            "torchvision": str(torchvision.__version__),
        },
    }
    path = checkpoint.save_checkpoint(
        cfg.output_dir, progress.global_step, state, cfg.keep_checkpoints
    )
    run.last_saved_step = progress.global_step
    run.log(f"saved checkpoint {path} ({reason})")


def evaluate_for_target(run: Run) -> bool:
    """Evaluate, and whether this evaluation reached --target-map first (its record written,
    run.json told): the run then stops, as MLPerf runs do. Every rank gets the same answer."""
    result = run_eval(run)
    cfg = run.cfg
    if cfg.target_map is None or run.evals.reached is not None:
        return False
    value = float(result[cfg.target_metric])
    run.evals.best = max(run.evals.best, value)
    if value < cfg.target_map:
        return False
    record_target(run, reached=True)
    return True


def record_target(run: Run, reached: bool) -> None:
    """The target record and run.json's `target`: the step, wall time, images and GPU-hours at
    which --target-map was reached, or where the run ended without it ("not reached"), and what
    evaluating cost (its seconds and share of the wall time)."""
    cfg, ctx, progress = run.cfg, run.ctx, run.progress
    wall = run.wall_seconds()
    eval_seconds = progress.eval_seconds + run.evals.seconds
    record: dict[str, JSON] = {
        records.KIND: records.TARGET,
        "status": "reached" if reached else "not reached",
        "metric": cfg.target_metric,
        "target": cfg.target_map,
        "value": round(run.evals.best, 6) if run.evals.best >= 0 else None,
        "step": progress.global_step,
        "epoch": progress.epoch,
        "wall_time": round(wall, 3),  # from the first attempt's start: every attempt's, and gaps
        "gap_seconds": round(progress.gap_seconds, 3),  # of which no attempt ran
        "images": progress.images,
        # One GPU per rank, while an attempt runs; a CPU run has none to count.
        "gpu_hours": round((wall - progress.gap_seconds) * ctx.world_size / 3600, 6)
        if ctx.device.type == "cuda"
        else None,
        "eval_seconds": round(eval_seconds, 3),
        "eval_share": round(eval_seconds / wall, 4) if wall > 0 else None,
    }
    run.metrics.write(record)
    if reached:
        run.evals.reached = record
    if ctx.is_main:
        add_to_run_json(
            cfg.output_dir, {"target": {k: v for k, v in record.items() if k != records.KIND}}
        )
    said = "reached" if reached else "not reached; best"
    run.log(
        f"target {cfg.target_metric} {cfg.target_map:g} {said} {run.evals.best:.4f} at step "
        f"{progress.global_step}, {wall:.1f} s, {progress.images} images; evaluation took "
        f"{eval_seconds:.1f} s ({100 * eval_seconds / max(wall, 1e-9):.1f}% of the run)"
    )


def run_eval(run: Run) -> dict:
    """Evaluate on every rank (the model rank 0 saves), write the eval record and count its
    seconds; returns the result (the same on every rank)."""
    cfg, progress, val_set = run.cfg, run.progress, run.data.val_set
    if val_set is None:
        raise TrainerError("evaluation asked of a run without a validation set")
    started = time.perf_counter()
    broadcast_buffers(run.ctx, run.net.model_without_ddp)  # every rank evaluates rank 0's model
    result = evaluate(
        run.ctx,
        run.net.model_without_ddp,
        val_set,
        cfg.batch_size,
        cfg.workers,
        cfg.eval_max_images,
        run.path.dtype,
        cfg.eval_metric,
        cfg.oid_expand_predictions,
    )
    seconds = time.perf_counter() - started
    run.metrics.write(
        {
            records.KIND: records.EVAL,
            "step": progress.global_step,
            "epoch": progress.epoch,
            "map": round(result["map"], 6),
            "map50": round(result["map50"], 6),
            **{k: v for k, v in result.items() if k.startswith("oid_")},  # --eval-metric oid
            "images": result["images"],
            "detections": result["detections"],
            "eval_time": round(seconds, 3),
        }
    )
    run.evals.at_step = progress.global_step
    run.evals.seconds += seconds
    return result


def _train_size(cfg: TrainConfig) -> tuple[int, int]:
    """(height, width) of a 4:3 landscape image after the model's resize."""
    return cfg.min_size, min(cfg.max_size, cfg.min_size * 4 // 3)


def _padded_shapes(cfg: TrainConfig) -> int:
    """How many (height, width) a batch can pad to: the shorter side resizes to --min-size, or
    the longer to --max-size when it would pass it, and both round up to a multiple of 32."""

    def up(side: int) -> int:
        return -(-side // 32) * 32

    short, longest = cfg.min_size, cfg.max_size
    landscape = {(up(short), up(side)) for side in range(short, longest + 1)}
    landscape |= {(up(side), up(longest)) for side in range(1, short + 1)}
    return len(landscape | {(w, h) for h, w in landscape})


def _run_info(
    cfg: TrainConfig, ctx: DistContext, path: FastPath, ranks: list[dict], resumed_from: str | None
) -> dict:
    devices = []
    if ctx.device.type == "cuda":
        devices = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
    return {
        "config": {**cfg.to_dict(), **path.trained()},
        "world_size": ctx.world_size,
        "backend": ctx.backend,
        "device": str(ctx.device),
        "devices_on_rank0_host": devices,
        "ranks": ranks,
        "host": socket.gethostname(),
        "started": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "resumed_from": resumed_from,
        "versions": {
            "python": platform.python_version(),
            "torch": torch.__version__,
            "torchvision": torchvision.__version__,
            "numpy": np.__version__,
            "Pillow": PIL.__version__,
            "cuda": torch.version.cuda,
            "nccl": _nccl_version(),
        },
        "env": {
            k: v
            for k, v in sorted(os.environ.items())
            if k.startswith(("NCCL_", "PET_", "TORCHELASTIC_", "RUNAI_"))
            or k in ("MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "OMP_NUM_THREADS")
        },
    }


def _nccl_version() -> str | None:
    if not torch.cuda.is_available():
        return None
    version = torch.cuda.nccl.version()  # a tuple in recent torch, an int in older releases
    return ".".join(map(str, version)) if isinstance(version, tuple) else str(version)
