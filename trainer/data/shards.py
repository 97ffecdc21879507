"""The shard format: tar files of ``KEY.jpg`` + ``KEY.json`` pairs, and the manifest that lists them.

A shard is an uncompressed POSIX tar (read sequentially, one request for many samples); member
order is ``KEY.jpg`` then ``KEY.json`` for every sample. Headers carry no time or owner, so the
same inputs always give byte-identical shards and checksums. ``manifest.json`` beside the shards
binds a run to one corpus view: format version, source files and their checksums, class table,
filter policy and, per shard, file, samples, boxes, bytes and sha256.

Checks: loading a manifest rejects a shard whose file is missing or whose size differs; reading a
shard from its start verifies its sha256 and sample count at its end (and the cache verifies a
shard when copying it in); ``python -m trainer verify --manifest M`` checks every shard in full.
Every rejection names the shard.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import tarfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, BinaryIO, TypedDict

from trainer.errors import ConfigError, TrainerError

FORMAT = "trainer-shards"
FORMAT_VERSION = 1
MANIFEST = "manifest.json"
READ_CHUNK = 1 << 20


class ShardEntry(TypedDict):
    """A shard as the manifest lists it (``shards``); ShardInfo adds where its ids start."""

    file: str
    samples: int
    boxes: int
    bytes: int
    sha256: str


@dataclass(frozen=True)
class ShardInfo:
    file: str  # relative to the manifest's directory
    samples: int
    boxes: int
    bytes: int
    sha256: str
    first_id: int  # global sample id of the shard's first sample (ids are 0..N-1 in manifest order)


@dataclass(frozen=True)
class Manifest:
    path: str
    directory: str
    data: dict[str, Any]
    shards: list[ShardInfo]
    sha256: str  # of the manifest file itself

    @property
    def version(self) -> str:
        return str(self.data["version"])

    @property
    def class_names(self) -> list[str]:
        return [c["name"] for c in self.data["classes"]]

    @property
    def num_samples(self) -> int:
        return sum(s.samples for s in self.shards)

    def shard_path(self, shard: ShardInfo) -> str:
        return os.path.join(self.directory, shard.file)

    def describe(self) -> dict[str, Any]:
        """What run.json and checkpoints record about the corpus view."""
        return {
            "manifest": os.path.abspath(self.path),
            "manifest_version": self.version,
            "manifest_sha256": self.sha256,
            "format_version": self.data["format_version"],
            "dataset": self.data.get("dataset"),
            "split": self.data.get("split"),
            "shards": len(self.shards),
            "samples": self.num_samples,
            "filter_policy": self.data.get("filter_policy"),
        }


def content_version(classes: Sequence[Mapping[str, object]], shards: Sequence[ShardEntry]) -> str:
    """A short id of the corpus view: classes and every shard's name, count and checksum."""
    h = hashlib.sha256()
    h.update(json.dumps(classes, sort_keys=True).encode())
    for s in shards:
        h.update(f"{s['file']}\0{s['samples']}\0{s['sha256']}\n".encode())
    return h.hexdigest()[:16]


