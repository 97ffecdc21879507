"""The distributed plan: what a profile's job will do, worked out before it is submitted.

From the profile (pods, GPUs per pod) and the trainer arguments in it (the trainer's defaults
where absent) this computes the DDP arithmetic an operator otherwise does by hand: world size,
global batch, the learning rate after the trainer's linear scaling rule, steps per epoch, the
model's parameter count and what one gradient all-reduce costs on the wire. Every formula is
written once, below, as a small function; docs/profiles.md ("runai-tui plan") documents them.

Core module: no Textual, no torch. The trainer's flags and defaults come from
runai_tui/trainer_flags/ (generated from trainer/config.py), its fast-path rule is
trainer/fast_path.py itself, and the parameter counts are small tables in
runai_tui/knowledge/trainer_facts.py (re-exported here, with the reading of the trainer's
arguments); tests/trainer/test_plan_tables.py fails when they disagree with the real torchvision
models.
"""

from __future__ import annotations

import statistics
from dataclasses import asdict, dataclass, field

from runai_tui.knowledge import nccl_env
from runai_tui.knowledge.records.progress import TrainingProgress
from runai_tui.knowledge.trainer_facts import (
    DATASET_CLASSES,
    DATASET_SIZES,
    ENTRY_SCRIPT,
    HOOK_WIRE_SHARE,
    MODEL_PARAMETERS,
    OPTIMIZER_LR,
    RESNET18_BODY,  # noqa: F401  (re-exported: these were plan's names before the split)
    RESNET50_BODY,  # noqa: F401
    TrainerArgs,
    read_trainer_args,
    trainer_args,  # noqa: F401  (re-exported, as above)
    trainer_args_problem,
)
from runai_tui.profiles import Profile
from runai_tui.shapes.errors import ErrorKind, RunaiError, UsageError
from runai_tui.trainer_flags import parse as parse_trainer_args  # noqa: F401  (re-exported)
from runai_tui.trainer_flags.fast_path import channels_last_choice, compile_choice
from runai_tui.util.quantity import KIB, MIB, bytes_text, memory_bytes, plain

ANCHORS_PER_LOCATION = 9  # 3 scales x 3 aspect ratios
HEAD_CHANNELS = 256
GRADIENT_BYTES_PER_PARAMETER = 4  # fp32: AMP autocasts activations, parameters and grads stay fp32

# Links the all-reduce time is given for: key -> Gb/s (line rate).
LINKS: dict[str, float] = {"tcp_25gbps": 25.0, "ib_200gbps": 200.0}
LINK_LABELS: dict[str, str] = {"tcp_25gbps": "25 Gb/s TCP", "ib_200gbps": "200 Gb/s InfiniBand"}
WIRE = "measured"  # the link key of a job's measured all-reduce busbw (plan --wire-from JOB)

# A measured step whose all-reduce (at the profile's link, with its hook) takes more than this
# share is mostly communication: plan warns.
MOSTLY_COMMUNICATION = 0.5

# How many log lines `plan` reads back from a job of the same profile.
MEASURE_TAIL = 5000


# ---------------------------------------------------------------------------------------------
# The formulas (each written once)


def processes_per_pod(gpus: int | None) -> int:
    """What the entry script starts in a pod: one process per GPU, one CPU process without."""
    return gpus if gpus else 1


def global_batch(batch_size: int, world_size: int) -> int:
    """Images per optimiser step over all processes (--batch-size is per process per step;
    --grad-accum splits it into micro-batches and does not multiply it)."""
    return batch_size * world_size


def scaled_lr(base_lr: float, batch: int, base_batch: int) -> float:
    """The trainer's linear scaling rule: lr = base_lr x global_batch / lr_base_batch."""
    return base_lr * batch / base_batch


def steps_per_epoch(dataset_size: int, batch: int) -> int:
    """Full global batches in one pass (the trainer drops the remainder)."""
    return dataset_size // batch


def total_steps(epochs: int, per_epoch: int, max_steps: int = 0) -> int:
    """Optimiser steps in the run: epochs x steps per epoch, capped by --max-steps when set."""
    steps = epochs * per_epoch
    return min(steps, max_steps) if max_steps else steps


def class_logits_parameters(num_classes: int) -> int:
    """RetinaNet's last classification conv: 3x3, 256 -> anchors x classes, with bias."""
    outputs = ANCHORS_PER_LOCATION * num_classes
    return outputs * (HEAD_CHANNELS * 3 * 3 + 1)


