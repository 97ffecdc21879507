"""The two files the Open Images metric adds to a data root written by trainer_fixtures."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from trainer_fixtures import MIDS


def write_oid_eval_files(root: Path) -> dict[str, list[str]]:
    """bbox_labels_600_hierarchy.json (Tree has Person as a Part, which is not "is a") and
    validation image-level labels: each validation image's box classes verified present and one
    other class verified absent. Returns the verified labels per image id."""
    person, car, tree = MIDS
    hierarchy = {
        "LabelName": "/m/0bl9f",
        "Subcategory": [
            {"LabelName": person},
            {"LabelName": car},
            {"LabelName": tree, "Part": [{"LabelName": person}]},
        ],
    }
    (root / "bbox_labels_600_hierarchy.json").write_text(json.dumps(hierarchy))
    boxes: dict[str, set[str]] = {}
    with open(root / "validation-annotations-bbox.csv", newline="") as f:
        for row in csv.DictReader(f):
            boxes.setdefault(row["ImageID"], set()).add(row["LabelName"])
    verified = {}
    with open(root / "validation-annotations-human-imagelabels-boxable.csv", "w") as f:
        f.write("ImageID,Source,LabelName,Confidence\n")
        for image, present in sorted(boxes.items()):
            absent = sorted(set(MIDS) - present)[:1]
            for mid in sorted(present):
                f.write(f"{image},verification,{mid},1\n")
            for mid in absent:
                f.write(f"{image},verification,{mid},0\n")
            verified[image] = [*sorted(present), *absent]
    return verified