def load_manifest(path: str, check_files: bool = True) -> Manifest:
    """Parse and check a manifest; with ``check_files`` every shard must exist at its size."""
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as exc:
        raise ConfigError(
            f"{path}: cannot read manifest ({exc.strerror}); "
            "hint: create one with `python -m trainer prepare`"
        ) from None
    try:
        data = json.loads(raw)
        if data.get("format") != FORMAT:
            raise ValueError(f"format is {data.get('format')!r}, expected {FORMAT!r}")
        if data.get("format_version") != FORMAT_VERSION:
            raise ValueError(
                f"format_version {data.get('format_version')!r}, this trainer reads {FORMAT_VERSION}"
            )
        shards = []
        first = 0
        for n, s in enumerate(data["shards"]):
            info = ShardInfo(
                str(s["file"]), int(s["samples"]), int(s["boxes"]), int(s["bytes"]),
                str(s["sha256"]), first,
            )  # fmt: skip
            if info.samples < 0 or info.bytes < 0 or len(info.sha256) != 64:
                raise ValueError(f"shards[{n}] ({info.file}) has a bad count, size or sha256")
            shards.append(info)
            first += info.samples
        if not all(isinstance(c["name"], str) for c in data["classes"]):
            raise ValueError("a class without a name in the class table")
        if not isinstance(data["version"], str):
            raise ValueError("no version string")
    except (ValueError, KeyError, TypeError) as exc:
        raise ConfigError(
            f"{path}: not a shard manifest ({exc}); hint: re-run `python -m trainer prepare`"
        ) from None
    manifest = Manifest(
        path, os.path.dirname(os.path.abspath(path)), data, shards, hashlib.sha256(raw).hexdigest()
    )
    if check_files:
        for shard in shards:
            shard_path = manifest.shard_path(shard)
            try:
                size = os.path.getsize(shard_path)
            except OSError:
                raise ConfigError(
                    f"{shard_path}: shard listed in {path} is missing; "
                    "hint: copy the whole prepared directory, or re-run prepare"
                ) from None
            if size != shard.bytes:
                raise ConfigError(
                    f"{shard_path}: {size} bytes, manifest {path} says {shard.bytes}; the shard "
                    "is incomplete or from another preparation (hint: re-run prepare)"
                )
    return manifest


class ShardMismatch(TrainerError):
    """A shard's content disagrees with its manifest entry (exit 1: the data is bad, not a flag)."""


def shard_mismatch(shard: ShardInfo, path: str, what: str) -> ShardMismatch:
    return ShardMismatch(
        f"{path}: {what}; manifest entry {shard.file} rejected "
        "(hint: re-copy the shard or re-run `python -m trainer prepare`)"
    )


class HashingReader:
    """A read-only file wrapper that hashes and counts every byte read through it."""

    def __init__(self, raw: BinaryIO) -> None:
        self.raw = raw
        self.hash = hashlib.sha256()
        self.count = 0

    def read(self, size: int = -1) -> bytes:
        data = self.raw.read(size)
        self.hash.update(data)
        self.count += len(data)
        return data

    def drain(self) -> None:
        while self.read(READ_CHUNK):
            pass


@dataclass
class RawSample:
    """One sample as stored: JPEG bytes and the annotation JSON bytes, plus where it sits."""

    sample_id: int
    key: str
    jpeg: bytes
    meta: bytes

    @property
    def size(self) -> int:
        return len(self.jpeg) + len(self.meta)


BLOCK = 512


def _members(
    handle: Any, path: str, skip: Callable[[str], bool] | None = None
) -> Iterator[tuple[str, bytes | None]]:
    """(name, data) of each regular file in a tar written by ``prepare`` (USTAR headers), read
    with a few large reads per member instead of tarfile's small stream buffer. ``skip(name)``
    true: the member's data is seeked over and None is given instead."""
    while True:
        header = handle.read(BLOCK)
        if len(header) < BLOCK:
            raise TrainerError(f"{path}: tar ends without its end-of-archive block (truncated?)")
        if header == bytes(BLOCK):
            return
        try:
            info = tarfile.TarInfo.frombuf(header, "utf-8", "surrogateescape")
        except tarfile.HeaderError as exc:
            raise TrainerError(f"{path}: bad tar header ({exc})") from None
        if info.type not in (tarfile.REGTYPE, tarfile.AREGTYPE):
            raise TrainerError(f"{path}: unexpected tar member {info.name!r} (not a regular file)")
        padded = info.size + (-info.size) % BLOCK
        if skip is not None and skip(info.name):
            handle.seek(padded, os.SEEK_CUR)
            yield info.name, None
            continue
        data = handle.read(info.size)
        if len(data) < info.size or len(handle.read(padded - info.size)) < padded - info.size:
            raise TrainerError(f"{path}: member {info.name!r} is cut short (truncated tar)")
        yield info.name, data


