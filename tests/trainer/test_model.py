"""Model construction: the default v2 detector, weights from files only, channels-last that sticks."""

from __future__ import annotations

import pytest
import torch
from torchvision.models import resnet18, resnet50

from trainer.config import parse_config
from trainer.errors import ConfigError
from trainer.model import TINY_MAP_POSITIONS, build_model, parameter_groups

pytestmark = pytest.mark.slow  # trains or runs the real model


def config(*args: str):
    return parse_config(["--min-size", "64", "--max-size", "64", *args])


def one_target():
    return [{"boxes": torch.tensor([[4.0, 6.0, 40.0, 50.0]]), "labels": torch.tensor([1])}]


def test_default_model_is_resnet50_fpn_v2_sized_for_the_dataset():
    cfg = config()
    assert cfg.model == "retinanet_resnet50_fpn_v2"
    model = build_model(cfg, num_classes=601)
    assert model.head.classification_head.num_classes == 601
    assert model.head.classification_head.cls_logits.out_channels == 9 * 601
    assert isinstance(model.head.classification_head.conv[0][1], torch.nn.GroupNorm)  # v2 head
    assert model.head.regression_head._loss_type == "giou"
    assert model.score_thresh == 0.05 and model.detections_per_img == 300
    losses = model([torch.rand(3, 64, 80)], one_target())
    assert set(losses) == {"classification", "bbox_regression"}
    assert all(torch.isfinite(v) for v in losses.values())


def test_full_weights_round_trip_and_class_count_change(tmp_path):
    source = build_model(config("--model", "retinanet_resnet18_fpn"), num_classes=5)
    path = tmp_path / "detector.pth"
    torch.save(source.state_dict(), path)
    same = build_model(config("--model", "retinanet_resnet18_fpn", "--weights", str(path)), 5)
    loaded = same.state_dict()  # FrozenBatchNorm2d (weights given) has no num_batches_tracked
    assert len(loaded) > 100
    for key, value in loaded.items():
        assert torch.equal(value, source.state_dict()[key]), key
    other = build_model(config("--model", "retinanet_resnet18_fpn", "--weights", str(path)), 9)
    assert other.head.classification_head.cls_logits.out_channels == 9 * 9
    assert torch.equal(
        other.backbone.body.layer1[0].conv1.weight, source.backbone.body.layer1[0].conv1.weight
    )


def test_weights_of_another_architecture_are_refused(tmp_path):
    path = tmp_path / "v1.pth"
    torch.save(build_model(config("--model", "retinanet_resnet18_fpn"), 3).state_dict(), path)
    with pytest.raises(ConfigError, match=r"not a retinanet_resnet50_fpn_v2 state dict"):
        build_model(config("--weights", str(path)), 3)


def test_backbone_weights_from_an_imagenet_file(tmp_path):
    classifier = resnet18(weights=None)
    path = tmp_path / "resnet18.pth"
    torch.save(classifier.state_dict(), path)
    model = build_model(
        config("--model", "retinanet_resnet18_fpn", "--weights-backbone", str(path)), 3
    )
    assert torch.equal(
        model.backbone.body.layer3[1].conv2.weight, classifier.layer3[1].conv2.weight
    )
    # With weights, 3 trainable layers (torchvision's default): conv1 and layer1 stay frozen.
    assert not model.backbone.body.conv1.weight.requires_grad
    assert not model.backbone.body.layer1[0].conv1.weight.requires_grad
    assert model.backbone.body.layer2[0].conv1.weight.requires_grad
    wrong = tmp_path / "resnet50.pth"
    torch.save(resnet50(weights=None).state_dict(), wrong)
    with pytest.raises(ConfigError, match="does not fit"):
        build_model(
            config("--model", "retinanet_resnet18_fpn", "--weights-backbone", str(wrong)), 3
        )


def test_channels_last_reaches_the_backbone_input():
    model = build_model(config("--model", "retinanet_resnet18_fpn", "--channels-last"), 3)
    seen = []
    model.backbone.body.conv1.register_forward_pre_hook(
        lambda _m, args: seen.append(args[0].is_contiguous(memory_format=torch.channels_last))
    )
    model([torch.rand(3, 64, 72)], one_target())
    assert seen == [True]
    assert model.backbone.body.conv1.weight.is_contiguous(memory_format=torch.channels_last)


def test_norm_layers_get_their_own_weight_decay():
    model = build_model(config("--model", "retinanet_resnet18_fpn"), 3)
    groups = parameter_groups(model, 0.05, 0.0)
    assert [g["weight_decay"] for g in groups] == [0.05, 0.0]
    norm_ids = {id(p) for p in groups[1]["params"]}
    assert id(model.backbone.body.bn1.weight) in norm_ids
    assert id(model.head.regression_head.bbox_reg.weight) not in norm_ids


