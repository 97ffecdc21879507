"""NVIDIA XIDs: what each code means and whose fault it usually is, so preflight fails a node
only for what is wrong with the node.

Sources (NVIDIA):
- the XID catalogue, "Analyzing Xid Errors with the Xid Catalog",
  https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html: each code's mnemonic, its
  description and its "Resolution Bucket (Immediate Action)" (RESTART_APP, RESET_GPU,
  RESTART_BM, IGNORE, a WORKFLOW_XID_N), quoted in `action` below;
- the XID error listing, https://docs.nvidia.com/deploy/xid-errors/index.html: the possible
  causes of each code (hardware, driver, user application, system memory, bus, thermal, frame
  buffer);
- dynamic page retirement, https://docs.nvidia.com/deploy/dynamic-page-retirement/ (48, 63, 64).

Whose fault (`cause`), and what preflight does with it:
- HARDWARE: the GPU, its memory, its bus or its links. Preflight fails: cordon the node.
  63 (a row remapped or a page retired) is only a failure while the remap is still pending
  (nvidia-smi says so, or could not be read): once the GPU was reset the spare row is in use.
  93 (the InfoROM's wear limit passed, non-fatal) only warns.
- APPLICATION: what the catalogue answers with RESTART_APP and a look at the application
  (CHECK_APP/CUDA: an illegal address, a bad kernel, a killed process). Preflight warns, naming
  the process the driver logged (`pid=N, name=X`): the GPU is usually fine. A GPU that a
  fractional job shares may have logged another job's process.
- DRIVER: the driver or the GPU's firmware (GSP). Decided here: a driver XID fails like a
  hardware one when NVIDIA's immediate action is a GPU reset (46, 109, 110, 119, 120, and 154
  when it asks for a reset or a reboot), since the GPU then serves no job until an admin
  resets it, whoever's fault; otherwise (IGNORE: 37, 38, 44, 66, 67) it only warns.
A code not in this table warns, naming NVIDIA's catalogue: preflight never fails a node on a
guess.
"""

from __future__ import annotations

from dataclasses import dataclass

CATALOGUE_URL = "https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html"
HARDWARE, APPLICATION, DRIVER = "hardware", "application", "driver"


@dataclass(frozen=True)
class XidInfo:
    """One XID: its `meaning` (the catalogue's description, in lower case), whose fault it
    usually is (`cause`), whether preflight fails the node for it (`fails`) and NVIDIA's
    immediate action (`action`, as the catalogue writes it)."""

    code: int
    meaning: str
    cause: str
    fails: bool
    action: str


def _rows(cause: str, fails: bool, *rows: tuple[int, str, str]) -> dict[int, XidInfo]:
    return {code: XidInfo(code, meaning, cause, fails, action) for code, meaning, action in rows}


TABLE: dict[int, XidInfo] = {
    **_rows(
        HARDWARE,
        True,
        (48, "double-bit ECC error (uncorrectable GPU memory error)", "WORKFLOW_XID_48"),
        (54, "auxiliary power is not connected to the GPU board", "CHECK_MECHANICALS"),
        (62, "internal micro-controller halt", "RESET_GPU"),
        (
            63,
            "GPU memory row remapped or page retired (takes effect at the next reset)",
            "IGNORE",
        ),  # fmt: skip
        (64, "GPU memory row remapping or page retirement failed", "RESET_GPU"),
        (74, "NVLink error", "WORKFLOW_NVLINK_ERR"),
        (79, "GPU has fallen off the bus", "RESTART_BM"),
        (92, "high single-bit ECC error rate", "IGNORE (investigate: CONTACT_SUPPORT)"),
        (94, "contained uncorrectable memory error", "RESTART_APP"),
        (95, "uncontained uncorrectable memory error", "RESET_GPU"),
        (136, "NVLink link training failed", "RESET_GPU"),
        (140, "unrecovered ECC error", "RESET_GPU"),
        (143, "GPU initialization error", "RESET_GPU"),
    ),
    **_rows(HARDWARE, False, (93, "InfoROM wear limit passed (non-fatal)", "IGNORE")),
    **_rows(
        APPLICATION,
        False,
        (8, "GPU stopped processing (a channel idle timeout)", "RESTART_APP"),
        (11, "invalid or corrupted push buffer stream", "RESTART_APP"),
        (
            13,
            "graphics engine exception (an illegal instruction or address in a kernel)",
            "RESTART_APP",
        ),  # fmt: skip
        (25, "invalid or illegal push buffer stream", "RESTART_APP"),
        (31, "GPU memory page fault (an illegal memory access)", "RESTART_APP"),
        (32, "invalid or corrupted push buffer stream", "RESTART_APP"),
        (39, "copy engine exception", "RESTART_APP"),
        (40, "copy engine exception", "RESTART_APP"),
        (41, "copy engine exception", "RESTART_APP"),
        (
            43,
            "GPU stopped processing (the channel was reset after an application fault)",
            "IGNORE",
        ),  # fmt: skip
        (
            45,
            "preemptive cleanup of a channel (its process ended or was killed, or an earlier XID)",
            "WORKFLOW_XID_45",
        ),  # fmt: skip
        (68, "video decoder (NVDEC) exception", "RESTART_APP"),
        (69, "graphics engine class error", "RESTART_APP"),
        (80, "corrupted data sent to the GPU", "RESTART_APP"),
    ),
    **_rows(
        DRIVER,
        True,
        (46, "GPU stopped processing (a GPU timeout)", "RESET_GPU"),
        (109, "context switch timeout", "RESET_GPU"),
        (110, "security fault", "RESET_GPU"),
        (119, "GSP RPC timeout (the GPU's firmware stopped answering the driver)", "RESET_GPU"),
        (120, "GSP error (the GPU's firmware)", "RESET_GPU"),
        (
            154,
            "GPU recovery action changed (the driver's verdict on an earlier XID)",
            "XID_154",
        ),  # fmt: skip
    ),
    **_rows(
        DRIVER,
        False,
        (37, "driver firmware error", "IGNORE"),
        (38, "driver firmware error", "IGNORE"),
        (44, "graphics engine fault during a context switch", "IGNORE"),
        (66, "illegal access by the driver", "IGNORE"),
        (67, "illegal access by the driver", "IGNORE"),
    ),
}

# XID 154's line names the action the driver now asks for: `... to 0x0 (None)` asks nothing.
RECOVERY_NONE = "(None)"
PENDING_ONLY = frozenset({63})  # fails only while a remap or retirement is pending


def info(code: int) -> XidInfo | None:
    """What the table says about `code`; None for a code it does not hold."""
    return TABLE.get(code)


def verdict(row: XidInfo) -> str:
    """What preflight does with the code, in words (docs/health.md's XID table)."""
    if row.code in PENDING_ONLY:
        return "fail while nvidia-smi shows the remap pending on that GPU (or cannot be read); else warn"
    if row.code == 154:
        return "fail unless the new recovery action is `None`"
    return "fail: cordon the node" if row.fails else "warn"


def describe(code: int) -> str:
    """`79 (GPU has fallen off the bus; hardware)`, for messages."""
    row = TABLE.get(code)
    if row is None:
        return f"{code} (not in runai-tui's table: see {CATALOGUE_URL})"
    return f"{code} ({row.meaning}; {row.cause})"
