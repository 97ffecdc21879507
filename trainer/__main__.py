"""``python -m trainer``: distributed RetinaNet training.

Launched by torchrun (scripts/train-retinanet-ddp.sh works out its arguments); also runs as a single
plain process. Rank 0 alone writes files and prints; every line it prints that starts with ``{`` is
a metrics record. The code reads top to bottom in trainer/train.py.
"""

from __future__ import annotations

import os
import sys
import traceback

from trainer import permanent, run_lock
from trainer.config import TrainConfig, parse_config, validate
from trainer.errors import ConfigError, TrainerError


def check_input(cfg: TrainConfig) -> None:
    """Everything about the input that no restart changes, before any process group or data
    work: the flags and paths (validate), the network interfaces the environment names."""
    validate(cfg)
    uses_nccl = cfg.device != "cpu" and os.path.exists("/dev/nvidiactl")
    permanent.check_interfaces(os.environ, uses_nccl)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["prepare"]:  # offline: pack a split into shards (trainer/data/prepare.py)
        from trainer.data.prepare import main as prepare_main

        return prepare_main(args[1:])
    if args[:1] == ["oid-eval"]:  # score a saved predictions file (trainer/oid_eval.py)
        from trainer.oid_eval import main as oid_eval_main

        try:
            return oid_eval_main(args[1:])
        except TrainerError as exc:
            print(f"trainer: error: {exc}", file=sys.stderr, flush=True)
            return exc.exit_code
    if args[:1] == ["comm-check"]:  # the wire alone, for a job that trains nothing
        from trainer.comm_check import main as comm_check_main

        try:
            return comm_check_main(args[1:])
        except TrainerError as exc:
            print(f"trainer: error: {exc}", file=sys.stderr, flush=True)
            return exc.exit_code
    if args[:1] == ["verify"]:  # re-read every shard of a manifest
        from trainer.data.prepare import verify_main

        return verify_main(args[1:])
    cfg = parse_config(args)
    ctx = None
    lock = None
    try:
        check_input(cfg)
        if os.environ.get("RANK", "0") == "0":  # rank 0 holds the run's output dir, before torch
            lock = run_lock.acquire(cfg.output_dir, lambda m: print(f"trainer: {m}", flush=True))
        # Heavy imports only once the command line is known to be good.
        from trainer.distributed import init_distributed
        from trainer.train import train

        ctx = init_distributed(cfg.device, cfg.dist_timeout, cfg.output_dir)
        return train(cfg, ctx)
    except TrainerError as exc:
        rank = f"[rank {ctx.rank}] " if ctx and ctx.distributed else ""
        if cfg.debug:
            traceback.print_exc()
        print(f"trainer: error: {rank}{exc}", file=sys.stderr, flush=True)
        if isinstance(exc, ConfigError):  # no restart cures it: the job ends here
            permanent.give_up(f"trainer: error: {rank}{exc}")
        return exc.exit_code
    except Exception:
        if ctx is not None and ctx.distributed:
            # A collective that timed out or lost a peer, or a failure that leaves the others
            # waiting in one: where every rank was is what names the culprit.
            from trainer.flight_recorder import dump

            dump("collective failed")
        raise
    finally:
        if lock is not None:
            lock.release()
        if ctx is not None:
            from trainer.distributed import shutdown  # loaded with the heavy imports above

            shutdown(ctx)


if __name__ == "__main__":
    sys.exit(main())
