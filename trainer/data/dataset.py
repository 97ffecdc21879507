"""The map-style dataset every format shares: a flat index plus a folder of images."""

from __future__ import annotations

import os
from typing import TypedDict

import torch
from torch.utils.data import Dataset

from trainer.data.index import DetectionIndex
from trainer.data.transforms import decode_image, flip_decision, hflip, resized_size
from trainer.errors import TrainerError
from trainer.oid_metric import OidAnnotations

MAX_FALLBACKS = 8  # consecutive unreadable images tolerated before the run stops


class _TargetKeys(TypedDict):
    boxes: torch.Tensor  # float32 [N, 4], x1 y1 x2 y2 in pixels of the decoded image
    labels: torch.Tensor  # int64 [N]
    index: int  # the sample's id (the image's position in the index, or the shard sample id)
    orig_size: tuple[int, int]  # (height, width) of the stored image
    skipped: list[str]  # unreadable images replaced by this one


class Target(_TargetKeys, total=False):
    """One image's annotations as the loaders yield them; the model reads boxes and labels."""

    key: str  # the sample's key in its shard (shard streams only)


class DatasetOptions(TypedDict):
    """The keyword options of DetectionDataset that a run's train and validation sets share."""

    min_size: int
    max_size: int
    seed: int
    fast_decode: bool
    strict: bool


class DetectionDataset(Dataset):
    """Items are ``(image uint8 CHW, target)``; keys are an index or ``(index, epoch)``.

    The epoch in the key makes augmentation a pure function of (seed, epoch, index), which is what
    lets a resumed run see exactly the samples it would have seen.
    """

    # Set on an Open Images validation set for --eval-metric oid (hierarchy, image-level labels).
    oid_annotations: OidAnnotations | None = None

    def __init__(
        self,
        index: DetectionIndex,
        images_dir: str,
        *,
        train: bool,
        min_size: int,
        max_size: int,
        hflip_probability: float = 0.5,
        seed: int = 0,
        fast_decode: bool = True,
        strict: bool = False,
    ) -> None:
        self.index = index
        self.images_dir = images_dir
        self.train = train
        self.min_size = min_size
        self.max_size = max_size
        self.hflip_probability = hflip_probability if train else 0.0
        self.seed = seed
        self.fast_decode = fast_decode
        self.strict = strict

    @property
    def num_classes(self) -> int:
        """Including background (label 0), as torchvision's RetinaNet counts them."""
        return len(self.index.class_names) + 1

    def __len__(self) -> int:
        return len(self.index)

    def get_height_and_width(self, i: int) -> tuple[int, int]:
        return int(self.index.heights[i]), int(self.index.widths[i])

    def image_path(self, i: int) -> str:
        return os.path.join(self.images_dir, self.index.file_name(i))

    def load_image(self, i: int) -> torch.Tensor:
        draft = None
        if self.fast_decode and self.index.heights[i] > 0:
            draft = resized_size(
                int(self.index.heights[i]), int(self.index.widths[i]), self.min_size, self.max_size
            )
        return decode_image(self.image_path(i), draft)

    def __getitem__(self, key: int | tuple[int, int]) -> tuple[torch.Tensor, Target]:
        i, epoch = key if isinstance(key, tuple) else (key, 0)
        skipped: list[str] = []
        for attempt in range(MAX_FALLBACKS):
            # A deterministic stand-in keeps the batch full, so every rank still steps in lockstep.
            j = i if attempt == 0 else (i + attempt * 7919) % len(self)
            try:
                image = self.load_image(j)
            except (OSError, ValueError, SyntaxError) as exc:
                if self.strict:
                    raise TrainerError(
                        f"{self.image_path(j)}: cannot read image ({exc}) (--strict)"
                    ) from None
                skipped.append(self.index.file_name(j))
                continue
            return self._sample(j, epoch, image, skipped)
        raise TrainerError(
            f"{MAX_FALLBACKS} unreadable images in a row near {self.image_path(i)}: "
            f"{', '.join(skipped)}; check the images directory"
        )

    def _sample(
        self, j: int, epoch: int, image: torch.Tensor, skipped: list[str]
    ) -> tuple[torch.Tensor, Target]:
        height, width = image.shape[-2:]
        rows = self.index.box_slice(j)
        boxes = torch.from_numpy(self.index.boxes[rows].copy())
        boxes[:, 0::2] *= width
        boxes[:, 1::2] *= height
        if self.train and flip_decision(self.seed, epoch, j, self.hflip_probability):
            image, boxes = hflip(image, boxes)
        # torchvision's RetinaNet checks this on the device, one wait per image; ours
        # (TrainerRetinaNet) leaves it to the host, here.
        proper = (boxes[:, 2:] > boxes[:, :2]).all(dim=1)
        if not bool(proper.all()):
            raise TrainerError(
                f"{self.image_path(j)}: box {boxes[~proper][0].tolist()} has no positive width "
                "and height; drop it from the annotations and prepare the index again"
            )
        return image, {
            "boxes": boxes,
            "labels": torch.from_numpy(self.index.labels[rows].astype("int64")),
            "index": j,
            "orig_size": (
                int(self.index.heights[j]) or int(height),
                int(self.index.widths[j]) or int(width),
            ),
            "skipped": skipped,
        }


def collate(
    batch: list[tuple[torch.Tensor, Target]],
) -> tuple[list[torch.Tensor], list[Target]]:
    """Variable-size images stay a list; the model's transform pads them on the device."""
    images, targets = zip(*batch, strict=True)
    return list(images), list(targets)
