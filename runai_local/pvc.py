"""PVCs on the local cluster: `--existing-pvc claimname=C,path=P` -> a local directory.

Rewrite rule: every mount path P is replaced by the claim's local directory wherever P appears
as a whole path (alone, or followed by ``/``) in the command, the args, the working dir and the
env values -- also after ``=``/``:``/``,`` as in ``--out=/data/x`` or ``PYTHONPATH=/data/a:/data/b``.
Longer mount paths win over shorter ones (``/data/ckpt`` before ``/data``). ``/database`` is not
``/data``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from runai_local.config import LocalConfig
from runai_local.errors import LocalError

# What the shipped profiles expect on claim project-001 (mounted at /data): the entry scripts in
# scripts/vision/shell/ and the trainer package importable from the working dir
# scripts/vision/train. Seeded as symlinks into this checkout (one per script, so the scripts'
# own directory is a real one on the PVC), only where nothing exists yet: the PVC follows code
# edits and never loses user files.
_PROJECT_ROOT = Path(__file__).resolve().parents[1]


def _seeds(claim: str) -> list[tuple[str, Path]]:
    if claim != "project-001":
        return []
    scripts = _PROJECT_ROOT / "scripts"
    seeds = [
        (f"scripts/vision/shell/{script.name}", script)
        for script in sorted(scripts.glob("*"))
        if script.is_file()
    ]
    seeds.append(("scripts/vision/train/trainer", _PROJECT_ROOT / "trainer"))
    return seeds


_CLAIM_RE = re.compile(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")


class PvcError(LocalError, ValueError):
    """A bad `--existing-pvc` value."""


@dataclass(frozen=True)
class Mount:
    claim: str
    path: str  # the mount path inside the "container", e.g. /data
    local: Path  # the directory on this machine
    readonly: bool = False


def parse_existing_pvc(value: str, config: LocalConfig) -> Mount:
    """Parse `claimname=C,path=P[,readonly]` into a Mount (PvcError with the fix on bad input)."""
    fmt = "expected claimname=CLAIM_NAME,path=PATH"
    fields: dict[str, str] = {}
    readonly = False
    for part in value.split(","):
        key, eq, val = part.partition("=")
        key = key.strip()
        if key in ("readonly", "ro") and not eq:
            readonly = True
            continue
        if not eq or key not in ("claimname", "path", "readonly"):
            raise PvcError(f'invalid --existing-pvc value "{value}": unknown part "{part}"; {fmt}')
        fields[key] = val.strip()
    claim = fields.get("claimname", "")
    path = fields.get("path", "")
    if not claim:
        raise PvcError(f'invalid --existing-pvc value "{value}": claimname is missing; {fmt}')
    if not _CLAIM_RE.match(claim):
        raise PvcError(
            f'invalid --existing-pvc value "{value}": claim name "{claim}" is not a '
            f"lowercase DNS-1123 name"
        )
    if not path:
        raise PvcError(f'invalid --existing-pvc value "{value}": path is missing; {fmt}')
    if not path.startswith("/") or path.rstrip("/") == "":
        raise PvcError(
            f'invalid --existing-pvc value "{value}": path "{path}" must be an absolute '
            f"directory other than /"
        )
    if fields.get("readonly", "").lower() == "true":
        readonly = True
    local = config.pvcs.get(claim, config.pvc_root / claim)
    return Mount(claim=claim, path=path.rstrip("/"), local=local, readonly=readonly)


def prepare(mount: Mount) -> list[str]:
    """Create the claim's directory and seed it; returns what was seeded (relative paths)."""
    mount.local.mkdir(parents=True, exist_ok=True)
    seeded = []
    for rel, target in _seeds(mount.claim):
        dest = mount.local / rel
        if dest.exists() or dest.is_symlink() or not target.exists():
            continue
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.symlink_to(target, target_is_directory=target.is_dir())
        seeded.append(rel)
    return seeded


def rewrite(text: str, mounts: list[Mount]) -> str:
    """Apply the rewrite rule to one string (one pass, so a replacement is never rewritten)."""
    if not mounts:
        return text
    ordered = sorted(mounts, key=lambda m: len(m.path), reverse=True)
    local_of = {m.path: str(m.local) for m in ordered}
    # A whole path: not glued to a preceding path/word char, ends at "/" or a separator.
    alternatives = "|".join(re.escape(m.path) for m in ordered)
    pattern = re.compile(r"(?<![\w./~-])(" + alternatives + r")(?=$|[/:,;\s\"'=])")
    return pattern.sub(lambda m: local_of[m.group(1)], text)


def rewrite_all(words: list[str], mounts: list[Mount]) -> list[str]:
    return [rewrite(word, mounts) for word in words]
