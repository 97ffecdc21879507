#!/usr/bin/env bash
# Pod entry point for RetinaNet DDP training (Run:ai / Kubeflow PyTorchJob, and runai-local).
#
# Works out torchrun's topology from the pod environment, prints what it decided and why, then
# runs torchrun with `-m trainer "$@"` and exits with its code, or with 2 when the trainer named a
# permanent fault (below). As PID 1 (a container) it passes the kubelet's TERM/INT/HUP on to
# torchrun; elsewhere (the local cluster signals the pod's whole process group) torchrun gets them
# itself, once.
#   nnodes         PET_NNODES, else 1
#   node rank      PET_NODE_RANK, else RANK (the pod index under Kubeflow), else 0
#   nproc-per-node RUNAI_NUM_OF_GPUS (0 -> one CPU process), else the visible GPUs, else 1 (CPU)
#   rendezvous     one node: --standalone; several: c10d, its store hosted by node 0 (the master
#                  pod) at MASTER_ADDR:MASTER_PORT. Node 0 sorts first (its address is MASTER_ADDR,
#                  the others' their pod name), so it holds global rank 0 and its log carries the
#                  metrics lines. A static rendezvous never forms again once a pod restarts; c10d
#                  does: the restarted pod's agent joins the next round, the others rejoin it.
#   restarts       --max-restarts PET_MAX_RESTARTS, else 3: when a rank dies, torchrun stops the
#                  whole worker group on every pod and starts it again; the trainer resumes from
#                  the newest complete checkpoint (--resume auto). Past that, the pod fails and
#                  the job's restart policy and backoff limit decide.
#   permanent      a fault no restart cures (bad input: the trainer's exit 2; a missing network
#                  interface; a missing dataset path) is one the trainer writes to
#                  TRAIN_PERMANENT_FAULT_FILE, and it stops torchrun's agent before the agent restarts
#                  the group: the script then exits 2 at its first occurrence, no torchrun
#                  restart. Kubeflow's ExitCode restart policy (the local cluster's too) takes exit
#                  codes 1-127 as permanent and 128-255 as retryable, so any other failure of
#                  torchrun (its group failed past --max-restarts, a rendezvous whose store went
#                  away with the master pod: a new pod may pass) exits RETRYABLE_EXIT (200).
# WORLD_SIZE is never used: depending on the operator version it counts pods or processes.
# TRAIN_LAUNCH_DRY_RUN=1 prints the final command and exits without launching.
set -euo pipefail

say() { printf 'train-retinanet-ddp: %s\n' "$*"; }
die() { printf 'train-retinanet-ddp: error: %s\n' "$*" >&2; exit 2; }
is_uint() { [[ "$1" =~ ^[0-9]+$ ]]; }

script_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

# Make `trainer` importable in both layouts: the PVC (<root>/shell/this.sh, <root>/train/trainer)
# and this repository (scripts/this.sh, trainer/). The working directory stays first on sys.path.
for candidate in "$script_dir/.." "$script_dir/../train"; do
    if [[ -d "$candidate/trainer" ]]; then
        dir="$(cd "$candidate" && pwd)"
        PYTHONPATH="$dir${PYTHONPATH:+:$PYTHONPATH}"
        say "trainer package found in $dir (added to PYTHONPATH)"
    fi
done
export PYTHONPATH="${PYTHONPATH:-}"

# nnodes
if [[ -n "${PET_NNODES:-}" ]]; then
    nnodes="$PET_NNODES"; nnodes_why="PET_NNODES"
else
    nnodes=1; nnodes_why="PET_NNODES unset"
fi
[[ "$nnodes" =~ ^[0-9]+(:[0-9]+)?$ ]] || die "PET_NNODES='$nnodes': expected N or MIN:MAX"
max_nodes="${nnodes##*:}"
[[ "$max_nodes" -ge 1 ]] || die "PET_NNODES='$nnodes': need at least one node"

