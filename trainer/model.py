"""The detector: torchvision RetinaNet, sized for the dataset, weights from files only."""

from __future__ import annotations

import os

import torch
from torch import nn
from torchvision.models.detection import RetinaNet, retinanet_resnet50_fpn_v2
from torchvision.models.detection.backbone_utils import resnet_fpn_backbone
from torchvision.ops.feature_pyramid_network import LastLevelP6P7
from torchvision.ops.misc import FrozenBatchNorm2d

from trainer.config import TrainConfig
from trainer.errors import ConfigError

NORM_LAYERS = (
    nn.BatchNorm1d, nn.BatchNorm2d, nn.BatchNorm3d, nn.SyncBatchNorm,
    nn.GroupNorm, nn.LayerNorm, FrozenBatchNorm2d,
)  # fmt: skip


def build_model(cfg: TrainConfig, num_classes: int) -> nn.Module:
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
        model = retinanet_resnet50_fpn_v2(
            weights=None, weights_backbone=None, num_classes=num_classes, **sizes
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
        model = RetinaNet(backbone, num_classes=num_classes, **sizes)
    else:
        raise ConfigError(f"--model {cfg.model!r}: unknown architecture")
    if cfg.weights_backbone != "none":
        _load_backbone(model, cfg.weights_backbone)
    _freeze_backbone_layers(model, trainable)
    if cfg.weights:
        load_model_weights(model, cfg.weights, cfg.model)
    if cfg.channels_last:
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
