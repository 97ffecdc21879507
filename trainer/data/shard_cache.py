"""A node-local shard cache (``--cache-dir``): whole shards copied on first use, evicted LRU.

Safe when several loader workers and ranks on one node share the directory:
- a shard is copied to a temporary file in the cache directory, verified against the manifest's
  size and sha256, then renamed into place (atomic; two processes copying the same shard at once
  both rename identical bytes, and the last rename wins);
- the caller gets a handle opened before the rename (a miss) or before anything else (a hit), so
  an eviction by another process never pulls a file from under a reader (Linux keeps an unlinked
  file readable through open handles);
- eviction holds an exclusive ``flock`` on ``.lock``, evicts least-recently-used first (a hit
  refreshes the file's mtime, which is the LRU clock) and never the shard just added.

Files are named ``<sha256 prefix>-<shard file name>``, so shards of different preparations never
collide. Temporary files older than an hour (a copier killed mid-copy) are removed by eviction.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import tempfile
import time
from typing import BinaryIO

from trainer.data.shards import READ_CHUNK, ShardInfo, shard_mismatch

STALE_TMP_SECONDS = 3600


class ShardCache:
    def __init__(self, directory: str, max_bytes: int = 0) -> None:
        self.directory = directory
        self.max_bytes = max_bytes  # 0: no limit
        os.makedirs(directory, exist_ok=True)

    def cached_path(self, shard: ShardInfo) -> str:
        return os.path.join(self.directory, f"{shard.sha256[:20]}-{os.path.basename(shard.file)}")

    def open(self, source: str, shard: ShardInfo) -> tuple[BinaryIO, bool, int]:
        """(read handle, hit, bytes copied into the cache)."""
        path = self.cached_path(shard)
        handle: BinaryIO
        try:
            handle = open(path, "rb")  # noqa: SIM115 -- the caller closes it
        except FileNotFoundError:
            pass
        else:
            with contextlib.suppress(OSError):
                os.utime(path)  # the LRU clock
            return handle, True, 0
        handle = self._copy_in(source, shard, path)
        self.evict(keep=path)
        return handle, False, shard.bytes

    def _copy_in(self, source: str, shard: ShardInfo, path: str) -> BinaryIO:
        fd, tmp = tempfile.mkstemp(dir=self.directory, prefix=".tmp-")
        handle = os.fdopen(fd, "w+b")
        try:
            digest = hashlib.sha256()
            with open(source, "rb") as src:
                while chunk := src.read(READ_CHUNK):
                    digest.update(chunk)
                    handle.write(chunk)
            handle.flush()
            size = handle.tell()
            if size != shard.bytes:
                raise shard_mismatch(shard, source, f"{size} bytes, manifest says {shard.bytes}")
            if digest.hexdigest() != shard.sha256:
                raise shard_mismatch(
                    shard, source, f"sha256 {digest.hexdigest()[:16]}… differs from the manifest's"
                )
            os.replace(tmp, path)
        except BaseException:
            handle.close()
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        handle.seek(0)
        return handle

    def evict(self, keep: str | None = None) -> list[str]:
        """Remove least-recently-used shards until the cache fits ``max_bytes``; returns them."""
        removed: list[str] = []
        with open(os.path.join(self.directory, ".lock"), "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            entries = []
            now = time.time()
            for entry in os.scandir(self.directory):
                try:
                    st = entry.stat()
                except FileNotFoundError:
                    continue
                if entry.name.startswith(".tmp-"):
                    if now - st.st_mtime > STALE_TMP_SECONDS:
                        with contextlib.suppress(OSError):
                            os.unlink(entry.path)
                    continue
                if entry.name.startswith(".") or not entry.is_file():
                    continue
                entries.append((st.st_mtime, entry.path, st.st_size))
            if not self.max_bytes:
                return removed
            total = sum(size for _, _, size in entries)
            for _, path, size in sorted(entries):
                if total <= self.max_bytes:
                    break
                if path == keep:
                    continue
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(path)
                    removed.append(path)
                total -= size
        return removed
