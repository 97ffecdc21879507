#!/usr/bin/env bash
# Pod entry point for RetinaNet DDP training (Run:ai / Kubeflow PyTorchJob, and runai-local).
#
# Works out torchrun's topology from the pod environment, prints what it decided and why, then
# execs torchrun (so torchrun is PID 1 and receives the kubelet's SIGTERM) with `-m trainer "$@"`.
#   nnodes         PET_NNODES, else 1
#   node rank      PET_NODE_RANK, else RANK (the pod index under Kubeflow), else 0
#   nproc-per-node RUNAI_NUM_OF_GPUS (0 -> one CPU process), else the visible GPUs, else 1 (CPU)
#   rendezvous     one node: --standalone; several: static, at MASTER_ADDR:MASTER_PORT, so node 0
#                  (the master pod) holds global rank 0 and its log carries the metrics lines
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
    if [[ "$nnodes" == *:* ]]; then
        # An elastic range cannot use static ranks; c10d assigns them as nodes join.
        rdzv=(--rdzv-backend c10d --rdzv-endpoint "$MASTER_ADDR:$port"
              --rdzv-id "${RUNAI_JOB_NAME:-${JOB_NAME:-retinanet}}")
        rdzv_why="elastic nnodes $nnodes: c10d rendezvous at $MASTER_ADDR:$port"
    else
        # Explicit backend and endpoint: a PET_RDZV_* left in the pod's environment must not win.
        rdzv=(--rdzv-backend static --rdzv-endpoint "$MASTER_ADDR:$port" --node-rank "$node_rank"
              --master-addr "$MASTER_ADDR" --master-port "$port")
        rdzv_why="static rendezvous at $MASTER_ADDR:$port (node 0 hosts it)"
    fi
fi

if command -v torchrun >/dev/null 2>&1; then
    launcher=(torchrun)
else
    launcher=("${PYTHON:-python3}" -m torch.distributed.run)
fi

say "nnodes=$nnodes ($nnodes_why)"
say "node-rank=$node_rank ($rank_why)"
say "nproc-per-node=$nproc ($nproc_why)"
say "rendezvous: $rdzv_why"
say "launcher: ${launcher[*]}; WORLD_SIZE=${WORLD_SIZE:-unset} is ignored"

cmd=("${launcher[@]}" --nnodes "$nnodes" --nproc-per-node "$nproc" "${rdzv[@]}" -m trainer "$@")
if [[ "${TRAIN_LAUNCH_DRY_RUN:-0}" == "1" ]]; then
    printf 'train-retinanet-ddp: dry run:'
    printf ' %q' "${cmd[@]}"
    printf '\n'
    exit 0
fi
say "exec: ${cmd[*]}"
exec "${cmd[@]}"