def trainable_groups(trainable_layers: int) -> list[str]:
    """The body groups that train with --trainable-backbone-layers K (the trainer's rule)."""
    groups = ["layer4", "layer3", "layer2", "layer1", "conv1"][:trainable_layers]
    return groups + ["bn1"] if trainable_layers == 5 else groups


def parameter_count(
    model: str,
    num_classes: int,
    trainable_layers: int = 5,
    frozen_bn: bool = False,
    trainable_only: bool = True,
) -> int:
    """Parameters of the trainer's model (num_classes includes the background class).

    trainable_only counts the ones that get gradients (what DDP all-reduces); frozen_bn is v1
    built for weights (FrozenBatchNorm2d has no parameters).
    """
    body, rest = MODEL_PARAMETERS[model]
    groups = trainable_groups(trainable_layers) if trainable_only else list(body)
    in_body = sum(conv + (0 if frozen_bn else bn) for g, (conv, bn) in body.items() if g in groups)
    return in_body + rest + class_logits_parameters(num_classes)


def ring_allreduce_bytes(gradient_bytes: float, world_size: int) -> float:
    """Bytes each process sends (and receives) in one ring all-reduce: 2(N-1)/N x bytes."""
    if world_size <= 1:
        return 0.0
    return 2 * (world_size - 1) / world_size * gradient_bytes


def transfer_seconds(nbytes: float, gbps: float) -> float:
    """Time to move nbytes at a line rate of gbps gigabits per second (10^9 bit/s)."""
    return nbytes * 8 / (gbps * 1e9)


def hook_wire_share(hook: str) -> float | None:
    """The share of the fp32 gradient bytes --ddp-comm-hook sends: 1 (none), 0.5 (bf16, fp16),
    None for PowerSGD (it depends on every layer's shape and the rank)."""
    return HOOK_WIRE_SHARE[hook.partition(":")[0]]


def profile_link(profile: Profile) -> str:
    """The link the profile's all-reduce uses: InfiniBand when NCCL may use it (GPUs, and
    NCCL_IB_DISABLE 0 as NCCL reads it: unset, 0, `true`), else TCP sockets (NCCL_IB_DISABLE
    non-zero: 1, 2, 0x1; or gloo on CPUs). The reading is nccl_env's."""
    gpus = profile.most_gpus_per_pod
    return "ib_200gbps" if gpus and not nccl_env.ib_disabled(profile.env) else "tcp_25gbps"


# ---------------------------------------------------------------------------------------------
# The plan


@dataclass
class Measured:
    """Step time measured from a job's trainer records, and the all-reduce's share of it."""

    job: str
    step_time: float  # seconds per optimiser step
    source: str  # which records, e.g. "median step_time of 12 train records"
    allreduce_share: dict[str, float] = field(default_factory=dict)  # link -> share of step_time
    # The step time the other choice would leave at the profile's link: bf16 when the profile
    # sends fp32, fp32 when it sends 16 bits (None for PowerSGD); and which choice that is.
    other_step_time: float | None = None
    other_hook: str = ""
    # Gradient bytes per step the trainer's hook reported handing to the all-reduce (latest record).
    allreduce_bytes: float | None = None


