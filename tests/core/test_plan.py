"""The distributed plan (runai_tui/knowledge/plan.py) against numbers computed by hand, seed 003's worked
examples among them, and the measured step time read back through a real client."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from runai_tui.knowledge.plan import (
    GRADIENT_BYTES_PER_PARAMETER,
    Plan,
    class_logits_parameters,
    make_plan,
    parameter_count,
    parse_trainer_args,
    ring_allreduce_bytes,
    trainer_args,
    transfer_seconds,
)
from runai_tui.profiles import Profile, ProfileStore, apply_overrides
from runai_tui.shapes.errors import UsageError
from runai_tui.workflows.gather import measure
from tests.fakes import rule

ENTRY = "/data/scripts/vision/shell/train-retinanet-ddp.sh"


def make(store_dir: Path, text: str, *sets: str) -> Profile:
    store = ProfileStore([store_dir, store_dir / "user"])
    profile = store.validate_text("p", "job_name: p\nimage: img:1\n" + text)
    return apply_overrides(profile, list(sets)) if sets else profile


# -- seed 003 --------------------------------------------------------------------------------


@pytest.mark.parametrize(("workers", "gpus"), [(3, 1), (1, 2)])
def test_seed_003_example_1_four_gpus(tmp_path: Path, workers: int, gpus: int) -> None:
    """1 -> 4 GPUs, per-GPU batch 256, 1.28M images: global 1024, 1250 steps/epoch, lr 0.1 at
    batch 256 -> 0.4 (both as 4 pods x 1 GPU and as 2 pods x 2 GPUs)."""
    profile = make(
        tmp_path,
        f"workers: {workers}\ngpus: {gpus}\nmaster_gpus: {gpus}\ncommand: [{ENTRY}]\n"
        "args: [--batch-size, '256', --lr, '0.1', --lr-base-batch, '256', --epochs, '90']\n",
    )
    plan = make_plan(profile, dataset_size=1_280_000)
    assert (plan.pods, plan.processes_per_pod, plan.world_size) == (workers + 1, gpus, 4)
    assert plan.global_batch == 1024
    assert plan.steps_per_epoch == 1250
    assert plan.total_steps == 90 * 1250
    assert math.isclose(plan.lr, 0.4)
    assert plan.dataset_source == "--dataset-size"


def test_seed_003_example_3_and_exercise_2_ring_allreduce() -> None:
    """4 GPUs, 25M fp32 parameters = 100 MB of gradients; ring cost 2(4-1)/4 x 100 = 150 MB per
    GPU; on 10 Gb/s (1.25 GB/s) 0.12 s; fp16 gradients halve it to 0.06 s."""
    gradient_bytes = 25_000_000 * GRADIENT_BYTES_PER_PARAMETER
    assert gradient_bytes == 100_000_000
    ring = ring_allreduce_bytes(gradient_bytes, 4)
    assert math.isclose(ring, 150_000_000)
    assert math.isclose(transfer_seconds(ring, 10), 0.12)
    assert math.isclose(transfer_seconds(ring_allreduce_bytes(50_000_000, 4), 10), 0.06)
    assert ring_allreduce_bytes(gradient_bytes, 1) == 0


# -- the shipped profiles ---------------------------------------------------------------------


def test_plan_of_the_seed_profile_by_hand() -> None:
    plan = make_plan(ProfileStore().load("retinanet-tcp"))
    # 1 master + 2 workers, 1 GPU each -> 3 processes; trainer defaults: batch 2, sgd lr 0.02 at 16
    assert (plan.pods, plan.processes_per_pod, plan.world_size) == (3, 1, 3)
    assert (plan.batch_size, plan.grad_accum, plan.global_batch) == (2, 1, 6)
    assert math.isclose(plan.lr, 0.02 * 6 / 16)
    # Open Images V7 train (boxable): 1,743,042 images; 26 epochs
    assert plan.dataset_size == 1_743_042 and plan.dataset_source.startswith("documented")
    assert plan.steps_per_epoch == 1_743_042 // 6 == 290_507
    assert plan.total_steps == 26 * 290_507
    # retinanet_resnet50_fpn_v2 with 600 classes + background; every layer trains from scratch.
    # cls_logits: 9 anchors x 601 classes x (256 x 3 x 3 + 1)
    assert class_logits_parameters(601) == 9 * 601 * 2305
    assert plan.num_classes == 601
    assert plan.parameters == 36_311_140 + 9 * 601 * 2305 == 48_778_885
    assert plan.gradient_bytes == 4 * 48_778_885
    assert math.isclose(plan.allreduce_bytes_per_rank, 2 * 2 / 3 * 4 * 48_778_885)
    assert math.isclose(
        plan.allreduce_seconds["tcp_25gbps"], 260_153_813.33 * 8 / 25e9, rel_tol=1e-6
    )
    assert math.isclose(
        plan.allreduce_seconds["ib_200gbps"], 260_153_813.33 * 8 / 200e9, rel_tol=1e-6
    )


def test_plan_shows_pod_resources_as_kubernetes_reads_them(tmp_path: Path) -> None:
    seed = make_plan(ProfileStore().load("retinanet-tcp"))
    # the seed's bare numbers are bytes to Kubernetes (lint warns about them)
    assert seed.memory_bytes == {"request": 3846, "limit": 8996} and seed.cpu_cores == {}
    assert "memory per pod: request 3.8 KiB (3,846 bytes), limit 8.8 KiB (8,996 bytes)" in (
        seed.lines()
    )
    assert not any(line.startswith("cpu per pod") for line in seed.lines())
    profile = make(
        tmp_path,
        f"workers: 1\ncommand: [{ENTRY}]\ncpu: {{request: 500m, limit: 2}}\n"
        "memory: {request: 512m, limit: 16Gi}\n",
    )
    plan = make_plan(profile)
    assert plan.cpu_cores == {"request": 0.5, "limit": 2}
    assert plan.memory_bytes == {"request": 1, "limit": 16 * 2**30}  # 512m rounds up to 1 byte
    assert plan.lines()[2:4] == [
        "cpu per pod (cores): request 0.5, limit 2",
        "memory per pod: request 1 B, limit 16.0 GiB",
    ]


def test_plan_of_the_local_profile_one_cpu_process_per_pod() -> None:
    plan = make_plan(ProfileStore().load("retinanet-local"))
    # gpus 0: one CPU process per pod; synthetic data: 256 images (its flag's default), 3 classes
    assert (plan.pods, plan.processes_per_pod, plan.world_size, plan.global_batch) == (2, 1, 2, 4)
    assert (plan.dataset_size, plan.steps_per_epoch) == (256, 64)
    assert plan.total_steps == 20  # --max-steps 20 caps 1 epoch x 64
    assert plan.num_classes == 4 and "synthetic" in plan.dataset_source


# -- trainer arguments ------------------------------------------------------------------------


def test_grad_accum_splits_the_batch_and_does_not_multiply_it(tmp_path: Path) -> None:
    profile = make(
        tmp_path,
        f"workers: 1\ngpus: 4\ncommand: [{ENTRY}]\n"
        "args: [--batch-size=8, --grad-accum, '4', --optimizer, adamw, --dataset, coco]\n",
    )
    plan = make_plan(profile)
    assert plan.world_size == 8 and plan.global_batch == 64 and plan.grad_accum == 4
    assert math.isclose(plan.lr, 1e-4 * 64 / 16)  # adamw default lr
    assert plan.dataset_size == 118_287 and plan.num_classes == 81
    assert plan.steps_per_epoch == 118_287 // 64


def test_overrides_and_pretrained_backbone_change_the_plan(tmp_path: Path) -> None:
    base = make(tmp_path, "workers: 1\ngpus: 1\ncommand: [python, -m, trainer]\n")
    wider = apply_overrides(base, ["workers=7"])
    assert make_plan(wider).world_size == 8 and make_plan(base).world_size == 2
    frozen = apply_overrides(
        base, ["args=[--weights-backbone, /w/resnet50.pth, --dataset, synthetic]"]
    )
    plan = make_plan(frozen)
    # from weights the trainer trains 3 body layers: conv1, bn1 and layer1 (225,344) are frozen
    full = parameter_count("retinanet_resnet50_fpn_v2", 4)
    assert plan.parameters == full - (9_408 + 128 + 212_992 + 2_816)
    assert plan.parameters_total == full


def test_trainer_args_are_found_after_the_script_or_dash_m() -> None:
    def words(command: list[str], args: list[str]) -> list[str] | None:
        return trainer_args(Profile(name="p", command=command, args=args))

    assert words([ENTRY], ["--epochs", "1"]) == ["--epochs", "1"]
    assert words(["torchrun", "--nproc-per-node", "2", "-m", "trainer", "--lr=1"], []) == ["--lr=1"]
    assert words(["python", "train.py"], ["--epochs", "1"]) is None
    parsed = parse_trainer_args(["--epochs", "3", "--epochs=4", "--sync-bn", "--unknown", "x"])
    assert parsed.epochs == 4 and parsed.sync_bn and parsed.given == {"epochs", "sync_bn"}
    assert parse_trainer_args([]).workers == 4


@pytest.mark.parametrize(
    ("args", "words"),
    [
        ("[--batch-size, two]", "--batch-size 'two'"),
        ("[--batch-size, '3', --grad-accum, '2']", "multiple of --grad-accum"),
        ("[--lr]", "expected a value"),
        ("[--model, resnet9000]", "--model 'resnet9000'"),
        ("[--lr-base-batch, '0']", "--lr-base-batch 0: must be at least 1"),
        ("[--dataset, imagenet]", "--dataset 'imagenet'"),
    ],
)
def test_bad_trainer_args_are_usage_errors(tmp_path: Path, args: str, words: str) -> None:
    profile = make(tmp_path, f"workers: 1\ncommand: [{ENTRY}]\nargs: {args}\n")
    with pytest.raises(UsageError, match=words.replace("[", r"\[")):
        make_plan(profile)


def test_a_profile_that_does_not_run_the_trainer_has_no_plan(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="does not run the trainer"):
        make_plan(make(tmp_path, "workers: 1\ncommand: [sh, job.sh]\n"))


# -- measured step time -----------------------------------------------------------------------

RECORDS = "\n".join(
    [
        "trainer: world size 3",
        '{"kind": "train", "step": 20, "loss": 1.0, "step_time": 9.0}',  # start-up window
        '{"kind": "train", "step": 40, "loss": 0.9, "step_time": 0.50}',
        '{"kind": "train", "step": 60, "loss": 0.8, "step_time": 0.40}',
        '{"kind": "train", "step": 80, "loss": 0.7, "step_time": 0.45}',
    ]
)


def plan_for_measure() -> Plan:
    return make_plan(ProfileStore().load("retinanet-tcp"))


async def test_measured_step_time_and_allreduce_share(make_fake, client_for) -> None:
    fake = make_fake([rule("pytorch", "logs", "retinanet-tcp", stdout=RECORDS + "\n")])
    plan = await measure(plan_for_measure(), client_for(fake), "retinanet-tcp")
    assert fake.calls()[-1][:4] == ["training", "pytorch", "logs", "retinanet-tcp"]
    assert plan.measured is not None
    assert plan.measured.step_time == 0.45  # median of the windows after the first
    share = plan.measured.allreduce_share["tcp_25gbps"]
    assert math.isclose(share, plan.allreduce_seconds["tcp_25gbps"] / 0.45)
    assert any(line.startswith("measured step time: 450.0 ms") for line in plan.lines())
    assert plan.to_dict()["measured"]["step_time"] == 0.45


async def test_no_job_or_no_records_is_a_note_not_an_error(make_fake, client_for) -> None:
    missing = make_fake(
        [
            rule(
                "logs",
                stderr="workload 'retinanet-tcp' could not be found in project 'p'\n",
                exit=1,
            )
        ]
    )
    plan = await measure(plan_for_measure(), client_for(missing), "retinanet-tcp")
    assert plan.measured is None and plan.measure_note == "none (no job named retinanet-tcp)"
    quiet = make_fake([rule("logs", stdout="starting\nno records yet\n")])
    plan = await measure(plan_for_measure(), client_for(quiet), "retinanet-tcp")
    assert plan.measured is None and "no trainer records with step_time" in plan.measure_note


# -- the gradient hook ------------------------------------------------------------------------


def test_the_hook_halves_the_bytes_and_the_time_at_the_profiles_link() -> None:
    tcp = ProfileStore().load("retinanet-tcp")
    fp32 = make_plan(tcp)
    assert fp32.comm_hook == "none" and fp32.link == "tcp_25gbps"
    ring = 2 * 2 / 3 * 4 * 48_778_885  # 3 ranks, fp32
    assert math.isclose(fp32.half_bytes_per_rank, ring / 2)
    assert math.isclose(fp32.half_seconds["tcp_25gbps"], ring / 2 * 8 / 25e9)
    lines = fp32.lines()
    assert (
        "all-reduce per process per step: 260.2 MB fp32 (--ddp-comm-hook none); "
        "130.1 MB with bf16 or fp16"
    ) in lines
    assert "  on 25 Gb/s TCP (the profile's link): 83.2 ms fp32; 41.6 ms bf16/fp16" in lines

    bf16 = make_plan(apply_overrides(tcp, ["args=[--ddp-comm-hook,bf16]"]))
    assert bf16.hook_bytes_per_rank is not None
    assert math.isclose(bf16.hook_bytes_per_rank, ring / 2)
    assert (
        "  on 25 Gb/s TCP (the profile's link): 41.6 ms with bf16 (fp32: 83.2 ms)" in bf16.lines()
    )
    # PowerSGD's bytes depend on the layer shapes: no figure is made up.
    power = make_plan(apply_overrides(tcp, ["args=[--ddp-comm-hook,powersgd:2]"]))
    assert power.hook_bytes_per_rank is None and power.hook_seconds == {}
    assert any("low-rank factors" in line for line in power.lines())
    # InfiniBand is the link of a GPU profile that leaves NCCL_IB_DISABLE unset.
    assert make_plan(ProfileStore().load("retinanet-rdma")).link == "ib_200gbps"


async def test_measured_step_time_mostly_communication_warns_and_says_what_the_hook_leaves(
    make_fake, client_for
) -> None:
    records = "\n".join(
        [
            '{"kind": "train", "step": 20, "loss": 1.0, "step_time": 9.0}',
            '{"kind": "train", "step": 40, "loss": 0.9, "step_time": 0.10, '
            '"allreduce_bytes": 195115540}',
            '{"kind": "train", "step": 60, "loss": 0.8, "step_time": 0.10, '
            '"allreduce_bytes": 195115540}',
        ]
    )
    fake = make_fake([rule("pytorch", "logs", "retinanet-tcp", stdout=records + "\n")])
    plan = await measure(plan_for_measure(), client_for(fake), "retinanet-tcp")
    assert plan.measured is not None and plan.measured.step_time == 0.10
    # 83.2 ms of 100 ms is the all-reduce on 25 Gb/s: bf16 would leave 100 - 41.6 ms.
    assert plan.measured.other_step_time is not None
    assert math.isclose(plan.measured.other_step_time, 0.10 - plan.half_seconds["tcp_25gbps"])
    lines = plan.lines()
    assert (
        "  with --ddp-comm-hook bf16 on 25 Gb/s TCP: about 58.4 ms a step (41.6 ms less, "
        "the all-reduce not overlapping compute)" in lines
    )
    assert (
        "  the trainer's hook sent 195.1 MB a step to the all-reduce (its records' "
        "allreduce_bytes)" in lines
    )
    assert [w for w in plan.warnings if "mostly communication" in w and "83%" in w]
    assert any(
        line.startswith("warning: the measured step time is mostly communication") for line in lines
    )

    # The same job measured for a profile already on bf16: what fp32 would cost, and no
    # warning (41.6 ms of 100 ms).
    tcp = apply_overrides(ProfileStore().load("retinanet-tcp"), ["args=[--ddp-comm-hook,bf16]"])
    fake = make_fake([rule("pytorch", "logs", "retinanet-tcp", stdout=records + "\n")])
    plan = await measure(make_plan(tcp), client_for(fake), "retinanet-tcp")
    assert plan.measured is not None and plan.measured.other_step_time is not None
    assert math.isclose(plan.measured.other_step_time, 0.10 + plan.half_seconds["tcp_25gbps"])
    assert plan.warnings == []


# -- the path a job takes --------------------------------------------------------------------


def test_the_shipped_gpu_profiles_take_the_fast_path_with_no_flags() -> None:
    for name in ("retinanet-tcp", "retinanet-rdma"):
        profile = ProfileStore().load(name)
        args = parse_trainer_args(trainer_args(profile) or [])
        assert not {"amp", "channels_last", "compile"} & args.given  # the defaults decide
        plan = make_plan(profile)
        assert {k: p["chosen"] for k, p in plan.path.items()} == {
            "amp": "bf16",
            "channels_last": "on",
            "compile": "on",
        }
        lines = plan.lines()
        assert "channels-last: on (auto: cuDNN's convolutions are faster in channels-last)" in lines
        compile_line = next(line for line in lines if line.startswith("compile: on (auto: "))
        assert compile_line.endswith("to compile with a cold cache)")
        assert plan.to_dict()["path"]["amp"]["why"].startswith("--amp auto: bf16")


def test_a_short_cpu_job_stays_eager_and_says_why(tmp_path: Path) -> None:
    profile = make(
        tmp_path,
        f"command: [{ENTRY}]\nargs: [--dataset, synthetic, --max-steps, '20', --min-size, '128']\n",
    )
    path = make_plan(profile).path
    assert path["amp"]["chosen"] == "fp32 or bf16"  # measured at the job's start
    assert path["channels_last"] == {
        "chosen": "off",
        "why": "auto on a CPU: on with bf16, off with fp32 (measured at start)",
    }
    assert path["compile"]["chosen"] == "off"
    assert path["compile"]["why"].startswith("auto: too short to repay it: 40 images at 128x170")
    forced = make(tmp_path, f"command: [{ENTRY}]\nargs: [--compile, --no-channels-last]\n")
    assert make_plan(forced).path["compile"] == {"chosen": "on", "why": "--compile on"}
    assert make_plan(forced).path["channels_last"]["why"] == "--channels-last off"
