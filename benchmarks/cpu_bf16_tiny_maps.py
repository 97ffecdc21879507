#!/usr/bin/env python3
"""Standalone repro (torch only): bf16 convolutions on the CPU at the P6/P7 levels' tiny maps.

    python benchmarks/cpu_bf16_tiny_maps.py [--steps 3] [--threads 1]

What it runs, at the shapes RetinaNet meets with --min-size 64 --max-size 64 and batch 2 (the
run that stops on a NaN on an AVX-512-BF16 Xeon):

- each convolution alone, forward and backward, in fp32 and under CPU bf16 autocast, from the
  same weights and input: P6 (3x3 stride 2, 2x2 -> 1x1, from P5 or from a 2048-channel C5), P7
  (3x3 stride 2, 1x1 -> 1x1), a head conv on P6/P7 (3x3 stride 1, 1x1 -> 1x1) and, to compare, a
  head conv on a 2x2 and an 8x8 map; it prints non-finite counts and the largest relative
  difference from fp32 of the output and of each gradient (input, weight, bias);
- the P6 -> ReLU -> P7 -> head-conv chain trained for a few SGD steps under bf16 autocast,
  saying at which step a weight or gradient first becomes non-finite, if one does.

It first says which convolution path runs bf16 here: oneDNN (`mkldnn_convolution`) only where
PyTorch finds native bf16 in the CPU (`torch.ops.mkldnn._is_mkldnn_bf16_supported()`: AVX-512
BF16 or AMX), otherwise ATen's own fallback (`_slow_conv2d_forward`), which never calls oneDNN.
Then it reruns itself with ONEDNN_VERBOSE=1 and lists, per case, the oneDNN convolution
implementations that ran (forward, backward data, backward weights); none on a CPU without bf16.
Exit status 1 when anything non-finite appeared, else 0.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from collections import defaultdict

import torch
from torch import Tensor, nn
from torch.profiler import ProfilerActivity, profile

BATCH = 2
# name, input channels, output channels, stride, input side
CASES: tuple[tuple[str, int, int, int, int], ...] = (
    ("p6 from P5 (v1), 2x2 -> 1x1", 256, 256, 2, 2),
    ("p6 from C5 (v2), 2x2 -> 1x1", 2048, 256, 2, 2),
    ("p7, 1x1 -> 1x1", 256, 256, 2, 1),
    ("head conv, 1x1 -> 1x1", 256, 256, 1, 1),
    ("head conv, 2x2 -> 2x2", 256, 256, 1, 2),
    ("head conv, 8x8 -> 8x8 (P3 at 64 px)", 256, 256, 1, 8),
)
MARK = "### case "
PROBLEMS: dict[str, str] = {}


def problem(in_ch: int, out_ch: int, stride: int, side: int) -> str:
    """oneDNN's problem descriptor of a case (as ONEDNN_VERBOSE and benchdnn write it)."""
    out = (side - 1) // stride + 1
    return f"mb{BATCH}_ic{in_ch}oc{out_ch}_ih{side}oh{out}kh3sh{stride}ph1_iw{side}ow{out}kw3sw{stride}pw1"


def relative_difference(value: Tensor, reference: Tensor) -> float:
    value, reference = value.float(), reference.float()
    return float((value - reference).abs().max() / reference.abs().max().clamp_min(1e-12))


def non_finite(tensor: Tensor) -> int:
    return int((~torch.isfinite(tensor)).sum())


def one_conv(in_ch: int, out_ch: int, stride: int, side: int, seed: int) -> dict[str, str]:
    torch.manual_seed(seed)
    conv = nn.Conv2d(in_ch, out_ch, 3, stride, 1)
    x = torch.randn(BATCH, in_ch, side, side)
    results: dict[str, dict[str, Tensor]] = {}
    for precision in ("fp32", "bf16"):
        conv.zero_grad(set_to_none=True)
        inp = x.clone().requires_grad_(True)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=precision == "bf16"):
            out = conv(inp)
        # A fixed gradient of the output (the same in both precisions).
        torch.manual_seed(seed + 1)
        (out.float() * torch.randn(out.shape)).sum().backward()
        assert inp.grad is not None and conv.weight.grad is not None and conv.bias is not None
        assert conv.bias.grad is not None
        results[precision] = {
            "output": out.detach(),
            "grad input": inp.grad,
            "grad weight": conv.weight.grad.clone(),
            "grad bias": conv.bias.grad.clone(),
        }
    report = {}
    for what, reference in results["fp32"].items():
        value = results["bf16"][what]
        report[what] = (
            f"{tuple(value.shape)} {value.dtype}: non-finite {non_finite(value)}, "
            f"max rel diff from fp32 {relative_difference(value, reference):.2e}"
        )
    return report