@dataclass
class Plan:
    profile: str
    pods: int
    processes_per_pod: int
    master_processes: int
    world_size: int
    batch_size: int
    grad_accum: int
    global_batch: int
    lr: float
    lr_rule: str
    dataset: str
    dataset_size: int
    dataset_source: str
    epochs: int
    steps_per_epoch: int
    total_steps: int
    model: str
    num_classes: int
    parameters: int
    parameters_total: int
    gradient_bytes: int
    allreduce_bytes_per_rank: float
    allreduce_seconds: dict[str, float]
    comm_hook: str = "none"
    link: str = "tcp_25gbps"  # the profile's link (a LINKS key)
    # Ring bytes per process per step and their time on each link with the profile's hook (None
    # and {} for PowerSGD, whose bytes depend on the layer shapes), and with a 16-bit hook.
    hook_bytes_per_rank: float | None = None
    hook_seconds: dict[str, float] = field(default_factory=dict)
    half_bytes_per_rank: float = 0.0
    half_seconds: dict[str, float] = field(default_factory=dict)
    # Per pod, as Kubernetes reads the profile: request/limit -> cores, and -> whole bytes.
    cpu_cores: dict[str, float] = field(default_factory=dict)
    memory_bytes: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    measured: Measured | None = None
    measure_note: str = ""
    # The path the job takes, as its run.json will record it: amp, channels_last and compile,
    # each {"chosen": ..., "why": ...} (precision_path below).
    path: dict[str, dict[str, str]] = field(default_factory=dict)
    wire: str = ""  # the label of the WIRE link: the busbw a job measured (apply_wire)
    priced: str = ""  # what the all-reduce is priced at, said in a row (apply_wire)

    def label(self, key: str) -> str:
        return self.wire if key == WIRE else LINK_LABELS[key]

    def to_dict(self) -> dict[str, object]:
        data = asdict(self)
        if self.measured is None:
            data["measured"] = None
        return data

    def lines(self) -> list[str]:
        """The plan as text rows (the CLI prints them, the TUI shows them)."""
        workers = self.pods - 1
        pods = f"{self.pods} (1 master + {workers} worker{_s(workers)})"
        procs = str(self.processes_per_pod)
        if self.master_processes != self.processes_per_pod:
            procs += f" (master {self.master_processes})"
        rows = [
            f"pods: {pods}",
            f"processes per pod: {procs}",
            *self._resource_rows(),
            f"world size: {self.world_size}",
            f"batch per process: {self.batch_size}"
            + (f" ({self.grad_accum} micro-batches)" if self.grad_accum > 1 else ""),
            f"global batch: {self.global_batch}",
            f"lr: {self.lr:.6g} = {self.lr_rule}",
            f"dataset: {self.dataset_size:,} images ({self.dataset_source})",
            f"steps per epoch: {self.steps_per_epoch:,}",
            f"total steps: {self.total_steps:,} ({self.epochs} epoch{_s(self.epochs)})",
            f"parameters: {self.parameters:,}"
            + (
                f" trainable of {self.parameters_total:,}"
                if self.parameters != self.parameters_total
                else ""
            )
            + f" ({self.model}, {self.num_classes} classes)",
            *(f"{PATH_LABELS[key]}: {p['chosen']} ({p['why']})" for key, p in self.path.items()),
            f"gradient bytes: {self.gradient_bytes:,} ({self.gradient_bytes / 1e6:.1f} MB fp32)",
            "all-reduce priced at: "
            + (
                self.priced
                or f"the assumed {LINK_LABELS[self.link]} (--wire-from JOB: a job's measured busbw)"
            ),
            *self._allreduce_lines(),
        ]
        if self.measured is not None:
            m = self.measured
            rows.append(f"measured step time: {_ms(m.step_time)} (job {m.job}, {m.source})")
            for key, share in m.allreduce_share.items():
                rows.append(f"  all-reduce share on {self.label(key)}: {share:.0%}")
            if m.other_step_time is not None:
                delta = m.other_step_time - m.step_time
                rows.append(
                    f"  with {m.other_hook} on {self.label(self.link)}: about "
                    f"{_ms(m.other_step_time)} a step ({_ms(abs(delta))} "
                    f"{'more' if delta > 0 else 'less'}, the all-reduce not overlapping compute)"
                )
            if m.allreduce_bytes is not None:
                rows.append(
                    f"  the trainer's hook sent {m.allreduce_bytes / 1e6:.1f} MB a step to the "
                    "all-reduce (its records' allreduce_bytes)"
                )
        elif self.measure_note:
            rows.append(f"measured step time: {self.measure_note}")
        rows.extend(f"warning: {warning}" for warning in self.warnings)
        rows.extend(f"note: {note}" for note in self.notes)
        return rows

    def _allreduce_lines(self) -> list[str]:
        """The all-reduce bytes and times, with the profile's hook and without (or with a 16-bit
        hook when the profile sends fp32)."""
        fp32 = self.allreduce_bytes_per_rank / 1e6
        half = self.half_bytes_per_rank / 1e6
        hook = self.comm_hook
        if hook == "none":
            rows = [
                f"all-reduce per process per step: {fp32:.1f} MB fp32 (--ddp-comm-hook none); "
                f"{half:.1f} MB with bf16 or fp16"
            ]
            times = {
                k: f"{_ms(t)} fp32; {_ms(self.half_seconds[k])} bf16/fp16"
                for k, t in self.allreduce_seconds.items()
            }
        elif self.hook_bytes_per_rank is not None:
            rows = [
                f"all-reduce per process per step: {self.hook_bytes_per_rank / 1e6:.1f} MB with "
                f"--ddp-comm-hook {hook} (fp32: {fp32:.1f} MB)"
            ]
            times = {
                k: f"{_ms(self.hook_seconds[k])} with {hook} (fp32: {_ms(t)})"
                for k, t in self.allreduce_seconds.items()
            }
        else:
            rows = [
                f"all-reduce per process per step: {fp32:.1f} MB fp32 until PowerSGD starts (after "
                f"--warmup-steps); then --ddp-comm-hook {hook} sends low-rank factors, whose size "
                "depends on every layer's shape (the trainer's records give allreduce_bytes)"
            ]
            times = {k: f"{_ms(t)} fp32" for k, t in self.allreduce_seconds.items()}
        for key, text in times.items():
            mark = " (the profile's link)" if key == self.link else ""
            rows.append(f"  on {self.label(key)}{mark}: {text}")
        return rows

    def _resource_rows(self) -> list[str]:
        rows = []
        if self.cpu_cores:
            cores = ", ".join(f"{k} {plain(v)}" for k, v in self.cpu_cores.items())
            rows.append(f"cpu per pod (cores): {cores}")
        if self.memory_bytes:
            sizes = ", ".join(
                f"{k} {bytes_text(v)}" + ("" if not KIB <= v < MIB else f" ({v:,} bytes)")
                for k, v in self.memory_bytes.items()
            )
            rows.append(f"memory per pod: {sizes}")
        return rows


