"""A pod's own, small /dev/shm: the local cluster's equivalent of a container without
`--large-shm` (whose /dev/shm is a 64 MiB tmpfs), where DataLoader workers die with a bus error.

`python -m runai_local.shm SIZE -- CMD ARGS…` enters a new user and mount namespace (no
privileges needed where the kernel allows unprivileged user namespaces), maps the caller's own
uid and gid, mounts a tmpfs of SIZE on /dev/shm that only this pod sees, and execs CMD (the same
pid: the supervisor's process checks and signals are unchanged). The rest of the machine (files,
network, processes) stays shared, as it is for every local pod.

Used only when local.yaml sets `shm_size` (or RUNAI_LOCAL_SHM_SIZE) and the job has no
`--large-shm`. Where namespaces are refused, it says so on the pod's log and exits 126.
"""

from __future__ import annotations

import ctypes
import os
import sys

CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
MS_NOSUID, MS_NODEV, MS_REC, MS_PRIVATE = 2, 4, 16384, 1 << 18


def _fail(message: str) -> None:
    print(f"runai-local: {message}", file=sys.stderr, flush=True)
    raise SystemExit(126)


def _write(path: str, text: str) -> None:
    with open(path, "w", encoding="ascii") as fh:
        fh.write(text)


def enter(size: str) -> None:
    """This process, from now on: its own mount namespace with /dev/shm a tmpfs of `size`."""
    uid, gid = os.getuid(), os.getgid()
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0:
        err = ctypes.get_errno()
        _fail(f"cannot give the pod its own /dev/shm (unshare: {os.strerror(err)}); unset shm_size in local.yaml")  # fmt: skip
    _write("/proc/self/setgroups", "deny")
    _write("/proc/self/uid_map", f"{uid} {uid} 1")
    _write("/proc/self/gid_map", f"{gid} {gid} 1")
    if libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None) != 0:
        _fail(f"cannot make the pod's mounts private: {os.strerror(ctypes.get_errno())}")
    options = f"size={size},mode=1777".encode()
    if libc.mount(b"tmpfs", b"/dev/shm", b"tmpfs", MS_NOSUID | MS_NODEV, options) != 0:
        _fail(f"cannot mount a {size} /dev/shm: {os.strerror(ctypes.get_errno())}")


def main(argv: list[str]) -> None:
    if len(argv) < 3 or argv[1] != "--":
        _fail("usage: python -m runai_local.shm SIZE -- CMD [ARGS...]")
    enter(argv[0])
    command = argv[2:]
    try:
        os.execvp(command[0], command)
    except OSError as exc:
        _fail(f'failed to start container: exec: "{command[0]}": {exc.strerror or exc}')


if __name__ == "__main__":
    main(sys.argv[1:])