def chain_steps(steps: int, seed: int) -> list[str]:
    """P6 -> ReLU -> P7 -> head conv -> ReLU, trained with SGD under bf16 autocast."""
    torch.manual_seed(seed)
    p6, p7, head = (
        nn.Conv2d(256, 256, 3, 2, 1),
        nn.Conv2d(256, 256, 3, 2, 1),
        nn.Conv2d(256, 256, 3, 1, 1),
    )
    params = [*p6.parameters(), *p7.parameters(), *head.parameters()]
    names = [f"{m}.{p}" for m in ("p6", "p7", "head") for p in ("weight", "bias")]
    optimizer = torch.optim.SGD(params, lr=0.01, momentum=0.9)
    lines = []
    for step in range(1, steps + 1):
        p5 = torch.randn(BATCH, 256, 2, 2)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            out = torch.relu(head(p7(torch.relu(p6(p5)))))
        loss = out.float().square().mean()
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        bad_grads = [n for n, p in zip(names, params, strict=True) if non_finite(p.grad)]
        lines.append(
            f"step {step}: output {tuple(out.shape)} non-finite {non_finite(out)}, loss "
            f"{loss.item():.4g}, non-finite gradients: {', '.join(bad_grads) or 'none'}"
        )
        if bad_grads or non_finite(out):
            break
        optimizer.step()
    return lines


def conv_ops() -> list[str]:
    """The ATen convolution ops a bf16 forward and backward runs on this CPU."""
    conv = nn.Conv2d(256, 256, 3, 2, 1)
    x = torch.randn(BATCH, 256, 2, 2, requires_grad=True)
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        with torch.autocast("cpu", dtype=torch.bfloat16):
            out = conv(x)
        out.float().sum().backward()
    names = {e.key for e in prof.key_averages() if "conv" in e.key}
    return sorted(names)


def child(steps: int, seeds: int) -> int:
    bad = 0
    for name, in_ch, out_ch, stride, side in CASES:
        for seed in range(seeds):
            print(f"{MARK}{name}, seed {seed}", flush=True)
            for what, line in one_conv(in_ch, out_ch, stride, side, seed).items():
                print(f"  {what}: {line}", flush=True)
                bad += " non-finite 0," not in line
    print(f"{MARK}P6 -> P7 -> head chain, SGD under bf16 autocast", flush=True)
    for seed in range(seeds):
        for line in chain_steps(steps, seed):
            print(f"  seed {seed}, {line}", flush=True)
            bad += "non-finite gradients: none" not in line or " non-finite 0," not in line
    return 1 if bad else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    if args.child:
        return child(args.steps, args.seeds)
    print(f"torch {torch.__version__}, CPU capability {torch.backends.cpu.get_cpu_capability()}")
    print(f"oneDNN bf16 on this CPU: {torch.ops.mkldnn._is_mkldnn_bf16_supported()}")
    print(f"ATen convolution ops of a bf16 forward+backward: {', '.join(conv_ops())}")
    command = [sys.executable, __file__, "--child", "--steps", str(args.steps),
               "--seeds", str(args.seeds), "--threads", str(args.threads)]  # fmt: skip
    env = {**os.environ, "ONEDNN_VERBOSE": "1"}
    run = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    kernels: dict[str, set[str]] = defaultdict(set)
    PROBLEMS.update({c[0]: problem(*c[1:]) for c in CASES})
    case = ""
    for line in run.stdout.splitlines():
        if line.startswith(MARK):
            case = line.removeprefix(MARK)
            print(line.removeprefix("### "))
        elif line.startswith("onednn_verbose") and ",convolution," in line:
            fields = line.split(",")
            # onednn_verbose,v1,primitive,exec,cpu,convolution,IMPL,PROP_KIND,MEMORY,...,PROBLEM,
            # TIME; MEMORY starts "src:f32:" or "src:bf16:" (the fp32 reference runs oneDNN too)
            dtype = fields[8].split(":")[1]
            kernels[case].add(f"{dtype} {fields[7]} {fields[6]}")
        elif not line.startswith("onednn_verbose"):
            print(line)
    print(run.stderr, end="")
    print("oneDNN convolution kernels (ONEDNN_VERBOSE=1), per case:")
    for name, _, _, _, _ in CASES:
        found = sorted({k for c, ks in kernels.items() if c.startswith(name) for k in ks})
        print(f"  {name} ({PROBLEMS[name]}): {'; '.join(found) or 'none (oneDNN not called)'}")
    print("non-finite values: " + ("FOUND" if run.returncode else "none"))
    return run.returncode


if __name__ == "__main__":
    raise SystemExit(main())
