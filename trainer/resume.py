"""A run resumed from its checkpoint: the model, optimiser, schedule, scaler, hook state, RNG
and position loaded, and the command line's hyperparameters kept over the saved ones."""

from __future__ import annotations

import time
from collections.abc import Callable

import torch

from trainer import checkpoint
from trainer.comm import GradientComm
from trainer.data.feeds import check_same_corpus
from trainer.data.stream import ShardFeed
from trainer.errors import ConfigError
from trainer.state import Progress, Run, WarmupCosine

# (path, contents) of the checkpoint a run resumes from
Checkpoint = tuple[str, checkpoint.Contents]


def resume(run: Run, found: Checkpoint | None) -> None:
    """Load the checkpoint found (if any) into the model, optimiser, schedule, scaler, hook
    state, RNG and position; the command line's hyperparameters win over the saved ones."""
    cfg, ctx, net, opt = run.cfg, run.ctx, run.net, run.opt
    if cfg.resume == "none" and checkpoint.list_checkpoints(cfg.output_dir):
        # Their higher step numbers would win over this run's files in rotation and resume.
        raise ConfigError(
            f"--resume none but {checkpoint.checkpoint_dir(cfg.output_dir)} holds checkpoints of "
            "another run; use a fresh --output-dir (or --resume auto to continue that run)"
        )
    if not found:
        return
    path, ckpt = found
    checkpoint.check_compatible(ckpt, path, cfg.model, run.data.class_names)
    net.model_without_ddp.load_state_dict(ckpt["model"])
    opt.optimizer.load_state_dict(ckpt["optimizer"])
    wanted_schedule = dict(vars(opt.schedule))  # loading overwrites the schedule object's fields
    opt.scheduler.load_state_dict(ckpt["scheduler"])
    _keep_command_line_hyperparameters(
        opt.optimizer, opt.scheduler, opt.schedule, wanted_schedule, opt.param_groups, opt.lr
    )
    if opt.scaler and ckpt.get("scaler"):
        opt.scaler.load_state_dict(ckpt["scaler"])
    progress = run.progress = Progress(**ckpt["progress"])
    _restore_comm_state(net.comm, ckpt, ctx.rank, run.log)
    rng = ckpt.get("rng", [])
    if ctx.rank < len(rng):
        checkpoint.set_rng_state(rng[ctx.rank])
    feed = run.data.feed
    if progress.step_in_epoch >= feed.steps(progress.epoch):
        progress.epoch, progress.step_in_epoch = progress.epoch + 1, 0
    if isinstance(feed, ShardFeed):
        check_same_corpus(ckpt, path, run.data.info)
        positions = ckpt.get("stream") or []
        note = feed.restore(
            positions[ctx.rank] if ctx.rank < len(positions) else None,
            progress.epoch,
            progress.step_in_epoch,
        )
        if note:
            run.log(f"{note}; continuing with epoch {progress.epoch + 1}")
            progress.epoch, progress.step_in_epoch = progress.epoch + 1, 0
    run.log(
        f"resumed from {path}: step {progress.global_step}, epoch {progress.epoch}, "
        f"batch {progress.step_in_epoch} of the epoch"
    )


def count_time_since_checkpoint(run: Run, last_record: float | None) -> None:
    """A resumed run's time goes on from its first attempt's start: the checkpoint's seconds,
    plus the time from its save to this attempt's start (the steps trained after it and lost,
    the restart or the wait for slots), of which the time from the last attempt's last record
    (or its save, the later) to this start is the gap no attempt ran (rank 0 reads the records;
    its figures are the ones written: the records, run.json, the next checkpoint)."""
    progress = run.progress
    if progress.saved_at <= 0:
        return  # a checkpoint written before saves kept their time
    began = time.time() - (time.perf_counter() - run.started)  # this attempt's start
    progress.wall_seconds += max(0.0, began - progress.saved_at)
    # No attempt ran from its last record (or from the save, when nothing was recorded after it).
    progress.gap_seconds += max(0.0, began - max(last_record or 0.0, progress.saved_at))


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
