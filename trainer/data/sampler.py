"""Which samples each rank sees, in which order, in batches of one aspect-ratio group.

One global order per epoch (a permutation seeded by seed + epoch) is cut into batches; batch j goes
to rank j % world_size. So no sample reaches two ranks in one epoch, every rank gets the same
number of batches (DDP needs that), and the order is a pure function of (seed, epoch): a resumed
run rebuilds it and starts at batch ``start_batch`` without touching the samples before it.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator, Sequence

import numpy as np


def aspect_ratio_groups(heights: np.ndarray, widths: np.ndarray, group_factor: int) -> np.ndarray:
    """Group id per image from w/h, with torchvision's bins (2**linspace(-1, 1, 2k+1)).

    Unknown sizes (0) fall in the middle bin. ``group_factor < 0`` puts everything in one group.
    """
    if group_factor < 0:
        return np.zeros(len(heights), dtype=np.int64)
    bins = (
        sorted((2 ** np.linspace(-1, 1, 2 * group_factor + 1)).tolist()) if group_factor else [1.0]
    )
    ratios = np.where(heights > 0, widths / np.maximum(heights, 1), 1.0)
    return np.array([bisect.bisect_right(bins, float(r)) for r in ratios], dtype=np.int64)


class DistributedGroupedBatchSampler:
    """Yields lists of ``(index, epoch)`` keys; the epoch lets the dataset seed augmentation."""

    def __init__(
        self,
        group_ids: Sequence[int] | np.ndarray,
        batch_size: int,
        rank: int,
        world_size: int,
        seed: int,
        shuffle: bool = True,
    ) -> None:
        self.group_ids = np.asarray(group_ids, dtype=np.int64)
        self.batch_size = batch_size
        self.rank = rank
        self.world_size = world_size
        self.seed = seed
        self.shuffle = shuffle
        self.epoch = 0
        self.start_batch = 0
        # Full batches per group do not depend on the order, so the length is known up front.
        counts = np.bincount(self.group_ids) if len(self.group_ids) else np.zeros(0, np.int64)
        total_batches = int((counts // batch_size).sum())
        self.batches_per_rank = total_batches // world_size

    def set_epoch(self, epoch: int, start_batch: int = 0) -> None:
        """Select the epoch's order; skip the first ``start_batch`` batches of this rank."""
        self.epoch = epoch
        self.start_batch = start_batch

    def __len__(self) -> int:
        return max(0, self.batches_per_rank - self.start_batch)

    def global_batches(self) -> list[np.ndarray]:
        """All ranks' batches for the current epoch, in global order (index arrays)."""
        if self.shuffle:
            order = np.random.default_rng((self.seed, self.epoch)).permutation(len(self.group_ids))
        else:
            order = np.arange(len(self.group_ids))
        batches: list[np.ndarray] = []
        buffers: dict[int, list[int]] = {}
        for idx in order:
            buf = buffers.setdefault(int(self.group_ids[idx]), [])
            buf.append(int(idx))
            if len(buf) == self.batch_size:
                batches.append(np.array(buf))
                buf.clear()
        # Leftovers (fewer than batch_size per group) wait for another epoch's shuffle.
        return batches[: self.batches_per_rank * self.world_size]

    def __iter__(self) -> Iterator[list[tuple[int, int]]]:
        batches = self.global_batches()
        for b in range(self.start_batch, self.batches_per_rank):
            yield [(int(i), self.epoch) for i in batches[b * self.world_size + self.rank]]


class ShardSampler:
    """Evaluation: image i goes to rank i % world_size, in order, no padding, no duplicates."""

    def __init__(self, length: int, rank: int, world_size: int) -> None:
        self.indices = list(range(rank, length, world_size))

    def __len__(self) -> int:
        return len(self.indices)

    def __iter__(self) -> Iterator[int]:
        return iter(self.indices)
