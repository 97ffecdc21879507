"""Decoding and augmentation. Images stay uint8 until they reach the device (4x less to move).

Resizing and normalisation happen inside the model (torchvision's GeneralizedRCNNTransform), on the
training device. What happens here is only what must happen on the CPU: decode and flip.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from PIL import Image


def resized_size(height: int, width: int, min_size: int, max_size: int) -> tuple[int, int]:
    """The (height, width) the model's transform will resize an image to (same rule as torchvision)."""
    scale = min(min_size / min(height, width), max_size / max(height, width))
    return max(1, math.ceil(height * scale)), max(1, math.ceil(width * scale))


def decode_image(path: str, draft_size: tuple[int, int] | None = None) -> torch.Tensor:
    """RGB uint8 CHW. With ``draft_size`` (height, width) a JPEG is decoded at the smallest DCT
    scale (1/2, 1/4, 1/8) still at least that big, which skips most of the decode work on large
    photos. EXIF orientation is deliberately ignored: Open Images boxes are in stored-pixel frame.
    """
    with Image.open(path) as img:
        if draft_size is not None and img.format == "JPEG":
            img.draft("RGB", (draft_size[1], draft_size[0]))
        rgb = img.convert("RGB")
    array = np.asarray(rgb)
    return torch.from_numpy(array.copy()).permute(2, 0, 1)


def flip_decision(seed: int, epoch: int, index: int, probability: float) -> bool:
    """A coin flip that depends only on (seed, epoch, sample), so a resumed run flips the same way."""
    if probability <= 0.0:
        return False
    return bool(np.random.default_rng((seed, epoch, index)).random() < probability)


def hflip(image: torch.Tensor, boxes: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Mirror a CHW image and its pixel xyxy boxes."""
    width = image.shape[-1]
    flipped = boxes.clone()
    flipped[:, 0] = width - boxes[:, 2]
    flipped[:, 2] = width - boxes[:, 0]
    return image.flip(-1), flipped


def to_model_input(images: list[torch.Tensor], device: torch.device) -> list[torch.Tensor]:
    """uint8 CHW on the host -> float [0, 1] on the device (copy first, convert there)."""
    return [img.to(device, non_blocking=True).float().div_(255.0) for img in images]
