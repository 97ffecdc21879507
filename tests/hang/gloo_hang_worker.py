"""One rank of a real two-process gloo job that hangs on purpose (a test helper, not a trainer
entry): both ranks complete two collectives, then rank 1 sleeps STALL seconds before the third,
an all-reduce; rank 0 waits in it until the short timeout and dumps its Flight Recorder buffer
through the trainer's own dump function, as the trainer does after a failed collective.

    python gloo_hang_worker.py RANK OUTPUT_DIR STALL_SECONDS TIMEOUT_SECONDS
"""

from __future__ import annotations

import datetime
import os
import sys
import time

import torch
import torch.distributed as dist

from trainer import flight_recorder


def main() -> int:
    rank, output_dir = int(sys.argv[1]), sys.argv[2]
    stall, timeout = float(sys.argv[3]), float(sys.argv[4])
    os.environ["RANK"] = str(rank)
    flight_recorder.prepare(output_dir)
    dist.init_process_group(
        "gloo",
        init_method=f"file://{output_dir}/store",
        rank=rank,
        world_size=2,
        timeout=datetime.timedelta(seconds=timeout),
    )
    flight_recorder.start(rank, "gloo")
    tensor = torch.ones(1000)
    try:
        dist.all_reduce(tensor)
        dist.broadcast(tensor, src=0)
        if rank == 1:
            time.sleep(stall)
        dist.all_reduce(tensor)
    except RuntimeError:
        flight_recorder.dump_if_in_collective("collective failed")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
