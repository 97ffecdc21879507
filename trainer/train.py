"""The training run, top to bottom: data, model, optimiser, resume, loop, evaluation, reports.

Imported only after the command line has been checked, so usage errors never wait for torch.
"""

from __future__ import annotations

import os
import platform
import socket
import time
from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any

import numpy as np
import PIL
import torch
import torchvision
from torch.nn.parallel import DistributedDataParallel

from trainer import checkpoint, test_hooks
from trainer.amp import choose_amp
from trainer.comm import GradientComm, bucket_cap_mb, parse_hook
from trainer.config import TrainConfig
from trainer.data.dataset import DetectionDataset
from trainer.data.feeds import build_train_data, check_same_corpus
from trainer.data.stream import ShardFeed
from trainer.distributed import DistContext, all_gather_objects, broadcast_buffers, gather_objects
from trainer.engine import Progress, StopRequest, WarmupCosine, amp_dtype, train_one_epoch
from trainer.errors import ConfigError
from trainer.evaluate import evaluate
from trainer.loss import install_batched_loss
from trainer.metrics import MetricsLog, open_tensorboard, write_run_json
from trainer.model import build_model, parameter_groups

PREEMPTED_EXIT_CODE = 143  # 128 + SIGTERM: the restart policy brings the job back to resume