def test_our_retinanet_trains_and_detects_as_torchvisions_own() -> None:
    """TrainerRetinaNet drops torchvision's host waits (transform, box check) but not its maths:
    with the same parts, the same losses and the same detections, bit for bit in fp32."""
    from torchvision.models.detection import RetinaNet

    torch.manual_seed(0)
    ours = build_model(config("--model", "retinanet_resnet18_fpn", "--min-size", "128",
                              "--max-size", "160"), 5)  # fmt: skip
    theirs = RetinaNet(ours.backbone, 5, anchor_generator=ours.anchor_generator, head=ours.head,
                       min_size=128, max_size=160)  # fmt: skip
    gen = torch.Generator().manual_seed(1)
    images = [torch.rand(3, 100, 130, generator=gen), torch.rand(3, 90, 120, generator=gen)]
    targets = [
        {
            "boxes": torch.tensor([[10.0, 10, 50, 60], [5, 5, 90, 80]]),
            "labels": torch.tensor([1, 3]),
        },
        {"boxes": torch.zeros(0, 4), "labels": torch.zeros(0, dtype=torch.int64)},
    ]
    ours.train()
    theirs.train()
    with torch.no_grad():
        mine = ours(images, [dict(t) for t in targets])
        want = theirs(images, [dict(t) for t in targets])
    assert {k: float(v) for k, v in mine.items()} == {k: float(v) for k, v in want.items()}
    ours.eval()
    theirs.eval()
    ours.score_thresh = theirs.score_thresh = 0.001  # an untrained model's scores are low
    with torch.no_grad():
        mine_det, want_det = ours(images), theirs(images)
    for a, b in zip(mine_det, want_det, strict=True):
        assert len(a["boxes"]) > 0
        for key in ("boxes", "scores", "labels"):
            assert torch.equal(a[key], b[key]), key


@pytest.mark.parametrize("name", ["retinanet_resnet18_fpn", "retinanet_resnet50_fpn_v2"])
def test_tiny_pyramid_levels_run_in_fp32_under_cpu_bf16_autocast(name: str) -> None:
    """At 64 px the P5, P6 and P7 maps are 2x2, 1x1 and 1x1: under CPU bf16 autocast P6, P7 and
    the head's convolutions on those levels run in fp32, the larger levels in bf16; in fp32
    nothing changes, and the loss under bf16 stays close to fp32's."""
    torch.manual_seed(0)
    model = build_model(config("--model", name), num_classes=4)
    outputs: dict[tuple[str, int], torch.dtype] = {}

    def record(module_name: str):
        def hook(_module: torch.nn.Module, _args: object, out: torch.Tensor) -> None:
            outputs[(module_name, out.shape[-1])] = out.dtype

        return hook

    for module_name, module in model.named_modules():
        if isinstance(module, torch.nn.Conv2d) and "body" not in module_name:
            module.register_forward_hook(record(module_name))
    images = [torch.rand(3, 64, 64), torch.rand(3, 64, 64)]
    with torch.autocast("cpu", dtype=torch.bfloat16):
        bf16 = model(images, one_target() * 2)
    head_convs = {n for n, _ in outputs if n.startswith("head.")}
    assert len(head_convs) == 10  # 4 convs and the predictor, in each of the two heads
    for module_name in head_convs:
        assert outputs[(module_name, 8)] == outputs[(module_name, 4)] == torch.bfloat16
        assert outputs[(module_name, 2)] == outputs[(module_name, 1)] == torch.float32
    assert outputs[("backbone.fpn.extra_blocks.p6", 1)] == torch.float32
    assert outputs[("backbone.fpn.extra_blocks.p7", 1)] == torch.float32
    assert outputs[("backbone.fpn.layer_blocks.0.0", 8)] == torch.bfloat16
    outputs.clear()
    fp32 = model(images, one_target() * 2)
    assert set(outputs.values()) == {torch.float32}
    for term, value in fp32.items():
        assert torch.isfinite(bf16[term]) and float(bf16[term]) == pytest.approx(
            float(value), rel=0.05
        )


def test_no_level_runs_in_fp32_where_no_map_is_tiny() -> None:
    """Where the smallest map (P7) has more than TINY_MAP_POSITIONS positions (3x3 at 320 px),
    nothing runs in fp32 under bf16 autocast. A 32x544 image has a 1x5 P7 (P6 1x9): no map is
    tiny, at a sixth of a 320 px square's pixels (bf16 is emulated on an AVX2 CPU, 5-15x fp32)."""
    model = build_model(config("--model", "retinanet_resnet18_fpn", "--min-size", "32",
                               "--max-size", "544"), num_classes=4)  # fmt: skip
    seen: set[torch.dtype] = set()
    sides: list[tuple[int, int]] = []
    for module in model.head.modules():
        if isinstance(module, torch.nn.Conv2d):
            module.register_forward_hook(lambda _m, _a, out: seen.add(out.dtype))
    model.head.classification_head.cls_logits.register_forward_hook(
        lambda _m, _a, out: sides.append((out.shape[-2], out.shape[-1]))
    )
    with torch.autocast("cpu", dtype=torch.bfloat16):
        model([torch.rand(3, 32, 544)], [{"boxes": torch.tensor([[4.0, 6.0, 40.0, 30.0]]),
                                          "labels": torch.tensor([1])}])  # fmt: skip
    assert sides == [(4, 68), (2, 34), (1, 17), (1, 9), (1, 5)]  # P3 to P7, none tiny
    assert min(h * w for h, w in sides) > TINY_MAP_POSITIONS
    assert seen == {torch.bfloat16}
