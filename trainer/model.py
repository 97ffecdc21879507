"""The detector: torchvision RetinaNet, sized for the dataset, weights from files only."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn
from torch.nn import functional as F
from torchvision.models.detection import RetinaNet, retinanet_resnet50_fpn_v2
from torchvision.models.detection.backbone_utils import resnet_fpn_backbone
from torchvision.models.detection.image_list import ImageList
from torchvision.models.detection.transform import GeneralizedRCNNTransform
from torchvision.ops.feature_pyramid_network import LastLevelP6P7
from torchvision.ops.misc import FrozenBatchNorm2d

from trainer.config import TrainConfig
from trainer.errors import ConfigError

# A RetinaNet training loss: (targets, head outputs, anchors) -> the loss terms by name.
LossFn = Callable[[list[dict[str, Tensor]], dict[str, Tensor], list[Tensor]], dict[str, Tensor]]

# Under bf16 autocast on a CPU, a pyramid level whose map has at most this many positions (2x2)
# runs in fp32: P6, P7 and the head's convolutions on those levels. On an AVX-512-BF16 Xeon,
# oneDNN's bf16 convolutions at the 1x1 maps of a 64 px run made P6's output NaN on the third
# step, every time (benchmarks/cpu_bf16_tiny_maps.py is the repro; trainer/README.md, "bf16 on a
# CPU"). These levels hold few anchors and little of the work; 2x2 is margin over the 1x1 seen
# failing.
TINY_MAP_POSITIONS = 4

NORM_LAYERS = (
    nn.BatchNorm1d, nn.BatchNorm2d, nn.BatchNorm3d, nn.SyncBatchNorm,
    nn.GroupNorm, nn.LayerNorm, FrozenBatchNorm2d,
)  # fmt: skip


class DeviceTransform(GeneralizedRCNNTransform):
    """torchvision's transform (normalise, resize, pad into one batch) without its waits: for
    every image torchvision makes the mean, the std and the box scale factors into new device
    tensors from Python numbers, and on CUDA each such copy waits until the device has run all
    the work queued before it. Here the mean and std are made once per device and dtype, and
    boxes scale by Python floats (the same float32 ratios, so the same boxes)."""

    def __init__(self, like: GeneralizedRCNNTransform) -> None:
        super().__init__(
            like.min_size, like.max_size, like.image_mean, like.image_std,
            size_divisible=like.size_divisible, fixed_size=like.fixed_size,
        )  # fmt: skip
        self._stats: dict[tuple[torch.device, torch.dtype], tuple[Tensor, Tensor]] = {}

    def normalize(self, image: Tensor) -> Tensor:
        if not image.is_floating_point():
            return super().normalize(image)  # torchvision's error for integer images
        key = (image.device, image.dtype)
        if key not in self._stats:
            self._stats[key] = (
                torch.tensor(self.image_mean, dtype=image.dtype).to(image.device)[:, None, None],
                torch.tensor(self.image_std, dtype=image.dtype).to(image.device)[:, None, None],
            )
        mean, std = self._stats[key]
        return (image - mean) / std

    def resize(
        self, image: Tensor, target: dict[str, Tensor] | None = None
    ) -> tuple[Tensor, dict[str, Tensor] | None]:
        height, width = image.shape[-2:]
        image, _ = super().resize(image, None)
        if target is None:
            return image, None
        new_height, new_width = image.shape[-2:]
        ratio_h = float(np.float32(new_height) / np.float32(height))
        ratio_w = float(np.float32(new_width) / np.float32(width))
        x1, y1, x2, y2 = target["boxes"].unbind(1)
        target["boxes"] = torch.stack((x1 * ratio_w, y1 * ratio_h, x2 * ratio_w, y2 * ratio_h), 1)
        return image, target


def cpu_bf16_autocast(tensor: Tensor) -> bool:
    """Whether `tensor` is on a CPU inside bf16 autocast (never true on a GPU)."""
    return (
        tensor.device.type == "cpu"
        and torch.is_autocast_enabled("cpu")
        and torch.get_autocast_dtype("cpu") == torch.bfloat16
    )


def is_tiny_map(height: int, width: int) -> bool:
    return height * width <= TINY_MAP_POSITIONS


def _conv_out_side(conv: nn.Conv2d, side: int, dim: int) -> int:
    padding = conv.padding[dim] if isinstance(conv.padding, tuple) else 0
    span = conv.dilation[dim] * (conv.kernel_size[dim] - 1) + 1
    return (side + 2 * int(padding) - span) // conv.stride[dim] + 1


def conv_fp32_at_tiny_maps(conv: nn.Conv2d, x: Tensor) -> Tensor:
    """`conv(x)`, in fp32 (autocast off, input cast) when under CPU bf16 autocast its output map
    is tiny; as autocast would run it otherwise."""
    height = _conv_out_side(conv, x.shape[-2], 0)
    width = _conv_out_side(conv, x.shape[-1], 1)
    if not (cpu_bf16_autocast(x) and is_tiny_map(height, width)):
        return conv(x)
    with torch.autocast("cpu", enabled=False):
        out: Tensor = conv(x.float())
    return out


class TinyMapP6P7(LastLevelP6P7):
    """torchvision's P6/P7 block, the same convolutions (and state dict keys), whose convolutions
    run in fp32 under CPU bf16 autocast where their output maps are tiny (TINY_MAP_POSITIONS)."""

    def __init__(self, like: LastLevelP6P7) -> None:
        nn.Module.__init__(self)
        self.p6, self.p7, self.use_P5 = like.p6, like.p7, like.use_P5

    def forward(
        self, p: list[Tensor], c: list[Tensor], names: list[str]
    ) -> tuple[list[Tensor], list[str]]:
        p6 = conv_fp32_at_tiny_maps(self.p6, p[-1] if self.use_P5 else c[-1])
        p7 = conv_fp32_at_tiny_maps(self.p7, F.relu(p6))
        p.extend([p6, p7])
        names.extend(["p6", "p7"])
        return p, names


class TrainerRetinaNet(RetinaNet):
    """torchvision's RetinaNet, with a forward pass that never makes the host wait for the
    device while training, so on a GPU the host queues the next step while this one runs.

    Against torchvision's forward: the transform is `DeviceTransform`; the check for degenerate
    boxes (one wait per image) is done on the host when a sample is read (the dataset); and the
    anchors are float32 under autocast (torchvision makes them in the feature maps' dtype, and
    a bf16 anchor at x=1000 is off by up to 4 pixels); and under CPU bf16 autocast the pyramid
    levels whose maps are tiny run in fp32 (TINY_MAP_POSITIONS says why)."""

    transform: GeneralizedRCNNTransform

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.transform = DeviceTransform(self.transform)
        fpn = getattr(self.backbone, "fpn", None)
        if fpn is not None and type(fpn.extra_blocks) is LastLevelP6P7:
            fpn.extra_blocks = TinyMapP6P7(fpn.extra_blocks)
        # The training loss (--loss batched: trainer/loss.py's); None: torchvision's per-image
        # compute_loss. Not a module: it holds no parameters and nothing in the state dict.
        self.loss_fn: LossFn | None = None

    def compute_loss(
        self,
        targets: list[dict[str, Tensor]],
        head_outputs: dict[str, Tensor],
        anchors: list[Tensor],
    ) -> dict[str, Tensor]:
        """The training loss: `loss_fn` when the run set one, else torchvision's."""
        if self.loss_fn is None:
            losses: dict[str, Tensor] = super().compute_loss(targets, head_outputs, anchors)
            return losses
        return self.loss_fn(targets, head_outputs, anchors)

    def forward(
        self, images: list[Tensor], targets: list[dict[str, Tensor]] | None = None
    ) -> dict[str, Tensor] | list[dict[str, Tensor]]:
        original_sizes = [(int(img.shape[-2]), int(img.shape[-1])) for img in images]
        image_list, targets = self.transform(images, targets)
        features = list(self.backbone(image_list.tensors).values())
        head_outputs = self._head(features)
        anchors = self.anchor_generator(image_list, _float32_like(features))
        if self.training:
            if targets is None:
                raise ValueError("RetinaNet: targets are required in training mode")
            losses: dict[str, Tensor] = self.compute_loss(targets, head_outputs, anchors)
            return losses
        return self._detect(image_list, features, head_outputs, anchors, original_sizes)

    def _head(self, features: list[Tensor]) -> dict[str, Tensor]:
        """The head over every level; under CPU bf16 autocast the levels with tiny maps (the
        last ones: maps shrink level by level) in fp32. The head treats each level on its own,
        so two calls joined along the anchors equal one."""
        tiny = [is_tiny_map(f.shape[-2], f.shape[-1]) for f in features]
        if not (features and cpu_bf16_autocast(features[0]) and any(tiny)):
            return self.head(features)
        first = tiny.index(True)
        with torch.autocast("cpu", enabled=False):
            small: dict[str, Tensor] = self.head([f.float() for f in features[first:]])
        if first == 0:
            return small
        large: dict[str, Tensor] = self.head(features[:first])
        return {key: torch.cat([large[key].float(), small[key]], dim=1) for key in large}

    def _detect(
        self,
        image_list: ImageList,
        features: list[Tensor],
        head_outputs: dict[str, Tensor],
        anchors: list[Tensor],
        original_sizes: list[tuple[int, int]],
    ) -> list[dict[str, Tensor]]:
        """torchvision's inference path: outputs split per pyramid level, decoded, mapped back."""
        per_level = [x.size(2) * x.size(3) for x in features]
        per_location = head_outputs["cls_logits"].size(1) // sum(per_level)
        sizes = [hw * per_location for hw in per_level]
        split_outputs = {k: list(v.split(sizes, dim=1)) for k, v in head_outputs.items()}
        split_anchors = [list(a.split(sizes)) for a in anchors]
        detections = self.postprocess_detections(
            split_outputs, split_anchors, image_list.image_sizes
        )
        result: list[dict[str, Tensor]] = self.transform.postprocess(
            detections, image_list.image_sizes, original_sizes
        )
        return result


