"""Sharding and order: distinct samples per rank, reshuffled per epoch, resumable mid-epoch."""

from __future__ import annotations

import numpy as np

from trainer.data.sampler import DistributedGroupedBatchSampler, ShardSampler, aspect_ratio_groups


def samplers(groups, batch, world, seed=3):
    return [DistributedGroupedBatchSampler(groups, batch, r, world, seed) for r in range(world)]


def epoch_batches(sampler, epoch, start=0):
    sampler.set_epoch(epoch, start)
    return [[i for i, _ in batch] for batch in sampler]


def test_ranks_see_distinct_samples_of_one_group_per_batch():
    heights = np.array([100] * 30 + [50] * 23 + [0] * 7)
    widths = np.array([200] * 30 + [100] * 23 + [0] * 7) * np.array([1] * 20 + [0.5] * 40)
    groups = aspect_ratio_groups(heights, widths.astype(int), 3)
    assert len(set(groups.tolist())) > 1
    world = 3
    per_rank = [epoch_batches(s, 0) for s in samplers(groups, 4, world)]
    assert len({len(b) for b in per_rank}) == 1 and len(per_rank[0]) == len(
        samplers(groups, 4, world)[0]
    )
    seen = [i for batches in per_rank for batch in batches for i in batch]
    assert len(seen) == len(set(seen))  # no sample on two ranks (or twice on one) in an epoch
    for batches in per_rank:
        for batch in batches:
            assert len(batch) == 4 and len({int(groups[i]) for i in batch}) == 1


def test_reshuffled_per_epoch_and_reproducible():
    groups = np.zeros(40, dtype=np.int64)
    a = samplers(groups, 2, 2)[0]
    b = samplers(groups, 2, 2)[0]
    assert epoch_batches(a, 0) == epoch_batches(b, 0)
    assert epoch_batches(a, 0) != epoch_batches(a, 1)
    assert epoch_batches(a, 1) == epoch_batches(b, 1)


def test_resume_skips_batches_without_yielding_them():
    groups = np.zeros(40, dtype=np.int64)
    sampler = samplers(groups, 2, 2)[1]
    full = epoch_batches(sampler, 2)
    resumed = epoch_batches(sampler, 2, start=4)
    assert resumed == full[4:]
    assert len(sampler) == len(full) - 4
    sampler.set_epoch(2, 4)
    keys = next(iter(sampler))
    assert all(epoch == 2 for _, epoch in keys)  # keys carry the epoch for augmentation seeding


def test_group_factor_off_makes_one_group():
    assert set(aspect_ratio_groups(np.array([10, 20]), np.array([40, 5]), -1).tolist()) == {0}


def test_eval_shards_cover_everything_once():
    shards = [list(ShardSampler(11, r, 3)) for r in range(3)]
    assert sorted(i for s in shards for i in s) == list(range(11))
