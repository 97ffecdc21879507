"""How DDP moves gradients: the communication hook (--ddp-comm-hook) and the bytes it sends.

Every choice is one of PyTorch's public hooks (torch.distributed.algorithms.ddp_comm_hooks):

- ``none``: ``allreduce_hook``, what DDP does without a hook (fp32 buckets, averaged);
- ``bf16`` / ``fp16``: ``bf16_compress_wrapper`` / ``fp16_compress_wrapper`` around that
  all-reduce, which PyTorch documents as equal to ``bf16_compress_hook`` / ``fp16_compress_hook``:
  the bucket travels in 16 bits, half the bytes, and is cast back;
- ``powersgd[:RANK]``: ``powerSGD_hook`` (low-rank approximation with error feedback and warm
  start, rank 1 by default), starting after the learning-rate warmup as PyTorch advises.

The hook is wrapped so that it counts what it hands to the all-reduce: for the first three the
bytes of the tensor that goes on the wire (16-bit after compression), for PowerSGD the elements
PowerSGD itself reports sending (``PowerSGDState.total_numel_after_compression``) or the whole
bucket while it still runs plain all-reduce.

PowerSGD keeps state per rank (the error feedback and the warm-start matrices) keyed by DDP
bucket. DDP lays its buckets out again after the first iteration, so a resumed run sees another
layout than the one saved; the state is therefore saved and restored per parameter and put back
into whatever buckets the run has.
"""

# No `from __future__ import annotations`: DDP checks a hook's annotations at registration
# (the bucket must be annotated dist.GradBucket, the result torch.futures.Future[torch.Tensor]).
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypedDict

import numpy as np
import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks, powerSGD_hook
from torch.nn.parallel import DistributedDataParallel

from trainer.checkpoint import numpy_state_from_plain, numpy_state_to_plain

HOOKS = ("none", "bf16", "fp16", "powersgd")
POWERSGD_DEFAULT_RANK = 1
POWERSGD_MIN_START = 2  # PowerSGD refuses to start before step 2 with error feedback


@dataclass(frozen=True)
class HookChoice:
    name: str  # one of HOOKS
    rank: int = 0  # PowerSGD's matrix approximation rank (0 for the others)

    @property
    def label(self) -> str:
        return f"powersgd:{self.rank}" if self.name == "powersgd" else self.name


def parse_hook(spec: str) -> HookChoice:
    """'none', 'bf16', 'fp16', 'powersgd' or 'powersgd:R', as config.validate accepted it (the
    one check of --ddp-comm-hook, before any process group starts)."""
    name, _, rank = spec.partition(":")
    return HookChoice(name, int(rank or POWERSGD_DEFAULT_RANK) if name == "powersgd" else 0)


def wire_dtype_works(dtype: torch.dtype, device: torch.device) -> str:
    """'' when the process group all-reduces `dtype` on `device`, else why not (one probe)."""
    probe = torch.ones(2, dtype=dtype, device=device)
    try:
        dist.all_reduce(probe)
    except (RuntimeError, ValueError) as exc:
        return f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
    if float(probe[0]) != dist.get_world_size():
        return f"a probe all-reduce of {dtype} gave {float(probe[0])}"
    return ""


def bucket_cap_mb(
    choice: HookChoice, backend: str, model: nn.Module, asked: int, log: Callable[[str], None]
) -> int | None:
    """DDP's bucket_cap_mb: None for PyTorch's default (--ddp-bucket-mb 0), else the size asked.
    PowerSGD on gloo gets one bucket: it issues its later all-reduces from gloo's completion
    threads, so with several buckets in flight the ranks' collectives interleave differently
    and gloo fails on a size mismatch."""
    if choice.name == "powersgd" and backend == "gloo":
        size = sum(p.numel() * p.element_size() for p in model.parameters())
        one = size // 2**20 + 1
        log(
            f"--ddp-comm-hook {choice.label} on gloo: one {one} MiB gradient bucket "
            f"(instead of {f'{asked} MiB' if asked else 'the default'}): PowerSGD's chained "
            "all-reduces would interleave across buckets"
        )
        return one
    return asked or None


class PowerSGDCheckpoint(TypedDict):
    """One rank's PowerSGD state in a checkpoint: its step, generator and error feedback."""

    hook: str  # the --ddp-comm-hook label it was saved under
    iter: int
    rng: list[object]  # numpy_state_to_plain
    numel_before: int
    numel_after: int
    parameters: dict[str, dict[str, torch.Tensor]]  # parameter name -> its state slices