def _float32_like(features: list[Tensor]) -> list[Tensor]:
    """Stand-ins with the feature maps' shapes and device in float32, for the anchor generator,
    which reads only those (an expanded scalar: no memory, no copy)."""
    return [torch.empty((), device=f.device).expand(f.shape) for f in features]


def build_model(cfg: TrainConfig, num_classes: int) -> TrainerRetinaNet:
    """``num_classes`` includes the background class 0."""
    pretrained = cfg.weights is not None or cfg.weights_backbone != "none"
    trainable = cfg.trainable_backbone_layers
    if trainable is None:
        trainable = 3 if pretrained else 5
    sizes = {
        "min_size": cfg.min_size,
        "max_size": cfg.max_size,
        "score_thresh": cfg.score_thresh,
        "detections_per_img": cfg.detections_per_image,
    }
    if cfg.model == "retinanet_resnet50_fpn_v2":
        # torchvision's builder makes the v2 backbone and GroupNorm head (and their initial
        # weights); our class takes them as they are.
        v2 = retinanet_resnet50_fpn_v2(
            weights=None, weights_backbone=None, num_classes=num_classes, **sizes
        )
        model = TrainerRetinaNet(
            v2.backbone, num_classes, anchor_generator=v2.anchor_generator, head=v2.head, **sizes
        )
    elif cfg.model in ("retinanet_resnet50_fpn", "retinanet_resnet18_fpn"):
        # v1 as torchvision builds it (frozen BN when starting from weights); the resnet18 variant
        # is the same design with a small body, for CPU smoke runs and tests.
        backbone = resnet_fpn_backbone(
            backbone_name="resnet50" if cfg.model == "retinanet_resnet50_fpn" else "resnet18",
            weights=None,
            norm_layer=FrozenBatchNorm2d if pretrained else nn.BatchNorm2d,
            trainable_layers=trainable,
            returned_layers=[2, 3, 4],
            extra_blocks=LastLevelP6P7(256, 256),
        )
        model = TrainerRetinaNet(backbone, num_classes=num_classes, **sizes)
    else:
        raise ConfigError(f"--model {cfg.model!r}: unknown architecture")
    if cfg.weights_backbone != "none":
        _load_backbone(model, cfg.weights_backbone)
    _freeze_backbone_layers(model, trainable)
    if cfg.weights:
        load_model_weights(model, cfg.weights, cfg.model)
    if cfg.channels_last == "on":  # "auto" is resolved by the run (trainer/fast_path.py)
        enable_channels_last(model)
    return model


