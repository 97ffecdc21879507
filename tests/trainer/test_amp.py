"""--amp auto: on a CPU without native bf16 it trains in fp32 with no trial step; on one with it
measures fp32 against bf16 on the real model and keeps the faster, leaving the model as it found
it; a resumed run keeps its checkpoint's precision. The CPU's flags come from /proc/cpuinfo, here
from files written like it (RUNAI_TUI_TEST_HOOK_CPUINFO), so both answers are tested on any host."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from trainer import __main__ as entry
from trainer import test_hooks
from trainer.amp import NATIVE_BF16_FLAGS, choose_amp, cpu_native_bf16, read_cpu_flags
from trainer.config import parse_config
from trainer.distributed import DistContext
from trainer.model import build_model

pytestmark = pytest.mark.slow  # trains or runs the real model

CPU = DistContext(0, 1, 0, torch.device("cpu"), None)
# The flags lines of /proc/cpuinfo, shortened: an AVX2-only AMD EPYC (Zen 2), an EPYC with
# AVX-512 BF16 (Zen 4), and an Arm Neoverse V1 (`Features`, with bf16).
AVX2_EPYC = "fpu vme de pse tsc msr sse sse2 ssse3 fma cx16 sse4_1 sse4_2 avx f16c avx2 sha_ni"
BF16_EPYC = AVX2_EPYC + " avx512f avx512bw avx512vl avx512_bf16 avx512_vnni"
ARM_V1 = "fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp sve bf16 i8mm"


def cpuinfo(tmp_path: Path, flags: str, key: str = "flags") -> Path:
    path = tmp_path / "cpuinfo"
    path.write_text(
        f"processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC\n{key}\t\t: {flags}\n"
        f"\nprocessor\t: 1\n{key}\t\t: {flags}\n"
    )
    return path


def small_model() -> torch.nn.Module:
    cfg = parse_config(
        ["--model", "retinanet_resnet18_fpn", "--min-size", "64", "--max-size", "64"]
    )
    return build_model(cfg, num_classes=3)


def test_the_cpu_flags_decide_whether_bf16_is_timed_at_all(tmp_path: Path) -> None:
    avx2 = read_cpu_flags(cpuinfo(tmp_path, AVX2_EPYC))
    assert avx2 is not None and "avx2" in avx2
    emulated = cpu_native_bf16(avx2)
    assert not emulated.measure
    assert emulated.why == (
        "the CPU has no native bf16 (none of avx512_bf16, amx_bf16, bf16 in its flags), so bf16 "
        "would be emulated, about 11x an fp32 step; no trial steps"
    )
    native = cpu_native_bf16(read_cpu_flags(cpuinfo(tmp_path, BF16_EPYC)))
    assert native.measure and native.why == "the CPU has native bf16: avx512_bf16"
    arm = cpu_native_bf16(read_cpu_flags(cpuinfo(tmp_path, ARM_V1, key="Features")))
    assert arm.measure and arm.why == "the CPU has native bf16: bf16"
    assert cpu_native_bf16(frozenset({"amx_bf16", "amx_tile"})).measure
    assert set(NATIVE_BF16_FLAGS) == {"avx512_bf16", "amx_bf16", "bf16"}
    # Unknown flags (no /proc, or no flags line in it): the measurement decides, as before.
    for unread in (tmp_path / "missing", cpuinfo(tmp_path, AVX2_EPYC, key="model")):
        assert read_cpu_flags(unread) is None
    assert cpu_native_bf16(None).measure


def test_auto_on_a_cpu_without_native_bf16_takes_fp32_with_no_trial_step(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(test_hooks.CPUINFO_ENV, str(cpuinfo(tmp_path, AVX2_EPYC)))
    model = small_model()
    passes: list[int] = []
    model.register_forward_hook(lambda *_: passes.append(1))
    choice = choose_amp("auto", CPU, model, 2, (64, 64), None, print)
    assert choice.amp == "none" and passes == []
    assert choice.why.startswith("--amp auto on CPU: fp32, the CPU has no native bf16 (")


def test_auto_on_cpu_measures_both_and_leaves_the_model_untouched(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(test_hooks.CPUINFO_ENV, str(cpuinfo(tmp_path, BF16_EPYC)))
    model = small_model()
    passes: list[int] = []
    model.register_forward_hook(lambda *_: passes.append(1))
    model.eval()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    rng = torch.get_rng_state()
    said: list[str] = []
    choice = choose_amp("auto", CPU, model, 2, (64, 64), None, said.append)
    assert choice.amp in ("none", "bf16")
    assert choice.why.startswith(
        "--amp auto on CPU: measured 2 steps each at batch 2, 64x64: fp32 "
    )
    assert ("bf16 is faster" if choice.amp == "bf16" else "fp32 is faster") in choice.why
    assert choice.why.endswith("(the CPU has native bf16: avx512_bf16)")
    assert len(passes) == 6  # an untimed and 2 timed passes in each precision
    after = model.state_dict()
    assert all(torch.equal(before[k], after[k]) for k in before)  # BN statistics included
    assert not model.training and all(p.grad is None for p in model.parameters())
    assert torch.equal(torch.get_rng_state(), rng)


def test_explicit_choices_and_a_resumed_run_keep_their_precision() -> None:
    model = small_model()
    assert choose_amp("none", CPU, model, 2, (64, 64), None, print).amp == "none"
    assert choose_amp("bf16", CPU, model, 2, (64, 64), "none", print).amp == "bf16"
    kept = choose_amp("auto", CPU, model, 2, (64, 64), "bf16", print)
    assert kept.amp == "bf16" and "kept from the checkpoint" in kept.why


def test_a_real_run_records_the_precision_auto_chose_and_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """retinanet-local's `--amp auto` on an AVX2-only CPU: one step, in fp32, no trial step;
    run.json and the log say what was chosen and why, and channels-last follows fp32."""
    for name in ("WORLD_SIZE", "RANK", "LOCAL_RANK"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv(test_hooks.CPUINFO_ENV, str(cpuinfo(tmp_path, AVX2_EPYC)))
    code = entry.main([
        "--dataset", "synthetic", "--synthetic-train-images", "2", "--synthetic-val-images", "2",
        "--model", "retinanet_resnet18_fpn", "--min-size", "64", "--max-size", "64",
        "--workers", "0", "--batch-size", "2", "--max-steps", "1", "--eval-every", "0",
        "--amp", "auto", "--device", "cpu", "--output-dir", str(tmp_path / "run"),
    ])  # fmt: skip
    out = capsys.readouterr().out
    assert code == 0, out
    run = json.loads((tmp_path / "run" / "run.json").read_text())
    assert (run["amp"]["asked"], run["amp"]["chosen"]) == ("auto", "none")
    assert run["amp"]["why"].startswith("--amp auto on CPU: fp32, the CPU has no native bf16 (")
    assert run["config"]["amp"] == "none"
    assert f"precision: fp32 ({run['amp']['why']})" in out
    assert "measured" not in out
    assert run["channels_last"]["chosen"] == "off" and "in fp32" in run["channels_last"]["why"]