# node rank
if [[ -n "${PET_NODE_RANK:-}" ]]; then
    node_rank="$PET_NODE_RANK"; rank_why="PET_NODE_RANK"
elif [[ -n "${RANK:-}" ]]; then
    node_rank="$RANK"; rank_why="RANK (pod index)"
else
    node_rank=0; rank_why="PET_NODE_RANK and RANK unset"
fi
is_uint "$node_rank" || die "node rank '$node_rank' (from $rank_why) is not a non-negative integer"
[[ "$node_rank" -lt "$max_nodes" ]] || die "node rank $node_rank (from $rank_why) >= nnodes $nnodes"

# processes per node
visible_gpus() {
    if [[ -n "${CUDA_VISIBLE_DEVICES+x}" ]]; then
        case "$CUDA_VISIBLE_DEVICES" in
            "" | "-1" | NoDevFiles | none) echo 0 ;;
            *) awk -F, '{print NF}' <<<"$CUDA_VISIBLE_DEVICES" ;;
        esac
    elif command -v nvidia-smi >/dev/null 2>&1; then
        nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true
    else
        echo 0
    fi
}
if [[ -n "${RUNAI_NUM_OF_GPUS:-}" ]]; then
    gpus="$RUNAI_NUM_OF_GPUS"
    [[ "$gpus" =~ ^[0-9]+(\.[0-9]+)?$ ]] || die "RUNAI_NUM_OF_GPUS='$gpus': expected a number"
    if [[ "$gpus" =~ ^0+(\.0+)?$ ]]; then
        nproc=1; nproc_why="RUNAI_NUM_OF_GPUS=$gpus: one CPU process"
    elif [[ "$gpus" == *.* ]]; then
        nproc=1; nproc_why="RUNAI_NUM_OF_GPUS=$gpus (a GPU fraction): one process"
    else
        nproc="$gpus"; nproc_why="RUNAI_NUM_OF_GPUS=$gpus: one process per GPU"
    fi
else
    count="$(visible_gpus)"
    if [[ "$count" -gt 0 ]]; then
        nproc="$count"; nproc_why="RUNAI_NUM_OF_GPUS unset, $count visible GPU(s)"
    else
        nproc=1; nproc_why="RUNAI_NUM_OF_GPUS unset, no visible GPU: one CPU process"
    fi
fi

# rendezvous
if [[ "$nnodes" == "1" ]]; then
    rdzv=(--standalone)
    rdzv_why="single node: standalone rendezvous on a free local port"
else
    [[ -n "${MASTER_ADDR:-}" ]] || die "nnodes $nnodes needs MASTER_ADDR (the master pod's address)"
    port="${MASTER_PORT:-29500}"
    is_uint "$port" || die "MASTER_PORT='$port' is not a port number"
    # Explicit backend and endpoint: a PET_RDZV_* left in the pod's environment must not win.
    # c10d ranks nodes by their address: node 0 gives MASTER_ADDR (the address the others reach
    # it by), the others their pod name, which sorts after it (`JOB-master-0` < `JOB-worker-N`;
    # on the local cluster 127.0.0.1 < a name).
    # A worker waits this long for the master's store (its pod may still be pulling the image):
    # torch's 60 s default would fail the pod, and each such restart spends the backoff limit.
    rdzv_timeout="${TRAIN_RDZV_TIMEOUT:-600}"
    is_uint "$rdzv_timeout" || die "TRAIN_RDZV_TIMEOUT='$rdzv_timeout' is not a whole number of seconds"
    if [[ "$node_rank" == "0" ]]; then
        host=true; local_addr="$MASTER_ADDR"
    else
        host=false; local_addr="${POD_NAME:-${HOSTNAME:-$(hostname 2>/dev/null || echo node-$node_rank)}}"
    fi
    rdzv=(--rdzv-backend c10d --rdzv-endpoint "$MASTER_ADDR:$port"
          --rdzv-id "${RUNAI_JOB_UUID:-${RUNAI_JOB_NAME:-${JOB_NAME:-retinanet}}}"
          --rdzv-conf "is_host=$host,read_timeout=$rdzv_timeout" --local-addr "$local_addr")
    if [[ "$nnodes" == *:* ]]; then
        rdzv_why="elastic nnodes $nnodes: c10d rendezvous at $MASTER_ADDR:$port"
    else
        rdzv_why="c10d rendezvous at $MASTER_ADDR:$port (node 0 hosts it; it survives a pod restart)"
    fi