def _read_state_dict(path: str) -> dict[str, torch.Tensor]:
    if not os.path.isfile(path):
        raise ConfigError(f"{path}: weights file not found (weights are never downloaded)")
    try:
        obj = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # torch raises many types for a bad file; all mean the same here
        raise ConfigError(
            f"{path}: not a loadable weights file ({type(exc).__name__}: {exc})"
        ) from None
    if isinstance(obj, dict) and isinstance(obj.get("model"), dict):
        obj = obj["model"]  # one of our checkpoints, or torchvision's reference checkpoint
    if not isinstance(obj, dict) or not all(isinstance(v, torch.Tensor) for v in obj.values()):
        raise ConfigError(f"{path}: expected a state dict of tensors")
    return obj


def _load_backbone(model: RetinaNet, path: str) -> None:
    """An ImageNet classifier state dict (e.g. torchvision's resnet50-*.pth) into the body."""
    state = _read_state_dict(path)
    state = {
        k.removeprefix("backbone.body."): v for k, v in state.items() if not k.startswith("fc.")
    }
    body = model.backbone.body
    expected = body.state_dict()
    missing = [k for k in expected if k not in state]
    wrong = [k for k in expected if k in state and state[k].shape != expected[k].shape]
    if missing or wrong:
        example = (missing or wrong)[0]
        raise ConfigError(
            f"--weights-backbone {path}: does not fit the {type(body).__name__} of this model "
            f"({len(missing)} missing, {len(wrong)} wrong-shape tensors, e.g. {example!r})"
        )
    body.load_state_dict({k: state[k] for k in expected})