def _pairs(
    members: Iterator[tuple[str, bytes | None]], path: str
) -> Iterator[tuple[str, Any, Any]]:
    """(key, jpeg, json) in member order; anything else in the tar is a format error."""
    pending: tuple[str, Any] | None = None
    for name, data in members:
        if name.endswith(".jpg") and pending is None:
            pending = (name[: -len(".jpg")], data)
        elif name.endswith(".json") and pending is not None and name[:-5] == pending[0]:
            yield pending[0], pending[1], data
            pending = None
        else:
            raise TrainerError(
                f"{path}: member {name!r} out of order (expected KEY.jpg then KEY.json)"
            )
    if pending is not None:
        raise TrainerError(f"{path}: {pending[0]}.jpg has no {pending[0]}.json")


def read_shard(
    handle: BinaryIO, shard: ShardInfo, path: str, verify: bool = True
) -> Iterator[RawSample]:
    """Every sample of a shard read sequentially from its start. At the end the sample count is
    checked against the manifest, and with ``verify`` the sha256 of the whole file (a shard
    served by the cache was verified when it was copied in)."""
    reader: Any = HashingReader(handle) if verify else handle
    count = 0
    for key, jpeg, meta in _pairs(_members(reader, path), path):
        if count >= shard.samples:
            raise shard_mismatch(shard, path, f"more than {shard.samples} samples")
        yield RawSample(shard.first_id + count, key, jpeg, meta)
        count += 1
    if count != shard.samples:
        raise shard_mismatch(shard, path, f"{count} samples, manifest says {shard.samples}")
    if verify:
        reader.drain()
        if reader.hash.hexdigest() != shard.sha256:
            raise shard_mismatch(
                shard, path, f"sha256 {reader.hash.hexdigest()[:16]}… differs from the manifest's"
            )


def read_shard_at(
    handle: BinaryIO, shard: ShardInfo, path: str, ordinals: set[int], start: int
) -> Iterator[RawSample]:
    """Random access (resume): the samples whose ordinal within the shard is in ``ordinals`` or
    at least ``start``. The data of every other sample is skipped by seeking, so samples before
    the position are never read; the checksum is not verified on this path."""
    state = {"n": 0}

    def skip(name: str) -> bool:
        wanted = state["n"] in ordinals or state["n"] >= start
        if name.endswith(".json"):
            state["n"] += 1
        return not wanted

    count = 0
    for key, jpeg, meta in _pairs(_members(handle, path, skip), path):
        if jpeg is not None:
            yield RawSample(shard.first_id + count, key, jpeg, meta)
        count += 1
    if count != shard.samples:
        raise shard_mismatch(shard, path, f"{count} samples, manifest says {shard.samples}")


def verify_manifest(manifest: Manifest) -> tuple[int, int]:
    """Read every shard in full: counts, annotations and checksums. Returns (samples, bytes)."""
    samples = total = 0
    for shard in manifest.shards:
        path = manifest.shard_path(shard)
        boxes = 0
        with open(path, "rb") as f:
            for sample in read_shard(f, shard, path):
                try:
                    boxes += len(json.loads(sample.meta)["boxes"])
                except (ValueError, KeyError, TypeError):
                    raise shard_mismatch(
                        shard, path, f"{sample.key}.json is not a sample annotation"
                    ) from None
                samples += 1
        if boxes != shard.boxes:
            raise shard_mismatch(shard, path, f"{boxes} boxes, manifest says {shard.boxes}")
        total += shard.bytes
    return samples, total


def tar_member(name: str, data: bytes) -> tuple[tarfile.TarInfo, io.BytesIO]:
    """A header with no time, owner or permissions beyond 0644: reproducible shards."""
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mtime = 0
    info.mode = 0o644
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    return info, io.BytesIO(data)
