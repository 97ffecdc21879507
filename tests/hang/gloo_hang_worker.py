"""One rank of a real two-process gloo job that hangs on purpose (a test helper, not a trainer
entry). Both ranks complete an all-reduce and a broadcast in a group with a short timeout; then
rank 1 stalls before the next all-reduce while rank 0 waits in it until the timeout and dumps
its Flight Recorder buffer through the trainer's own dump function, as the trainer does after a
failed collective.

    python gloo_hang_worker.py RANK OUTPUT_DIR MODE
    MODE late:  rank 1 sleeps past the timeout, then enters the all-reduce (fails, dumps too)
    MODE never: rank 1 dumps its buffer (torch's recorder, in-process) before it stalls, and
                leaves without entering the all-reduce
    MODE sigterm: each rank gets SIGTERM through the trainer's stop handler: rank 0 while its
                all-reduce is in flight (it dumps), rank 1 between collectives (it does not);
                then the all-reduce completes
"""

from __future__ import annotations

import datetime
import os
import signal
import sys
import time

import torch
import torch.distributed as dist

from trainer import flight_recorder

TIMEOUT_SECONDS = 2.0
STALL_SECONDS = 5.0


def main() -> int:
    rank, output_dir, mode = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    os.environ["RANK"] = str(rank)
    flight_recorder.prepare(output_dir)
    # The rendezvous keeps a long timeout (the two interpreters start at different speeds under
    # load); only the group the collectives run in has the short one.
    dist.init_process_group(
        "gloo", init_method=f"file://{output_dir}/store", rank=rank, world_size=2,
        timeout=datetime.timedelta(seconds=120),
    )  # fmt: skip
    timeout = TIMEOUT_SECONDS if mode != "sigterm" else 60.0  # there nothing times out
    group = dist.new_group(timeout=datetime.timedelta(seconds=timeout))
    flight_recorder.start(rank, "gloo")
    tensor = torch.ones(1000)
    if mode == "sigterm":
        # Only here: trainer.state imports torchvision, and with it torch._dynamo (4.5 of the
        # 9 CPU-seconds this process takes to start); the hang modes need torch alone.
        from trainer.state import StopRequest

        StopRequest().install()
        dist.all_reduce(tensor, group=group)
        if rank == 1:
            os.kill(os.getpid(), signal.SIGTERM)  # between collectives: no dump
            # Away longer than the handler waits for an in-flight collective to settle.
            time.sleep(flight_recorder.SETTLE_SECONDS + 1.0)
        work = dist.all_reduce(tensor, group=group, async_op=True)
        if rank == 0:
            os.kill(os.getpid(), signal.SIGTERM)  # rank 1 is not there yet: in flight
            time.sleep(0.1)  # the handler runs at the next bytecode (and waits to settle)
        work.wait()
        return 0
    try:
        dist.all_reduce(tensor, group=group)
        dist.broadcast(tensor, src=0, group=group)
        if rank == 1:
            if mode == "never":
                while flight_recorder.in_collective():  # gloo marks completion a moment late
                    time.sleep(0.01)
                flight_recorder.dump("before the stall")
            time.sleep(STALL_SECONDS)
            if mode == "never":
                return 0
        dist.all_reduce(tensor, group=group)
    except RuntimeError:
        flight_recorder.dump("collective failed")  # as trainer/__main__.py does
        return 1
    return 0


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    # Straight out: a gloo group left after a timed-out collective can abort the interpreter's
    # teardown (SIGABRT), which would hide the exit code the tests read.
    os._exit(code)