def load_model_weights(model: nn.Module, path: str, model_name: str) -> None:
    """Full-detector weights. A classification layer for another class count is re-initialised
    (fine-tuning COCO weights on Open Images); any other mismatch is an error."""
    state = _read_state_dict(path)
    own = model.state_dict()
    cls_keys = {k for k in own if k.startswith("head.classification_head.cls_logits.")}
    # BatchNorm counters are absent from FrozenBatchNorm2d (v1 with weights): not a mismatch.
    missing = [k for k in own if k not in state and not k.endswith("num_batches_tracked")]
    unexpected = [k for k in state if k not in own and not k.endswith("num_batches_tracked")]
    wrong = [k for k in own if k in state and state[k].shape != own[k].shape]
    if missing or unexpected or set(wrong) - cls_keys:
        example = (missing or unexpected or wrong)[0]
        raise ConfigError(
            f"--weights {path}: not a {model_name} state dict ({len(missing)} missing, "
            f"{len(unexpected)} unexpected, {len(wrong)} wrong-shape tensors, e.g. {example!r})"
        )
    if wrong:
        print(
            f"trainer: --weights {path}: class count differs; classification layer re-initialised"
        )
    state = {k: v for k, v in state.items() if k not in cls_keys or not wrong}
    model.load_state_dict(state, strict=False)  # every mismatch was ruled out above


def _freeze_backbone_layers(model: RetinaNet, trainable: int) -> None:
    layers = ["layer4", "layer3", "layer2", "layer1", "conv1"][:trainable]
    if trainable == 5:
        layers.append("bn1")
    for name, param in model.backbone.body.named_parameters():
        if all(not name.startswith(layer) for layer in layers):
            param.requires_grad_(False)


def enable_channels_last(model: RetinaNet) -> None:
    """Weights to channels-last, and the backbone input too.

    The model's transform rebuilds the batch as a fresh NCHW tensor, so converting the images the
    loader gives us has no effect; a pre-hook on the backbone converts the tensor it really sees.
    """
    model.to(memory_format=torch.channels_last)

    def to_channels_last(_module: nn.Module, args: tuple[torch.Tensor, ...]) -> tuple[torch.Tensor]:
        return (args[0].contiguous(memory_format=torch.channels_last),)

    model.backbone.register_forward_pre_hook(to_channels_last)


def parameter_groups(model: nn.Module, weight_decay: float, norm_weight_decay: float) -> list[dict]:
    """Norm-layer parameters in their own group (torchvision's v2 recipe gives them no decay)."""
    norm: list[nn.Parameter] = []
    other: list[nn.Parameter] = []
    for module in model.modules():
        for param in module.parameters(recurse=False):
            if param.requires_grad:
                (norm if isinstance(module, NORM_LAYERS) else other).append(param)
    groups = [{"params": other, "weight_decay": weight_decay}]
    if norm:
        groups.append({"params": norm, "weight_decay": norm_weight_decay})
    return groups
