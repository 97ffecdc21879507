"""The Open Images challenge metric on small cases whose AP is worked out by hand in the comments.

AP reminder (VOC 2010+, the official OID definition): walk the ranked list, precision p_i and
recall r_i after each entry; replace each p_i by the largest precision at or after it; AP is the
sum over the entries where recall rises of (rise in recall) x (that precision).
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from trainer.errors import ConfigError
from trainer.oid_metric import (
    ImageGroundTruth,
    average_precision,
    expand_predictions,
    oid_average_precisions,
    oid_map,
    read_hierarchy,
    read_image_labels,
)


def box(*xyxy):
    return np.array(xyxy, np.float64).reshape(-1, 4)


def gt(boxes, labels, group_of=None, positive=None, negative=None):
    labels = np.array(labels, np.int64)
    group = np.zeros(len(labels), bool) if group_of is None else np.array(group_of, bool)
    as_array = lambda x: None if x is None else np.array(x, np.int64)  # noqa: E731
    return ImageGroundTruth(box(*boxes), labels, group, as_array(positive), as_array(negative))


def det(boxes, scores, labels):
    return box(*boxes), np.array(scores, np.float64), np.array(labels, np.int64)


def test_plain_true_and_false_positives():
    # Class 1, boxes A=[0,0,10,10], B=[20,20,30,30]. Detections by score:
    #   0.9 exactly on A          -> TP (IoU 1)
    #   0.8 on empty ground       -> FP
    #   0.7 [20,20,29,29] on B    -> TP (IoU 81/100 = 0.81)
    #   0.6 on A again            -> FP (A already taken; no second chance on another box)
    # precision 1, 1/2, 2/3, 1/2; recall 1/2, 1/2, 1, 1. Interpolated precision where recall
    # rises: at entry 1 max(1, 1/2, 2/3, 1/2) = 1, at entry 3 max(2/3, 1/2) = 2/3.
    # AP = 1/2 * 1 + 1/2 * 2/3 = 5/6.
    ground = [gt([0, 0, 10, 10, 20, 20, 30, 30], [1, 1])]
    found = [
        det(
            [0, 0, 10, 10, 50, 50, 60, 60, 20, 20, 29, 29, 0, 0, 10, 10],
            [0.9, 0.8, 0.7, 0.6],
            [1, 1, 1, 1],
        )
    ]
    aps, positives = oid_average_precisions(ground, found, num_classes=1)
    assert positives.tolist() == [2]
    assert aps[0] == pytest.approx(5 / 6)
    # IoU just under 0.5 is a miss: [0,0,10,4.9] on A has IoU 0.49 -> FP, AP 0 with one box.
    miss = oid_average_precisions([gt([0, 0, 10, 10], [1])], [det([0, 0, 10, 4.9], [0.9], [1])], 1)
    assert miss[0][0] == 0.0


def test_group_of_box_absorbs_detections_by_intersection_over_detection_area():
    # Class 1: group-of box G=[0,0,100,100] and a plain box P=[200,200,210,210] (2 positives).
    # Detections by score:
    #   0.95 far away [300,300,310,310]           -> FP
    #   0.9, 0.5, 0.3 small boxes inside G        -> IoA 1: absorbed, G counts once, at 0.9
    #   0.7 [95,0,115,10]: area 200, 5x10 inside  -> IoA 0.25 < 0.5 -> FP
    #   0.6 exactly on P                          -> TP
    #   0.4 [90,0,110,10]: area 200, 10x10 inside -> IoA 0.5 (IoU 0.01): absorbed, ignored
    # Ranked entries: FP .95, TP .9 (G), FP .7, TP .6 (P); the absorbed ones are gone.
    # precision 0, 1/2, 1/3, 1/2; recall 0, 1/2, 1/2, 1. Interpolated precision is 1/2 at both
    # recall rises (entries 2 and 4). AP = 1/2 * 1/2 + 1/2 * 1/2 = 1/2.
    ground = [gt([0, 0, 100, 100, 200, 200, 210, 210], [1, 1], group_of=[1, 0])]
    found = [
        det(
            [300, 300, 310, 310, 10, 10, 20, 20, 30, 30, 40, 40, 50, 50, 60, 60,
             95, 0, 115, 10, 200, 200, 210, 210, 90, 0, 110, 10],
            [0.95, 0.9, 0.5, 0.3, 0.7, 0.6, 0.4],
            [1] * 7,
        )
    ]  # fmt: skip
    aps, positives = oid_average_precisions(ground, found, num_classes=1)
    assert positives.tolist() == [2]
    assert aps[0] == pytest.approx(0.5)
    # A group-of box that nothing falls into is a missed positive: a second group-of box G2 with
    # no detection makes 3 positives; the same ranked list then has recall 0, 1/3, 1/3, 2/3 and
    # AP = 1/3 * 1/2 + 1/3 * 1/2 = 1/3.
    ground_2 = [gt([0, 0, 100, 100, 200, 200, 210, 210, 400, 400, 500, 500], [1, 1, 1], [1, 0, 1])]
    aps_2, positives_2 = oid_average_precisions(ground_2, found, num_classes=1)
    assert positives_2.tolist() == [3]
    assert aps_2[0] == pytest.approx(1 / 3)


def test_detection_matching_a_plain_box_is_not_absorbed_by_a_group_of_box():
    # A plain box A=[0,0,10,10] inside a group-of box G=[0,0,100,100], both class 1.
    # 0.9 on A -> TP (plain boxes are matched first); 0.8 on A again -> A is taken, so it is
    # not TP, but it lies inside G (IoA 1) -> absorbed; G becomes a TP at 0.8.
    # Entries: TP .9, TP .8; 2 positives -> AP 1.
    ground = [gt([0, 0, 10, 10, 0, 0, 100, 100], [1, 1], group_of=[0, 1])]
    found = [det([0, 0, 10, 10, 0, 0, 10, 10], [0.9, 0.8], [1, 1])]
    aps, _ = oid_average_precisions(ground, found, num_classes=1)
    assert aps[0] == pytest.approx(1.0)


HIERARCHY = {
    "LabelName": "/m/0bl9f",  # Entity, the root, not a class
    "Subcategory": [
        {
            "LabelName": "/m/07yv9",  # Vehicle
            "Subcategory": [
                {"LabelName": "/m/0k4j", "Part": [{"LabelName": "/m/083wq"}]},  # Car, Wheel
                {"LabelName": "/m/01bjv"},  # Bus
            ],
        },
        {"LabelName": "/m/083wq"},  # Wheel is also a top-level class
    ],
}
MIDS = ["/m/07yv9", "/m/0k4j", "/m/01bjv", "/m/083wq"]  # labels 1 Vehicle, 2 Car, 3 Bus, 4 Wheel


@pytest.fixture
def hierarchy(tmp_path):
    path = tmp_path / "bbox_labels_600_hierarchy.json"
    path.write_text(json.dumps(HIERARCHY))
    return read_hierarchy(str(path), MIDS)


def test_hierarchy_file_subcategories_only(hierarchy):
    # Car and Bus are Vehicles; Wheel is a Part of Car, which is not "is a": no expansion.
    assert [a.tolist() for a in hierarchy.ancestors[1:]] == [[1], [1, 2], [1, 3], [4]]
    assert [d.tolist() for d in hierarchy.descendants[1:]] == [[1, 2, 3], [2], [3], [4]]


def test_hierarchy_expands_boxes_and_the_prediction_step_expands_detections(hierarchy):
    # Boxes: Car on A, Bus on B -> expanded: Car {A}, Bus {B}, Vehicle {A, B}.
    # Detections: Car on A (0.9), Car on B (0.8); expand_predictions adds Vehicle on A (0.9),
    # Vehicle on B (0.8).
    #   Car:     TP .9, FP .8 (B is a Bus), 1 positive -> precision 1, 1/2; AP 1
    #   Bus:     1 positive, no detection -> AP 0
    #   Vehicle: TP .9, TP .8, 2 positives -> AP 1
    #   Wheel:   no ground truth -> no AP (NaN), left out of the mean
    # mAP = (1 + 0 + 1) / 3 = 2/3.
    ground = [gt([0, 0, 10, 10, 20, 20, 30, 30], [2, 3])]
    found = [det([0, 0, 10, 10, 20, 20, 30, 30], [0.9, 0.8], [2, 2])]
    expanded = expand_predictions(found, hierarchy)
    assert expanded[0][2].tolist() == [1, 2, 1, 2]  # Vehicle and Car for each detection
    aps, positives = oid_average_precisions(ground, expanded, num_classes=4, hierarchy=hierarchy)
    assert positives.tolist() == [2, 1, 1, 0]
    assert aps[:3].tolist() == pytest.approx([1.0, 1.0, 0.0])
    assert np.isnan(aps[3])
    assert oid_map(aps) == pytest.approx(2 / 3)
    # Scored as written (the official evaluator): no Vehicle detection at all.
    #   Vehicle: 2 positives, no detection -> AP 0; Car 1, Bus 0 as above.
    # mAP = (0 + 1 + 0) / 3 = 1/3.
    aps, _ = oid_average_precisions(ground, found, num_classes=4, hierarchy=hierarchy)
    assert aps[:3].tolist() == pytest.approx([0.0, 1.0, 0.0])
    assert oid_map(aps) == pytest.approx(1 / 3)


def test_negative_and_unverified_image_labels():
    # Flat classes 1 Car, 2 Person, 3 Dog.
    # Image 1: a Car box A; Person verified absent; Dog neither boxed nor verified.
    #   Car on A .9 -> TP; Person at X .8 -> FP (verified absent); Dog at X .95 -> ignored.
    # Image 2: a Person box P, a Dog box D: Person on P .7 -> TP, Dog on D .6 -> TP.
    #   Car:    TP .9, 1 positive -> AP 1
    #   Person: FP .8, TP .7, 1 positive -> precision 0, 1/2; AP = 1 * 1/2 = 1/2
    #   Dog:    TP .6 only (the .95 on image 1 is not evaluated) -> AP 1
    # mAP = (1 + 1/2 + 1) / 3 = 5/6.
    ground = [
        gt([0, 0, 10, 10], [1], positive=[1], negative=[2]),
        gt([0, 0, 10, 10, 20, 20, 30, 30], [2, 3], positive=[2, 3]),
    ]
    found = [
        det([0, 0, 10, 10, 50, 50, 60, 60, 50, 50, 60, 60], [0.9, 0.8, 0.95], [1, 2, 3]),
        det([0, 0, 10, 10, 20, 20, 30, 30], [0.7, 0.6], [2, 3]),
    ]
    aps, _ = oid_average_precisions(ground, found, num_classes=3)
    assert aps.tolist() == pytest.approx([1.0, 0.5, 1.0])
    assert oid_map(aps) == pytest.approx(5 / 6)
    # Without image-level labels every class counts as verified on every image (exhaustive
    # annotation, as COCO): the Dog at .95 becomes an FP ranked first -> Dog AP 1/2, mAP 2/3.
    exhaustive = [ImageGroundTruth(g.boxes, g.labels, g.group_of) for g in ground]
    aps_all, _ = oid_average_precisions(exhaustive, found, num_classes=3)
    assert aps_all.tolist() == pytest.approx([1.0, 0.5, 0.5])


def test_verified_absent_parent_makes_child_detections_false_positives(hierarchy):
    # Image 1: no boxes, Vehicle (1) verified absent -> Car, Bus (its descendants) absent too.
    #   Car detection .9 -> FP for Car and, expanded, FP for Vehicle.
    # Image 2: a Car box; Car detection .8 on it -> TP for Car and Vehicle.
    # Car and Vehicle: FP .9, TP .8, 1 positive each -> AP 1/2 each; Bus, Wheel: no positives.
    ground = [gt([], [], negative=[1]), gt([0, 0, 10, 10], [2], positive=[2])]
    found = expand_predictions(
        [det([0, 0, 10, 10], [0.9], [2]), det([0, 0, 10, 10], [0.8], [2])], hierarchy
    )
    aps, _ = oid_average_precisions(ground, found, num_classes=4, hierarchy=hierarchy)
    assert aps[:2].tolist() == pytest.approx([0.5, 0.5])
    assert oid_map(aps) == pytest.approx(0.5)
    # Image 1 unverified (no labels at all): its Car detection is ignored -> AP 1.
    ground[0] = gt([], [], positive=[], negative=[])
    aps, _ = oid_average_precisions(ground, found, num_classes=4, hierarchy=hierarchy)
    assert aps[:2].tolist() == pytest.approx([1.0, 1.0])


def test_average_precision_edge_cases():
    assert np.isnan(average_precision(np.zeros(0), np.zeros(0, bool), 0))
    assert average_precision(np.zeros(0), np.zeros(0, bool), 3) == 0.0
    # TP, TP out of 4 positives: recall 1/4, 1/2 at precision 1 -> AP 1/2.
    assert average_precision(np.array([0.9, 0.8]), np.array([True, True]), 4) == 0.5


def test_image_label_file(tmp_path):
    path = tmp_path / "validation-annotations-human-imagelabels-boxable.csv"
    path.write_text(
        "ImageID,Source,LabelName,Confidence\n"
        "aaaa,verification,/m/0k4j,1\n"
        "aaaa,verification,/m/01bjv,0\n"
        "aaaa,verification,/m/zzzz,1\n"  # not a class of ours: skipped
        "bbbb,verification,/m/07yv9,0\n"
        "cccc,verification,/m/07yv9,1\n"  # not an evaluated image: skipped
    )
    labels = read_image_labels(str(path), ["aaaa", "bbbb"], MIDS)
    assert [p.tolist() for p in labels.positive] == [[2], []]
    assert [n.tolist() for n in labels.negative] == [[3], [1]]
    path.write_text("ImageID,Source,LabelName,Confidence\naaaa,v,/m/0k4j,yes\n")
    with pytest.raises(ConfigError, match=":2: Confidence 'yes' is not a number"):
        read_image_labels(str(path), ["aaaa"], MIDS)
    path.write_text("ImageID,Source,LabelName,Confidence\naaaa,v,/m/0k4j,1\naaaa,v\n")
    with pytest.raises(ConfigError, match=r":3: malformed row 'aaaa,v'"):
        read_image_labels(str(path), ["aaaa"], MIDS)


def test_bad_hierarchy_file(tmp_path):
    path = tmp_path / "h.json"
    with pytest.raises(ConfigError, match="class hierarchy not found"):
        read_hierarchy(str(path), MIDS)
    path.write_text('{"LabelName": "/m/0bl9f", "Subcategory": [{"Name": "x"}]}')
    with pytest.raises(ConfigError, match=r"root.Subcategory\[0\]: expected an object with a"):
        read_hierarchy(str(path), MIDS)


def test_group_of_box_absorbing_only_score_zero_detections_is_no_true_positive():
    # A group-of Car box G=[0,0,20,20] and one Car detection [2,2,8,8] at score 0.0.
    # IoA = 36/36 = 1 >= 0.5: absorbed. The official code starts G's score at 0 and keeps it only
    # above 0: no entry at all. Ranked list empty, 1 positive -> AP 0 (it used to be 1.0).
    ground = [gt([0, 0, 20, 20], [1], group_of=[True])]
    aps, positives = oid_average_precisions(ground, [det([2, 2, 8, 8], [0.0], [1])], 1)
    assert positives.tolist() == [1] and aps.tolist() == [0.0]
    # At any score above 0 it is one true positive: AP 1.
    aps, _ = oid_average_precisions(ground, [det([2, 2, 8, 8], [0.01], [1])], 1)
    assert aps.tolist() == [1.0]


def test_zero_area_and_inverted_detection_boxes_are_dropped_before_matching():
    # A Car box A=[0,0,10,10]; a detection on A at 0.9 (TP) and [5,5,5,9] at 0.95 (zero width).
    # Counted, the zero-width box would be an FP ranked first: precision 0, 1/2 -> AP 1/2.
    # Dropped, as the official code does: the list is the TP alone -> AP 1.0.
    ground = [gt([0, 0, 10, 10], [1])]
    found = [det([0, 0, 10, 10, 5, 5, 5, 9], [0.9, 0.95], [1, 1])]
    aps, _ = oid_average_precisions(ground, found, 1)
    assert aps.tolist() == [1.0]
    # Inverted (x1 > x2, or y1 > y2) likewise.
    found = [det([0, 0, 10, 10, 8, 0, 2, 10, 0, 8, 10, 2], [0.9, 0.95, 0.97], [1, 1, 1])]
    aps, _ = oid_average_precisions(ground, found, 1)
    assert aps.tolist() == [1.0]


def test_an_image_with_only_image_level_labels_is_evaluated():
    # Image 1: no boxes, Car (1) verified absent. Image 2: a Car box A, detected at 0.8.
    # Car detection at 0.9 on image 1 -> FP (verified absent): list FP .9, TP .8 with 1 positive
    # -> precision 0, 1/2 -> AP 1/2. Leaving image 1 out (as the trainer once did) gave AP 1.
    ground = [gt([], [], negative=[1]), gt([0, 0, 10, 10], [1], positive=[1])]
    found = [det([0, 0, 10, 10], [0.9], [1]), det([0, 0, 10, 10], [0.8], [1])]
    aps, _ = oid_average_precisions(ground, found, 1)
    assert aps.tolist() == [0.5]
    # A verified-present label with no box adds no positive; a detection of it is an FP too.
    ground[0] = gt([], [], positive=[1])
    aps, positives = oid_average_precisions(ground, found, 1)
    assert positives.tolist() == [1] and aps.tolist() == [0.5]


def test_ties_keep_their_input_order():
    # Two detections at the same score, the FP first in the input: FP, TP -> AP 1/2; the TP
    # first -> AP 1. (The official unstable sort may put either first.)
    ground = [gt([0, 0, 10, 10], [1])]
    fp_first = [det([50, 50, 60, 60, 0, 0, 10, 10], [0.5, 0.5], [1, 1])]
    tp_first = [det([0, 0, 10, 10, 50, 50, 60, 60], [0.5, 0.5], [1, 1])]
    assert oid_average_precisions(ground, fp_first, 1)[0].tolist() == [0.5]
    assert oid_average_precisions(ground, tp_first, 1)[0].tolist() == [1.0]