def _s(n: int) -> str:
    return "" if n == 1 else "s"


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms" if seconds < 10 else f"{seconds:.1f} s"


PATH_LABELS = {"amp": "precision", "channels_last": "channels-last", "compile": "compile"}


def precision_path(
    args: TrainerArgs, gpus: int, images_per_process: int
) -> dict[str, dict[str, str]]:
    """The precision, channels-last and compile a job takes, with the trainer's rules
    (trainer/amp.py, trainer/fast_path.py): CUDA where the pods have GPUs, else the CPU. A cold
    compile cache is assumed; a warm one (.compile-cache beside the output dir) lowers the bar."""
    device = "cuda" if gpus else "cpu"
    amp: str | None = args.amp
    if args.amp != "auto":
        amp_why = f"--amp {args.amp}"
    elif device == "cuda":
        amp, amp_why = "bf16", "--amp auto: bf16 where the GPU supports it, else fp16 with a scaler"
    else:
        amp, amp_why = None, "--amp auto on a CPU: the faster of fp32 and bf16, measured at start"
    height, width = args.min_size, min(args.max_size, args.min_size * 4 // 3)
    layout = channels_last_choice(args.channels_last, device, amp)
    compiled = compile_choice(args.compile, device, images_per_process, height, width, False)
    shown_amp = "fp32" if amp == "none" else (amp or "fp32 or bf16")
    return {
        "amp": {"chosen": shown_amp, "why": amp_why},
        "channels_last": {"chosen": layout.value, "why": layout.why},
        "compile": {"chosen": compiled.value, "why": compiled.why},
    }


class NotTrainerError(UsageError):
    """The profile's command does not run the trainer, so there is nothing to plan."""


def make_plan(profile: Profile, dataset_size: int | None = None) -> Plan:
    """The plan for profile (already resolved, overrides applied). Raises UsageError."""
    args = _plan_args(profile)
    notes: list[str] = []
    pods, per_pod, master, world = _world(profile, notes)
    batch = global_batch(args.batch_size, world)
    base_lr = args.lr if args.lr is not None else OPTIMIZER_LR[args.optimizer]
    origin = "--lr" if args.lr is not None else f"{args.optimizer} default"
    size, source = _dataset_size(args, dataset_size, notes)
    per_epoch = steps_per_epoch(size, batch)
    steps = total_steps(args.epochs, per_epoch, args.max_steps)
    if args.max_steps and steps == args.max_steps:
        notes.append(f"--max-steps {args.max_steps} caps the run")
    num_classes, params, params_total = _parameters(args)
    grad_bytes = params * GRADIENT_BYTES_PER_PARAMETER
    ring = ring_allreduce_bytes(grad_bytes, world)
    share = hook_wire_share(args.ddp_comm_hook)
    hook_bytes = ring * share if share is not None else None
    return Plan(
        profile=profile.name,
        pods=pods,
        processes_per_pod=per_pod,
        master_processes=master,
        world_size=world,
        batch_size=args.batch_size,
        grad_accum=args.grad_accum,
        global_batch=batch,
        lr=scaled_lr(base_lr, batch, args.lr_base_batch),
        lr_rule=f"{base_lr:g} ({origin}) x {batch} / {args.lr_base_batch} (--lr-base-batch)",
        dataset=args.dataset,
        dataset_size=size,
        dataset_source=source,
        epochs=args.epochs,
        steps_per_epoch=per_epoch,
        total_steps=steps,
        model=args.model,
        num_classes=num_classes,
        parameters=params,
        parameters_total=params_total,
        gradient_bytes=grad_bytes,
        allreduce_bytes_per_rank=ring,
        allreduce_seconds=_over_links(ring),
        comm_hook=args.ddp_comm_hook,
        link=profile_link(profile),
        hook_bytes_per_rank=hook_bytes,
        hook_seconds=_over_links(hook_bytes) if hook_bytes is not None else {},
        half_bytes_per_rank=ring / 2,
        half_seconds=_over_links(ring / 2),
        cpu_cores=dict(profile.cpu),
        memory_bytes=_memory_bytes(profile),
        notes=notes,
        path=precision_path(args, profile.most_gpus_per_pod, steps * args.batch_size),
    )


def _plan_args(profile: Profile) -> TrainerArgs:
    """The trainer's arguments in PROFILE's command. Raises NotTrainerError when it runs no
    trainer, UsageError when the arguments break one of the trainer's rules."""
    args = read_trainer_args(profile)
    if args is None:
        shown = " ".join([*profile.command, *profile.args]) or "(the image's entrypoint)"
        raise NotTrainerError(
            f"profile '{profile.name}' does not run the trainer (command: {shown[:80]})",
            f"the plan reads the arguments of {ENTRY_SCRIPT} or `-m trainer`",
        )
    problem = trainer_args_problem(args)
    if problem:
        raise UsageError(f"args: {problem}", "fix the profile's args")
    return args


def _world(profile: Profile, notes: list[str]) -> tuple[int, int, int, int]:
    """Pods, processes per worker pod, processes in the master pod and the world size; what
    was assumed goes to NOTES."""
    workers = profile.workers or 0
    if profile.workers is None:
        notes.append("workers unset: the master pod only")
    per_pod = processes_per_pod(profile.gpus)
    if profile.master_gpus is None and profile.gpus:
        notes.append("master_gpus unset: the master is assumed to get the workers' GPUs")
    master = processes_per_pod(profile.master_pod_gpus)
    return workers + 1, per_pod, master, master + workers * per_pod


def _parameters(args: TrainerArgs) -> tuple[int, int, int]:
    """The classes (background included), the trainable and all parameters of the model."""
    num_classes = _num_classes(args) + 1
    pretrained = args.weights is not None or args.weights_backbone != "none"
    trainable = args.trainable_backbone_layers
    if trainable is None:
        trainable = 3 if pretrained else 5
    frozen_bn = pretrained and args.model == "retinanet_resnet50_fpn"
    params = parameter_count(args.model, num_classes, trainable, frozen_bn)
    return (
        num_classes,
        params,
        parameter_count(args.model, num_classes, trainable, frozen_bn, False),
    )


def _over_links(nbytes: float) -> dict[str, float]:
    """Seconds to move NBYTES over each link of LINKS."""
    return {key: transfer_seconds(nbytes, gbps) for key, gbps in LINKS.items()}


def _memory_bytes(profile: Profile) -> dict[str, int]:
    """The profile's memory request and limit in whole bytes, as Kubernetes reads them."""
    out = {}
    for key in ("request", "limit"):
        amount = memory_bytes(profile.memory.get(key))
        if amount is not None:
            out[key] = amount
    return out


def _dataset_size(args: TrainerArgs, given: int | None, notes: list[str]) -> tuple[int, str]:
    if given is not None:
        if given < 1:
            raise UsageError(f"--dataset-size {given}: expected a positive number of images")
        return given, "--dataset-size"
    if args.dataset == "synthetic":
        flag = "--synthetic-train-images"
        origin = flag if "synthetic_train_images" in args.given else f"{flag} default"
        return args.synthetic_train_images, f"synthetic, {origin}"
    size, text = DATASET_SIZES[args.dataset]
    if args.classes:
        notes.append("--classes keeps a subset: fewer images; give --dataset-size N")
    notes.append("documented size; the trainer skips images without boxes (--dataset-size N)")
    return size, f"documented size of {text}"


def _num_classes(args: TrainerArgs) -> int:
    if args.dataset == "synthetic":
        return args.synthetic_classes
    if args.classes:
        return len([c for c in args.classes.split(",") if c.strip()])
    return DATASET_CLASSES.get(args.dataset, DATASET_CLASSES["openimages"])


# ---------------------------------------------------------------------------------------------
# Measured step time from a job of the same profile


def measured_step_time(progress: TrainingProgress) -> tuple[float, str] | None:
    """(seconds per step, how it was obtained) from the records seen, or None."""
    times = list(progress.step_times)
    if len(times) > 1:
        times = times[1:]  # the first window includes start-up and warm-up
    if times:
        return statistics.median(times), f"median step_time of {len(times)} train records"
    return None


def apply_measure(
    plan: Plan, job: str, progress: TrainingProgress | None, failure: RunaiError | None = None
) -> Plan:
    """Fill plan.measured from the records of job's log (progress), or say why there is none."""
    if failure is not None:
        if failure.kind == ErrorKind.NOT_FOUND:
            plan.measure_note = f"none (no job named {job})"
        else:
            plan.measure_note = f"none (job {job}: {failure.message})"
        return plan
    found = measured_step_time(progress) if progress is not None else None
    if found is None:
        plan.measure_note = f"none (job {job} has no trainer records with step_time yet)"
        return plan
    seconds, source = found
    # The all-reduce with the profile's hook (fp32 for PowerSGD: an upper bound).
    with_hook = plan.hook_seconds or plan.allreduce_seconds
    other_time, other_hook = None, ""
    if plan.comm_hook == "none":
        saved = plan.allreduce_seconds[plan.link] - plan.half_seconds[plan.link]
        other_time, other_hook = max(seconds - saved, 0.0), "--ddp-comm-hook bf16"
    elif plan.hook_seconds:
        added = plan.allreduce_seconds[plan.link] - plan.hook_seconds[plan.link]
        other_time, other_hook = seconds + added, "--ddp-comm-hook none (fp32)"
    plan.measured = Measured(
        job=job,
        step_time=seconds,
        source=source,
        allreduce_share={key: t / seconds for key, t in with_hook.items()},
        other_step_time=other_time,
        other_hook=other_hook,
        allreduce_bytes=progress.allreduce_bytes if progress is not None else None,
    )
    share = plan.measured.allreduce_share[plan.link]
    if share > MOSTLY_COMMUNICATION and (plan.hook_seconds or plan.comm_hook == "none"):
        advice = (
            "--ddp-comm-hook bf16 halves the bytes, powersgd:RANK cuts them further"
            if plan.comm_hook == "none"
            else "--ddp-comm-hook powersgd:RANK, a faster link, or a larger --batch-size"
        )
        plan.warnings.append(
            f"the measured step time is mostly communication: the all-reduce alone would take "
            f"{share:.0%} of it on {plan.label(plan.link)}; {advice}"
        )
    return plan


def apply_wire(plan: Plan, job: str, busbw_gbs: float, where: str) -> Plan:
    """Price the all-reduce at the bus bandwidth `job` measured (its comm record, `where` saying
    at what size and world size) instead of the profile's assumed link: busbw is nccl-tests'
    figure independent of the ranks, so the ring bytes per rank over it is the time."""
    gbps = busbw_gbs * 8
    assumed = LINK_LABELS[plan.link]
    plan.allreduce_seconds[WIRE] = transfer_seconds(plan.allreduce_bytes_per_rank, gbps)
    if plan.hook_bytes_per_rank is not None:
        plan.hook_seconds[WIRE] = transfer_seconds(plan.hook_bytes_per_rank, gbps)
    plan.half_seconds[WIRE] = transfer_seconds(plan.half_bytes_per_rank, gbps)
    plan.link = WIRE
    plan.wire = f"the wire job {job} measured ({busbw_gbs:g} GB/s busbw)"
    plan.priced = (
        f"the busbw job {job} measured, {busbw_gbs:g} GB/s = {gbps:.1f} Gb/s ({where}), "
        f"not the assumed {assumed}"
    )
    return plan
