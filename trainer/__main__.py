"""``python -m trainer``: distributed RetinaNet training.

Launched by torchrun (scripts/train-retinanet-ddp.sh works out its arguments); also runs as a single
plain process. Rank 0 alone writes files and prints; every line it prints that starts with ``{`` is
a metrics record. The code reads top to bottom in trainer/train.py.
"""

from __future__ import annotations

import sys
import traceback

from trainer.config import parse_config, validate
from trainer.errors import TrainerError


def main(argv: list[str] | None = None) -> int:
    cfg = parse_config(argv)
    ctx = None
    try:
        validate(cfg)
        # Heavy imports only once the command line is known to be good.
        from trainer.distributed import init_distributed
        from trainer.train import train

        ctx = init_distributed(cfg.device, cfg.dist_timeout)
        return train(cfg, ctx)
    except TrainerError as exc:
        rank = f"[rank {ctx.rank}] " if ctx and ctx.distributed else ""
        if cfg.debug:
            traceback.print_exc()
        print(f"trainer: error: {rank}{exc}", file=sys.stderr, flush=True)
        return exc.exit_code
    finally:
        if ctx is not None:
            from trainer.distributed import shutdown

            shutdown(ctx)


if __name__ == "__main__":
    sys.exit(main())
