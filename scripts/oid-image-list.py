#!/usr/bin/env python3
"""Write the image list the official Open Images downloader takes, from a box annotation CSV.

    python3 scripts/oid-image-list.py oidv6-train-annotations-bbox.csv train > train-list.txt
    python3 downloader.py train-list.txt --download_folder=/data/datasets/openimages/train

One `<split>/<ImageID>` line per image that has at least one box (optionally only boxes of the
given MIDs), in first-seen order. Standard library only, so it runs in any prep pod.
"""

from __future__ import annotations

import argparse
import csv
import sys

SPLITS = ("train", "validation", "test", "challenge2018")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("annotations", help="an Open Images *-annotations-bbox.csv file")
    parser.add_argument("split", choices=SPLITS, help="the split folder the downloader reads from")
    parser.add_argument(
        "--mids", default="", help="comma list of LabelName MIDs to keep (default all)"
    )
    args = parser.parse_args(argv)
    keep = {m.strip() for m in args.mids.split(",") if m.strip()}
    try:
        with open(args.annotations, newline="", encoding="utf-8") as f:
            reader = csv.reader(f)
            header = next(reader, [])
            if "ImageID" not in header or "LabelName" not in header:
                print(
                    f"oid-image-list: {args.annotations}:1: expected ImageID and LabelName columns",
                    file=sys.stderr,
                )
                return 2
            c_id, c_label = header.index("ImageID"), header.index("LabelName")
            seen: set[str] = set()
            for row in reader:
                if len(row) <= max(c_id, c_label) or (keep and row[c_label] not in keep):
                    continue
                if row[c_id] not in seen:
                    seen.add(row[c_id])
                    sys.stdout.write(f"{args.split}/{row[c_id]}\n")
    except OSError as exc:
        print(f"oid-image-list: {args.annotations}: {exc.strerror}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