class GradientComm:
    """The hook DDP runs for every gradient bucket, and the bytes it sent."""

    def __init__(self, choice: HookChoice, start_iter: int = POWERSGD_MIN_START) -> None:
        self.choice = choice
        self.sent_bytes = 0
        self.powersgd: powerSGD_hook.PowerSGDState | None = None
        self._start_iter = max(POWERSGD_MIN_START, start_iter)
        self._names: dict[int, str] = {}
        self._shapes: dict[str, torch.Size] = {}
        self._layout: dict[int, list[str]] = {}  # bucket index -> parameter names (PowerSGD)
        self._pieces: dict[str, dict[str, torch.Tensor]] = {}  # name -> state slices to put back

    def install(self, model: DistributedDataParallel, log: Callable[[str], None]) -> str:
        """Register the hook on `model`; returns the label of what runs (the fallback 'none'
        when the process group cannot all-reduce the hook's 16-bit type)."""
        inner: nn.Module = model.module
        self._names = {id(p): name for name, p in inner.named_parameters()}
        self._shapes = {name: p.shape for name, p in inner.named_parameters()}
        device = next(inner.parameters()).device
        name = self.choice.name
        hook: Callable[[Any, dist.GradBucket], torch.futures.Future[torch.Tensor]]
        if name in ("bf16", "fp16"):
            dtype = torch.bfloat16 if name == "bf16" else torch.float16
            problem = wire_dtype_works(dtype, device)
            if problem:
                log(
                    f"--ddp-comm-hook {name}: the {dist.get_backend()} process group cannot "
                    f"all-reduce {dtype} here ({problem}); falling back to none (fp32)"
                )
                self.choice = HookChoice("none")
                name = "none"
        if name == "powersgd" and device.type != "cuda" and torch.cuda.is_available():
            log(
                f"--ddp-comm-hook {self.choice.label}: PyTorch's PowerSGD hook synchronises the "
                f"GPU whenever one is visible and fails on {device.type} gradients; falling back "
                "to none (fp32). Train on the GPU, or hide it (CUDA_VISIBLE_DEVICES=)"
            )
            self.choice = HookChoice("none")
            name = "none"
        if name == "bf16":
            hook = default_hooks.bf16_compress_wrapper(self._counted_allreduce)
        elif name == "fp16":
            hook = default_hooks.fp16_compress_wrapper(self._counted_allreduce)
        elif name == "powersgd":
            self.powersgd = powerSGD_hook.PowerSGDState(
                process_group=None,
                matrix_approximation_rank=self.choice.rank,
                start_powerSGD_iter=self._start_iter,
            )
            hook = self._counted_powersgd
        else:
            hook = self._counted_allreduce
        model.register_comm_hook(None, hook)
        return self.choice.label

    def describe(self) -> str:
        if self.choice.name == "powersgd":
            return (
                f"PowerSGD rank {self.choice.rank}, plain fp32 all-reduce until step "
                f"{self._start_iter} (the warmup), then low-rank with error feedback"
            )
        if self.choice.name in ("bf16", "fp16"):
            return f"gradients travel in {self.choice.name}: half the bytes of fp32"
        return "gradients travel in fp32"

    def take_bytes(self) -> int:
        """Bytes handed to the all-reduce since the previous take."""
        sent, self.sent_bytes = self.sent_bytes, 0
        return sent

    # -- the hooks ---------------------------------------------------------------------------

    def _counted_allreduce(
        self, state: Any, bucket: dist.GradBucket
    ) -> torch.futures.Future[torch.Tensor]:
        buffer = bucket.buffer()  # already 16-bit under the compress wrappers
        self.sent_bytes += buffer.numel() * buffer.element_size()
        return default_hooks.allreduce_hook(state, bucket)

    def _counted_powersgd(
        self, _state: object, bucket: dist.GradBucket
    ) -> torch.futures.Future[torch.Tensor]:
        state = self.powersgd
        assert state is not None
        self._fit_layout(bucket)
        buffer = bucket.buffer()
        compressing = state.iter >= state.start_powerSGD_iter
        before = state.total_numel_after_compression
        future = powerSGD_hook.powerSGD_hook(state, bucket)
        numel = state.total_numel_after_compression - before if compressing else buffer.numel()
        self.sent_bytes += numel * buffer.element_size()
        return future

    # -- PowerSGD state by parameter ---------------------------------------------------------

    def _fit_layout(self, bucket: dist.GradBucket) -> None:
        """Keep PowerSGD's per-bucket state valid when DDP lays out its buckets anew (after the
        first iteration, and in a resumed run): slice it by parameter and put it back."""
        index = bucket.index()
        names = [self._names[id(p)] for p in bucket.parameters()]
        if self._layout.get(index) == names:
            return
        if index in self._layout:  # a new layout: every bucket's state back into slices
            self._pieces.update(self._slices())
            assert self.powersgd is not None
            for table in (
                self.powersgd.error_dict,
                self.powersgd.p_memory_dict,
                self.powersgd.q_memory_dict,
            ):
                table.clear()
            self._layout.clear()
        self._layout[index] = names
        self._assemble(index, names, bucket.buffer())

    def _matrices(self, names: list[str]) -> list[tuple[str, int, int, int]]:
        """(name, n, m, r) of the parameters PowerSGD compresses in a bucket of `names`, in the
        order it packs their P and Q matrices (grouped by matrix shape, first seen first)."""
        state = self.powersgd
        assert state is not None
        groups: dict[tuple[int, int], list[tuple[str, int, int, int]]] = {}
        for name in names:
            shape = self._shapes[name]
            n = shape[0] if len(shape) else 1
            m = max(1, int(np.prod(shape)) // max(n, 1))
            r = min(n, m, state.matrix_approximation_rank)
            if (n + m) * r * state.min_compression_rate < n * m:
                groups.setdefault((n, m), []).append((name, n, m, r))
        return [entry for group in groups.values() for entry in group]

    def _slices(self) -> dict[str, dict[str, torch.Tensor]]:
        """PowerSGD's state as {parameter name: {"error": ..., "q": ...}} (CPU copies)."""
        state = self.powersgd
        pieces: dict[str, dict[str, torch.Tensor]] = {}
        if state is None:
            return pieces
        for index, names in self._layout.items():
            error = state.error_dict.get(index)
            if error is not None:
                offset = 0
                for name in names:
                    numel = int(np.prod(self._shapes[name]))
                    piece = error[offset : offset + numel].detach().cpu().clone()
                    pieces.setdefault(name, {})["error"] = piece
                    offset += numel
            q = state.q_memory_dict.get(index)
            matrices = self._matrices(names)
            if q is not None and sum(m * r for _, _, m, r in matrices) == q.numel():
                offset = 0
                for name, _, m, r in matrices:
                    pieces.setdefault(name, {})["q"] = q[offset : offset + m * r].cpu().clone()
                    offset += m * r
        return pieces

    def _assemble(self, index: int, names: list[str], buffer: torch.Tensor) -> None:
        """Put the slices of this bucket's parameters back into PowerSGD's tables."""
        state = self.powersgd
        assert state is not None
        if not self._pieces:
            return
        device, dtype = buffer.device, buffer.dtype
        if all("error" in self._pieces.get(name, {}) for name in names):
            state.error_dict[index] = torch.cat([self._pieces[n]["error"] for n in names]).to(
                device, dtype
            )
        matrices = self._matrices(names)
        if matrices and all("q" in self._pieces.get(name, {}) for name, *_ in matrices):
            state.q_memory_dict[index] = torch.cat(
                [self._pieces[name]["q"] for name, *_ in matrices]
            ).to(device, dtype)
            state.p_memory_dict[index] = torch.empty(
                sum(n * r for _, n, _, r in matrices), device=device, dtype=dtype
            )
        for name in names:
            self._pieces.pop(name, None)

    def state_dict(self) -> PowerSGDCheckpoint | None:
        """This rank's hook state as plain data for a checkpoint (None: the hook has none)."""
        state = self.powersgd
        if state is None:
            return None
        return {
            "hook": self.choice.label,
            "iter": state.iter,
            "rng": numpy_state_to_plain(state.rng.get_state(legacy=True)),
            "numel_before": state.total_numel_before_compression,
            "numel_after": state.total_numel_after_compression,
            "parameters": {**self._pieces, **self._slices()},
        }

    def load_state_dict(self, saved: PowerSGDCheckpoint) -> None:
        state = self.powersgd
        assert state is not None
        state.iter = int(saved["iter"])
        state.rng.set_state(numpy_state_from_plain(saved["rng"]))
        state.total_numel_before_compression = int(saved["numel_before"])
        state.total_numel_after_compression = int(saved["numel_after"])
        for table in (state.error_dict, state.p_memory_dict, state.q_memory_dict):
            table.clear()
        self._layout.clear()
        self._pieces = {name: dict(piece) for name, piece in saved["parameters"].items()}
