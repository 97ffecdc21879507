"""--channels-last auto and --compile auto (the defaults): the rule with its named figures, the
old boolean spellings, the compile cache beside the output dir (a real inductor compile fills
it), and the copies and optimizer paths that must be no-ops or the same on a CPU."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from trainer import compile_cache, fast_path
from trainer.config import parse_config
from trainer.data.transforms import to_model_input
from trainer.engine import HOST_PARTS, BatchCopier, Window, optimizer_options

ROOT = Path(__file__).resolve().parents[2]


def test_channels_last_is_on_with_cuda_and_follows_the_precision_on_a_cpu() -> None:
    assert fast_path.channels_last_choice("auto", "cuda", "bf16").on
    assert fast_path.channels_last_choice("auto", "cuda", "none").on
    assert fast_path.channels_last_choice("auto", "cpu", "bf16").on
    assert not fast_path.channels_last_choice("auto", "cpu", "none").on
    unknown = fast_path.channels_last_choice("auto", "cpu", None)  # --amp auto, before measuring
    assert not unknown.on and "measured at start" in unknown.why
    assert fast_path.channels_last_choice("off", "cuda", "bf16") == (False, "--channels-last off")
    assert fast_path.channels_last_choice("on", "cpu", "none") == (True, "--channels-last on")


def test_compile_pays_when_the_planned_images_repay_its_time() -> None:
    # The break-even at 800x1066 on the GPU: the cold compile over the seconds saved per image.
    per_image = 1 / fast_path.GPU_EAGER_IMAGES_PER_SEC - 1 / fast_path.GPU_COMPILED_IMAGES_PER_SEC
    even = fast_path.GPU_COLD_COMPILE_SECONDS / per_image
    assert 50_000 < even < 60_000  # 110 s / 1.99 ms
    short = fast_path.compile_choice("auto", "cuda", int(even * 0.9), 800, 1066, False)
    long = fast_path.compile_choice("auto", "cuda", int(even * 1.1), 800, 1066, False)
    assert not short.on and short.why.startswith("auto: too short to repay it: ")
    assert long.on and long.why.endswith("to compile with a cold cache")
    # A warm cache leaves WARM_COMPILE_SHARE of the compile: the short run now repays it.
    warm = fast_path.compile_choice("auto", "cuda", int(even * 0.9), 800, 1066, True)
    assert warm.on and "warm cache" in warm.why
    # Smaller images save less per image: the same count no longer repays it.
    assert not fast_path.compile_choice("auto", "cuda", int(even * 1.1), 400, 533, False).on
    # A test-sized CPU run never compiles by default; the flag still wins.
    assert not fast_path.compile_choice("auto", "cpu", 6, 64, 64, False).on
    assert fast_path.compile_choice("on", "cpu", 6, 64, 64, False) == (True, "--compile on")
    assert fast_path.compile_choice("off", "cuda", 10**9, 800, 1066, True).value == "off"


@pytest.mark.parametrize(
    ("words", "expected"),
    [
        ([], ("auto", "auto")),
        (["--channels-last", "--compile"], ("on", "on")),  # the boolean spellings of before
        (["--no-channels-last", "--no-compile"], ("off", "off")),
        (["--channels-last", "off", "--compile=auto"], ("off", "auto")),
    ],
)
def test_the_flags_keep_their_boolean_spellings(words: list[str], expected: tuple) -> None:
    cfg = parse_config([*words, "--output-dir", "x"])
    assert (cfg.channels_last, cfg.compile) == expected and cfg.output_dir == "x"


def test_the_compile_cache_lives_beside_the_output_dir(tmp_path, monkeypatch) -> None:
    cfg = parse_config(["--output-dir", str(tmp_path / "runs" / "job-a")])
    assert compile_cache.compile_cache_dir(cfg) == str(tmp_path / "runs" / ".compile-cache")
    cfg.compile_cache_dir = str(tmp_path / "elsewhere")
    assert compile_cache.compile_cache_dir(cfg) == str(tmp_path / "elsewhere")
    for name in (*compile_cache.COMPILE_CACHE_ENV, *compile_cache.COMPILE_CACHE_SWITCHES):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("TRITON_CACHE_DIR", "/mine")  # what the job sets itself wins
    lines: list[str] = []
    compile_cache.use_compile_cache(str(tmp_path / "c"), lines.append)
    assert os.environ["TORCHINDUCTOR_CACHE_DIR"] == str(tmp_path / "c" / "inductor")
    assert os.environ["TRITON_CACHE_DIR"] == "/mine"
    assert os.environ["TORCHINDUCTOR_FX_GRAPH_CACHE"] == "1"
    assert lines == [
        f"compile cache: {tmp_path / 'c' / 'inductor'} (TRITON_CACHE_DIR from the environment)"
    ]
    assert not compile_cache.cache_is_warm(str(tmp_path / "c"))
    # Importing torchvision writes inductor's default into the variable: that is not the job's.
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", compile_cache.torch_default_cache_dir())
    compile_cache.use_compile_cache(str(tmp_path / "d"), lines.append)
    assert os.environ["TORCHINDUCTOR_CACHE_DIR"] == str(tmp_path / "d" / "inductor")


# A real inductor compile of a small function, in a fresh process (the variables are read there
# before anything compiles), as the trainer points the caches: twice, the second from the cache.
COMPILE_ONCE = """
import sys, time
from trainer.compile_cache import use_compile_cache
use_compile_cache(sys.argv[1], print)
import torch
start = time.perf_counter()
f = torch.compile(lambda x: (x.sin() * 2 + 1).relu().sum())
f(torch.randn(64))
print(f"compiled in {time.perf_counter() - start:.1f} s")
"""


@pytest.mark.slow
@pytest.mark.timeout(900)  # two inductor compiles on a loaded 2-core machine: minutes
def test_a_compiled_run_fills_the_cache_and_the_next_finds_it_warm(tmp_path) -> None:
    cache = tmp_path / ".compile-cache"
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in (*compile_cache.COMPILE_CACHE_ENV, *compile_cache.COMPILE_CACHE_SWITCHES)
    }
    env["TORCHINDUCTOR_COMPILE_THREADS"] = "1"  # no pool of compile workers to start
    outs = []
    for _ in range(2):
        proc = subprocess.run(
            [sys.executable, "-c", COMPILE_ONCE, str(cache)],
            cwd=ROOT, env=env, capture_output=True, text=True, timeout=600,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr[-3000:]
        outs.append(proc.stdout)
        assert compile_cache.cache_is_warm(str(cache))  # the trainer would count the warm compile
    assert f"compile cache: {cache / 'inductor'}" in outs[0]
    assert any((cache / "inductor").rglob("*")), "inductor wrote nothing into the cache"


def test_the_batch_copier_on_a_cpu_is_the_plain_conversion() -> None:
    images = [torch.randint(0, 256, (3, 8, 10), dtype=torch.uint8) for _ in range(2)]
    targets = [{"boxes": torch.rand(1, 4), "labels": torch.tensor([1]), "skipped": []}] * 2
    inputs, device_targets = BatchCopier(torch.device("cpu")).copy(images, targets)
    for got, want in zip(inputs, to_model_input(images, torch.device("cpu")), strict=True):
        assert torch.equal(got, want)
    assert set(device_targets[0]) == {"boxes", "labels"}
    assert torch.equal(device_targets[1]["boxes"], targets[1]["boxes"])


def test_optimizers_take_the_fused_path_on_cuda_only() -> None:
    assert optimizer_options("cuda") == {"fused": True}
    params = [torch.nn.Parameter(torch.ones(3))]
    sgd = torch.optim.SGD(params, lr=0.1, momentum=0.9, **optimizer_options("cpu"))
    assert not sgd.param_groups[0]["fused"] and sgd.param_groups[0]["foreach"] is None


def test_the_host_timeline_laps_add_up_and_carry_the_record_over() -> None:
    window = Window()
    for part in HOST_PARTS[:4]:
        window.lap(part)
    assert list(window.host) == list(HOST_PARTS[:4])
    assert window.data_time == window.host["data"]
    following = window.next()
    assert set(following.host) == {"record"} and following.host["record"] >= 0.0