def train(cfg: TrainConfig, ctx: DistContext) -> int:
    def log(message: str) -> None:
        if ctx.is_main:
            print(f"trainer: {message}", flush=True)

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

    # Data: the index (files) or the manifest (shards) knows every image's size and boxes, and
    # every rank's number of steps, before any image is decoded (trainer/data/feeds.py).
    data = build_train_data(cfg, ctx, log)
    if data is None:
        return 0
    feed, val_set, class_names = data.feed, data.val_set, data.class_names
    epoch_steps = [feed.steps(e) for e in range(cfg.epochs)]
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
    data_info = data.info

    # Model, optimiser, schedule.
    model = build_model(cfg, data.num_classes).to(ctx.device)
    if cfg.loss == "batched":
        install_batched_loss(model, cfg.model, log)  # says on the first batch what it kept
    # The checkpoint to resume from, before the precision is chosen: a resumed run keeps its own.
    found = checkpoint.find_resume_checkpoint(cfg.output_dir, cfg.resume, warn=log)
    amp = choose_amp(
        cfg.amp, ctx, model, cfg.micro_batch_size, _train_size(cfg),
        found[1].get("config", {}).get("amp") if found else None, log,
    )  # fmt: skip
    amp_asked, cfg.amp = cfg.amp, amp.amp  # what the run trains in; checkpoints record it
    log(f"precision: {amp.amp if amp.amp != 'none' else 'fp32'} ({amp.why})")
    if cfg.compile:
        # In place (nn.Module.compile): the state dict keeps its keys, checkpoints stay as they
        # are. Anchors, the loss and post-processing have data-dependent shapes: they stay eager.
        backend = test_hooks.compile_backend()
        for part in ("backbone", "head"):
            module = model.get_submodule(part)
            module.compile(backend=backend)
        log(
            f"--compile: backbone+FPN and head compiled ({backend}) at their first step; batches "
            f"pad to multiples of 32, at most {_padded_shapes(cfg)} shapes at --min-size "
            f"{cfg.min_size} --max-size {cfg.max_size}: the first shape compiles a static graph, "
            "the second one graph dynamic in height and width that later shapes reuse "
            "(TORCH_LOGS=recompiles lists every recompile)"
        )
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
    if cfg.amp == "fp16" and ctx.device.type == "cpu":
        log("note: --amp fp16 on CPU is emulated and very slow; use bf16 or none on CPU")
    model_without_ddp = model
    comm: GradientComm | None = None
    if ctx.distributed:
        choice = parse_hook(cfg.ddp_comm_hook)
        cap = bucket_cap_mb(choice, str(ctx.backend), model, cfg.ddp_bucket_mb, log)
        model = DistributedDataParallel(
            model,
            device_ids=[ctx.device.index] if ctx.device.type == "cuda" else None,
            bucket_cap_mb=cap,
            gradient_as_bucket_view=cfg.gradient_as_bucket_view,
        )
        comm = GradientComm(choice, start_iter=cfg.warmup_steps)
        label = comm.install(model, log)
        log(
            f"DDP: --ddp-comm-hook {label} ({comm.describe()}); "
            f"{f'{cap} MiB buckets' if cap else 'default buckets (25 MiB, first 1 MiB)'}; "
            f"gradient_as_bucket_view {'on' if cfg.gradient_as_bucket_view else 'off'}"
        )
    elif cfg.ddp_comm_hook != "none":
        log(f"--ddp-comm-hook {cfg.ddp_comm_hook} ignored: one process sends no gradients")
    global_batch = cfg.batch_size * ctx.world_size
    lr = cfg.resolved_lr(global_batch)
    weight_decay, norm_weight_decay = cfg.resolved_weight_decay()
    param_groups = parameter_groups(model_without_ddp, weight_decay, norm_weight_decay)
    fused: dict[str, Any] = {"fused": True} if ctx.device.type == "cuda" else {}
    optimizer: torch.optim.Optimizer
    if cfg.optimizer == "sgd":
        optimizer = torch.optim.SGD(param_groups, lr=lr, momentum=cfg.momentum, **fused)
    else:
        optimizer = torch.optim.AdamW(param_groups, lr=lr, **fused)
    schedule = WarmupCosine(
        cfg.warmup_steps, cfg.warmup_factor, total_steps, cfg.lr_schedule == "cosine"
    )
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, schedule)
    scaler = torch.amp.GradScaler(ctx.device.type) if cfg.amp == "fp16" else None
    log(
        f"model {cfg.model}, {data.num_classes} classes incl. background, "
        f"{sum(p.numel() for p in model_without_ddp.parameters()) / 1e6:.1f}M parameters; "
        f"{cfg.optimizer} lr {lr:g} (= {cfg.resolved_lr(cfg.lr_base_batch):g} x global batch "
        f"{global_batch} / {cfg.lr_base_batch}), weight decay {weight_decay:g} "
        f"(norm layers {norm_weight_decay:g}); {per_epoch} steps per epoch, "
        f"{total_steps} steps in total"
    )

    # Resume: model, optimiser, schedule, scaler, position and RNG, before anything is written.
    progress = Progress()
    writer = None
    if cfg.tensorboard and ctx.is_main:
        writer, note = open_tensorboard(cfg.output_dir)
        log(note)
    metrics = MetricsLog(cfg.output_dir, ctx.is_main, writer)
    if cfg.resume == "none" and checkpoint.list_checkpoints(cfg.output_dir):
        # Their higher step numbers would win over this run's files in rotation and resume.
        raise ConfigError(
            f"--resume none but {checkpoint.checkpoint_dir(cfg.output_dir)} holds checkpoints of "
            "another run; use a fresh --output-dir (or --resume auto to continue that run)"
        )
    if found:
        path, ckpt = found
        checkpoint.check_compatible(ckpt, path, cfg.model, class_names)
        model_without_ddp.load_state_dict(ckpt["model"])
        optimizer.load_state_dict(ckpt["optimizer"])
        wanted_schedule = dict(vars(schedule))  # loading overwrites the schedule object's fields
        scheduler.load_state_dict(ckpt["scheduler"])
        _keep_command_line_hyperparameters(
            optimizer, scheduler, schedule, wanted_schedule, param_groups, lr
        )
        if scaler and ckpt.get("scaler"):
            scaler.load_state_dict(ckpt["scaler"])
        progress = Progress(**ckpt["progress"])
        _restore_comm_state(comm, ckpt, ctx.rank, log)
        rng = ckpt.get("rng", [])
        if ctx.rank < len(rng):
            checkpoint.set_rng_state(rng[ctx.rank])
        if progress.step_in_epoch >= feed.steps(progress.epoch):
            progress.epoch, progress.step_in_epoch = progress.epoch + 1, 0
        if isinstance(feed, ShardFeed):
            check_same_corpus(ckpt, path, data_info)
            positions = ckpt.get("stream") or []
            note = feed.restore(
                positions[ctx.rank] if ctx.rank < len(positions) else None,
                progress.epoch,
                progress.step_in_epoch,
            )
            if note:
                log(f"{note}; continuing with epoch {progress.epoch + 1}")
                progress.epoch, progress.step_in_epoch = progress.epoch + 1, 0
        log(
            f"resumed from {path}: step {progress.global_step}, epoch {progress.epoch}, "
            f"batch {progress.step_in_epoch} of the epoch"
        )
    metrics.truncate_after(progress.global_step)  # a fresh run starts an empty file
    ranks = all_gather_objects(
        ctx, {"rank": ctx.rank, "host": socket.gethostname(), "device": str(ctx.device)}
    )
    if ctx.is_main:
        info = _run_info(cfg, ctx, ranks, found[0] if found else None)
        precision = {"asked": amp_asked, "chosen": amp.amp, "why": amp.why}
        write_run_json(cfg.output_dir, {**info, "data": data_info, "amp": precision})

    stop = StopRequest()
    stop.install()
    last_saved = {"step": -1}

    def save(reason: str) -> None:
        """Collective (gathers every rank's RNG state); rank 0 writes."""
        rngs = all_gather_objects(ctx, checkpoint.rng_state())
        positions = None
        if isinstance(feed, ShardFeed):  # every rank's stream position (exact resume)
            positions = all_gather_objects(ctx, feed.position())
        comm_states = None
        if comm is not None and comm.powersgd is not None:  # each rank's own error feedback
            comm_states = gather_objects(ctx, comm.state_dict())
        if not ctx.is_main or last_saved["step"] == progress.global_step:
            return
        state = {
            "model": model_without_ddp.state_dict(),
            "optimizer": optimizer.state_dict(),
            "scheduler": scheduler.state_dict(),
            "scaler": scaler.state_dict() if scaler else None,
            "progress": vars(progress).copy(),
            "rng": rngs,
            "config": cfg.to_dict(),
            "class_names": list(class_names),
            "world_size": ctx.world_size,
            "data": data_info,
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
        last_saved["step"] = progress.global_step
        log(f"saved checkpoint {path} ({reason})")

    def run_eval(val_set: DetectionDataset) -> None:
        started = time.perf_counter()
        broadcast_buffers(ctx, model_without_ddp)  # every rank evaluates the model rank 0 saves
        result = evaluate(
            ctx,
            model_without_ddp,
            val_set,
            cfg.batch_size,
            cfg.workers,
            cfg.eval_max_images,
            amp_dtype(cfg),
            cfg.eval_metric,
            cfg.oid_expand_predictions,
        )
        metrics.write(
            {
                "kind": "eval",
                "step": progress.global_step,
                "epoch": progress.epoch,
                "map": round(result["map"], 6),
                "map50": round(result["map50"], 6),
                **{k: v for k, v in result.items() if k.startswith("oid_")},  # --eval-metric oid
                "images": result["images"],
                "detections": result["detections"],
                "eval_time": round(time.perf_counter() - started, 3),
            }
        )

    # The loop. An epoch ends early only at --max-steps or on a stop request.
    outcome = "epoch_end"
    evaluated_at = -1
    while progress.epoch < cfg.epochs and progress.global_step < total_steps:
        batches = feed.epoch_batches(progress.epoch, progress.step_in_epoch)
        log(
            f"epoch {progress.epoch}: from batch {progress.step_in_epoch} of "
            f"{feed.steps(progress.epoch)}"
        )
        outcome = train_one_epoch(
            ctx, cfg, model, optimizer, scheduler, scaler, batches, progress,
            total_steps, metrics, save, stop, data.meter, comm,
        )  # fmt: skip
        if hasattr(batches, "close"):
            # A shard stream left mid-epoch (max steps, a stop) still holds its loader workers;
            # end them now, not when the generator is collected, so evaluation does not fork its
            # own workers beside them.
            batches.close()
        if outcome == "stopped":
            log(
                f"received {stop.signal_name or 'a stop request'}: saving at step {progress.global_step}"
            )
            save("preempted")
            metrics.write(
                {"kind": "stopped", "step": progress.global_step, "epoch": progress.epoch}
            )
            metrics.close()
            return PREEMPTED_EXIT_CODE
        if outcome == "epoch_end":
            epoch_done = progress.epoch
            if val_set is not None and (epoch_done + 1) % cfg.eval_every == 0:
                run_eval(val_set)
                evaluated_at = progress.global_step
            progress.epoch, progress.step_in_epoch = progress.epoch + 1, 0
    save("final")
    if val_set is not None and evaluated_at != progress.global_step:
        run_eval(val_set)
    metrics.write({"kind": "done", "step": progress.global_step, "epoch": progress.epoch})
    metrics.close()
    log(f"finished at step {progress.global_step}; outputs in {cfg.output_dir}")
    return 0


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


def _restore_comm_state(
    comm: GradientComm | None, ckpt: dict, rank: int, log: Callable[[str], None]
) -> None:
    """PowerSGD's per-rank state (error feedback, warm start, its step count) from a checkpoint
    saved with the same hook; any other pairing starts the hook afresh, said in one line."""
    saved = ckpt.get("comm_hook") or []
    wanted = comm.powersgd is not None if comm is not None else False
    if not saved and not wanted:
        return
    mine = saved[rank] if rank < len(saved) else None
    if comm is None or not wanted or mine is None or mine.get("hook") != comm.choice.label:
        was = saved[0].get("hook") if saved and saved[0] else "none"
        now = comm.choice.label if comm is not None else "none"
        log(f"--ddp-comm-hook {now}: the checkpoint's hook state ({was}) is not restored")
        return
    comm.load_state_dict(mine)
    log(f"--ddp-comm-hook {comm.choice.label}: state restored at its step {mine['iter']}")


def _keep_command_line_hyperparameters(
    optimizer: torch.optim.Optimizer,
    scheduler: torch.optim.lr_scheduler.LambdaLR,
    schedule: WarmupCosine,
    wanted_schedule: dict,
    wanted_groups: list[dict],
    lr: float,
) -> None:
    """A checkpoint restores state (momentum, step counts, position); the command line decides the
    hyperparameters. Loading put the saved learning rate, weight decay and schedule length back,
    so set this run's again: a resume with more --epochs or another world size follows them."""
    schedule.__dict__.update(wanted_schedule)
    scheduler.base_lrs = [lr for _ in optimizer.param_groups]
    for group, wanted in zip(optimizer.param_groups, wanted_groups, strict=True):
        group["weight_decay"] = wanted["weight_decay"]
        group["initial_lr"] = lr
        group["lr"] = lr * schedule(scheduler.last_epoch)  # what LambdaLR computes at this step


def _run_info(
    cfg: TrainConfig, ctx: DistContext, ranks: list[dict], resumed_from: str | None
) -> dict:
    devices = []
    if ctx.device.type == "cuda":
        devices = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
    return {
        "config": cfg.to_dict(),
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