fi

# torchrun shares its rendezvous store with the trainer unless told not to; a pod that restarts
# (a fresh agent) then waits forever for keys the surviving rank 0 wrote only in the first round
# (torch 2.14: "wait timeout ... /MASTER_ADDR", then the job fails). Unshared, rank 0 publishes
# them every round.
export TORCH_DISABLE_SHARE_RDZV_TCP_STORE="${TORCH_DISABLE_SHARE_RDZV_TCP_STORE:-1}"
restarts="${PET_MAX_RESTARTS:-3}"
restarts_why="${PET_MAX_RESTARTS:+PET_MAX_RESTARTS}"; restarts_why="${restarts_why:-default}"
is_uint "$restarts" || die "PET_MAX_RESTARTS='$restarts' is not a non-negative integer"

if command -v torchrun >/dev/null 2>&1; then
    launcher=(torchrun)
else
    launcher=("${PYTHON:-python3}" -m torch.distributed.run)
fi

say "nnodes=$nnodes ($nnodes_why)"
say "node-rank=$node_rank ($rank_why)"
say "nproc-per-node=$nproc ($nproc_why)"
say "rendezvous: $rdzv_why"
say "max-restarts=$restarts (${restarts_why}; a rank that fails restarts the whole worker group)"
say "launcher: ${launcher[*]}; WORLD_SIZE=${WORLD_SIZE:-unset} is ignored"

cmd=("${launcher[@]}" --nnodes "$nnodes" --nproc-per-node "$nproc" "${rdzv[@]}"
     --max-restarts "$restarts" -m trainer "$@")
if [[ "${TRAIN_LAUNCH_DRY_RUN:-0}" == "1" ]]; then
    printf 'train-retinanet-ddp: dry run:'
    printf ' %q' "${cmd[@]}"
    printf '\n'
    exit 0
fi

# The trainer's word on a fault no restart cures, per container run (a restarted container starts
# with none).
fault_file="${TMPDIR:-/tmp}/train-permanent-fault.$$"
: >"$fault_file"
forget_fault() { if command -v rm >/dev/null 2>&1; then rm -f "$fault_file"; fi; }
export TRAIN_PERMANENT_FAULT_FILE="$fault_file"
RETRYABLE_EXIT=200
say "exec: ${cmd[*]}"
"${cmd[@]}" &
child=$!
pass_on() {  # only PID 1 passes a signal on: elsewhere its sender signalled the group already
    if [[ $$ -eq 1 ]]; then kill -"$1" "$child" 2>/dev/null || true; fi
}
trap 'pass_on TERM' TERM
trap 'pass_on INT' INT
trap 'pass_on HUP' HUP
while kill -0 "$child" 2>/dev/null; do
    wait "$child" || true  # returns early when a trapped signal arrives
done
rc=0
wait "$child" || rc=$?
if [[ -s "$fault_file" ]]; then
    fault="$(<"$fault_file")"
    say "permanent fault, not restarted (exit 2): ${fault:0:2000}"
    forget_fault
    exit 2
fi
forget_fault
if [[ "$rc" -ge 1 && "$rc" -le 127 ]]; then
    say "torchrun exited with code $rc and no permanent fault was named: exit $RETRYABLE_EXIT (retryable)"
    exit "$RETRYABLE_EXIT"
fi
exit "$rc"
