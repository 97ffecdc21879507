"""Generated datasets on disk in each supported format: real JPEGs, real CSV/JSON files."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
from PIL import Image

OID_BASE = "ImageID,Source,LabelName,Confidence,XMin,XMax,YMin,YMax,IsOccluded,IsTruncated,IsGroupOf,IsDepiction,IsInside"
XCLICK = ",XClick1X,XClick2X,XClick3X,XClick4X,XClick1Y,XClick2Y,XClick3Y,XClick4Y"
MIDS = {"/m/01g317": "Person", "/m/0k4j": "Car", "/g/11bc5k": "Tree"}


def write_jpeg(path: Path, width: int, height: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    pixels = rng.integers(0, 255, size=(height, width, 3), dtype=np.uint8)
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(pixels).save(path, quality=80)


def image_id(i: int) -> str:
    return f"{i:016x}"


def write_openimages(
    root: Path,
    train_images: int = 24,
    val_images: int = 6,
    size: tuple[int, int] = (80, 64),
    class_header: bool = False,
) -> dict:
    """A V7-shaped folder with every quirk: header-less class file, XClick columns in train,
    group-of rows, a degenerate box, a listed image whose file is missing, and rows out of order."""
    classes = root / "oidv7-class-descriptions-boxable.csv"
    root.mkdir(parents=True, exist_ok=True)
    with open(classes, "w", newline="") as f:
        if class_header:
            f.write("LabelName,DisplayName\n")
        for mid, name in MIDS.items():
            f.write(f"{mid},{name}\n")
    mids = list(MIDS)
    expected = {"group_of": 0, "degenerate": 0, "missing": []}

    def split(name: str, n: int, csv_name: str, xclick: bool, offset: int) -> list[list[str]]:
        rows = []
        for i in range(n):
            iid = image_id(offset + i)
            write_jpeg(root / name / f"{iid}.jpg", size[0], size[1], offset + i)
            for k in range(2):
                x1, y1 = 0.1 + 0.3 * k, 0.2
                group = "1" if (i % 5 == 0 and k == 1) else "0"
                rows.append(
                    [iid, "xclick", mids[(i + k) % 3], "1", f"{x1:.4f}", f"{x1 + 0.25:.4f}",
                     f"{y1:.4f}", f"{y1 + 0.5:.4f}", "0", "0", group, "0", "0"]
                )  # fmt: skip
        # One degenerate box (XMax == XMin) on the first image, and a listed image with no file.
        rows.append(
            [
                image_id(offset),
                "xclick",
                mids[0],
                "1",
                "0.5",
                "0.5",
                "0.1",
                "0.9",
                "0",
                "0",
                "0",
                "0",
                "0",
            ]
        )
        missing = image_id(offset + 999)
        rows.append(
            [missing, "xclick", mids[1], "1", "0.1", "0.6", "0.1", "0.6", "0", "0", "0", "0", "0"]
        )
        rows.reverse()  # the parser must not rely on rows being grouped by image
        with open(root / csv_name, "w", newline="") as f:
            f.write(OID_BASE + (XCLICK if xclick else "") + "\n")
            writer = csv.writer(f)
            for row in rows:
                writer.writerow(row + (["-1"] * 8 if xclick else []))
        return rows

    train_rows = split("train", train_images, "oidv6-train-annotations-bbox.csv", True, 0)
    split("validation", val_images, "validation-annotations-bbox.csv", False, 5000)
    expected["group_of"] = sum(1 for r in train_rows if r[10] == "1")
    expected["degenerate"] = 1
    expected["missing"] = [image_id(999)]
    expected["train_boxes_kept"] = 2 * train_images
    return expected


def write_coco(root: Path, train_images: int = 24, val_images: int = 6, size=(80, 64)) -> None:
    """COCO layout: annotations/instances_{train,val}2017.json, train2017/, val2017/.
    Sparse category ids (1, 3, 7), a crowd box, a degenerate box and a missing file."""
    categories = [{"id": 1, "name": "person"}, {"id": 3, "name": "car"}, {"id": 7, "name": "train"}]
    for split, n, offset in (("train2017", train_images, 0), ("val2017", val_images, 100)):
        images, annotations = [], []
        for i in range(n + 1):
            file_name = f"{offset + i:012d}.jpg"
            images.append(
                {"id": offset + i, "file_name": file_name, "width": size[0], "height": size[1]}
            )
            if i < n:  # the last image is listed but never written
                write_jpeg(root / split / file_name, size[0], size[1], offset + i)
            for k in range(2):
                annotations.append(
                    {"id": len(annotations) + 1, "image_id": offset + i,
                     "category_id": categories[(i + k) % 3]["id"],
                     "bbox": [5 + 30 * k, 10, 25, 30], "area": 750, "iscrowd": 0}
                )  # fmt: skip
        annotations.append(
            {"id": len(annotations) + 1, "image_id": offset, "category_id": 1,
             "bbox": [1, 1, 60, 50], "area": 3000, "iscrowd": 1}
        )  # fmt: skip
        annotations.append(
            {"id": len(annotations) + 1, "image_id": offset, "category_id": 3,
             "bbox": [10, 10, 0.5, 20], "area": 10, "iscrowd": 0}
        )  # fmt: skip
        ann_dir = root / "annotations"
        ann_dir.mkdir(parents=True, exist_ok=True)
        name = "train2017" if split == "train2017" else "val2017"
        (ann_dir / f"instances_{name}.json").write_text(
            json.dumps({"images": images, "annotations": annotations, "categories": categories})
        )


def add_hygiene_cases(root: Path, split: str = "train") -> dict:
    """Three more listed images in an Open Images folder (write_openimages first): a truncated
    JPEG, a JPEG stored sideways with EXIF orientation 6 (its box in the stored frame), and a byte
    copy of the first image under another ImageID."""
    images = root / split
    csv_name = (
        "oidv6-train-annotations-bbox.csv"
        if split == "train"
        else "validation-annotations-bbox.csv"
    )
    corrupt, rotated, duplicate = image_id(7001), image_id(7002), image_id(7003)
    whole = (images / f"{image_id(1)}.jpg").read_bytes()
    (images / f"{corrupt}.jpg").write_bytes(whole[: len(whole) // 2])
    (images / f"{duplicate}.jpg").write_bytes((images / f"{image_id(0)}.jpg").read_bytes())
    stored = np.zeros((48, 80, 3), np.uint8)  # stored 80 wide, 48 high; shown upright 48 x 80
    box = (0.1, 0.2, 0.4, 0.6)  # x1, y1, x2, y2 normalised, stored frame
    stored[int(0.2 * 48) : int(0.6 * 48), int(0.1 * 80) : int(0.4 * 80)] = (255, 0, 0)
    exif = Image.Exif()
    exif[0x0112] = 6
    Image.fromarray(stored).save(images / f"{rotated}.jpg", quality=95, exif=exif)
    xclick = split == "train"
    with open(root / csv_name, "a", newline="") as f:
        writer = csv.writer(f)
        for iid, (x1, y1, x2, y2) in (
            (corrupt, (0.1, 0.1, 0.5, 0.5)),
            (rotated, box),
            (duplicate, (0.2, 0.2, 0.6, 0.6)),
        ):
            row = [iid, "xclick", "/m/0k4j", "1", str(x1), str(x2), str(y1), str(y2),
                   "0", "0", "0", "0", "0"]  # fmt: skip
            writer.writerow(row + (["-1"] * 8 if xclick else []))
    return {"corrupt": f"{corrupt}.jpg", "rotated": rotated, "duplicate": f"{duplicate}.jpg",
            "duplicate_of": f"{image_id(0)}.jpg", "rotated_box": box}  # fmt: skip
