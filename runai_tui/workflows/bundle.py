"""The post-mortem bundle (`runai-tui bundle JOB -o FILE.tar.gz`): what a person attaches to a
ticket about a job, in one archive.

- `describe.json`: describe's raw document; `events.json`: its events;
- `logs/POD.log` for every pod, and `logs/POD.previous.log`, the container before its last
  restart, where the cluster keeps one;
- `diagnosis.json`: `diagnose JOB --json`, remedies included;
- `submission.json`: the submission record (runai_tui/profiles/submission_record.py);
- `run/run.json`, `run/metrics.jsonl` and `run/flight-recorder/rank-N`: the trainer's output
  directory. Local pods run on this machine, so it is a local path; on a cluster it is read
  through a running pod of the job (`cat`, `base64` for the dumps), and an ended job's is out of
  reach (the PVC): the manifest says so;
- `manifest.json`: the job, when, every member, what is missing and why, how many secrets.

Secrets never enter it: every value the submission record would redact (`secret_values`: an env
variable whose name says secret holding the secret itself), wherever describe shows one, is
replaced by `<redacted>` in every member, logs included.
"""

from __future__ import annotations

import base64
import contextlib
import io
import json
import os
import tarfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from runai_tui.knowledge.records.flight_recorder import rank_files
from runai_tui.knowledge.remedies import attach_for_job
from runai_tui.knowledge.submitted import read_submission
from runai_tui.profiles import submission_record
from runai_tui.shapes.errors import RunaiError
from runai_tui.shapes.models import JobDetail, Phase
from runai_tui.trainer_flags import records
from runai_tui.workflows.diagnose_job import diagnose_job
from runai_tui.workflows.run_sources import METRICS_FILE, RUN_FILE, output_dir

if TYPE_CHECKING:
    from runai_tui.runai.client import RunaiClient

FR_DIR = records.DUMP_DIR


@dataclass
class Bundle:
    """The members (archive name -> bytes), what could not be gathered and why, and the secret
    values to redact."""

    job: str
    members: dict[str, bytes] = field(default_factory=dict)
    missing: list[dict[str, str]] = field(default_factory=list)
    secrets: set[str] = field(default_factory=set)

    def add_text(self, name: str, text: str) -> None:
        self.members[name] = text.encode("utf-8", errors="replace")

    def add_json(self, name: str, data: object) -> None:
        self.add_text(name, json.dumps(data, indent=2, default=str) + "\n")

    def lack(self, what: str, why: str) -> None:
        self.missing.append({"what": what, "why": why})

    def redacted(self) -> dict[str, bytes]:
        """Every member with the secrets replaced, and the manifest."""
        secrets = sorted((s.encode() for s in self.secrets if s), key=len, reverse=True)
        out: dict[str, bytes] = {}
        for name, data in self.members.items():
            for secret in secrets:
                data = data.replace(secret, submission_record.REDACTED.encode())
            out[name] = data
        manifest = {
            "job": self.job,
            "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "members": sorted(out),
            "missing": self.missing,
            "secrets_redacted": len(self.secrets),
        }
        out["manifest.json"] = (json.dumps(manifest, indent=2) + "\n").encode()
        return out


async def _logs(client: RunaiClient, bundle: Bundle, detail: JobDetail) -> None:
    for pod in detail.pods:
        for previous, name in ((False, f"logs/{pod.name}.log"),
                               (True, f"logs/{pod.name}.previous.log")):  # fmt: skip
            try:
                async with contextlib.aclosing(
                    client.stream_logs(bundle.job, pod=pod.name, follow=False, previous=previous)
                ) as lines:
                    bundle.add_text(name, "".join([f"{line}\n" async for line in lines]))
            except RunaiError as exc:
                if not previous:
                    bundle.lack(name, exc.message)
                # a pod never restarted has no previous container: nothing is missing


def _local_run(bundle: Bundle, where: str) -> None:
    root = Path(where)
    for name in (RUN_FILE, METRICS_FILE):
        try:
            bundle.members[f"run/{name}"] = (root / name).read_bytes()
        except OSError as exc:
            bundle.lack(f"run/{name}", f"{root / name}: {exc.strerror or exc}")
    try:
        names = os.listdir(root / FR_DIR)
    except OSError:
        return  # no rank dumped: a healthy run never writes the directory
    for rank, name in sorted(rank_files(names).items()):
        with contextlib.suppress(OSError):
            bundle.members[f"run/{FR_DIR}/rank-{rank}"] = (root / FR_DIR / name).read_bytes()


async def _remote_run(client: RunaiClient, bundle: Bundle, detail: JobDetail, where: str) -> None:
    running = [p.name for p in detail.pods if p.phase is Phase.RUNNING]
    if not running:
        bundle.lack("run/", f"{where} is on the cluster's PVC and no pod of the job runs to "
                    "read it through: copy it from the PVC")  # fmt: skip
        return
    pod = running[0]
    for name in (RUN_FILE, METRICS_FILE):
        try:
            text = await client.aexec_output(bundle.job, pod, ["cat", f"{where}/{name}"])
            bundle.add_text(f"run/{name}", text)
        except RunaiError as exc:
            bundle.lack(f"run/{name}", f"cat in {pod}: {exc.message}")
    try:
        listing = await client.aexec_output(bundle.job, pod, ["ls", "-1", f"{where}/{FR_DIR}"])
    except RunaiError:
        return
    for rank, name in sorted(rank_files(listing.split()).items()):
        path = f"{where}/{FR_DIR}/{name}"
        try:
            text = await client.aexec_output(bundle.job, pod, ["base64", path])
            bundle.members[f"run/{FR_DIR}/rank-{rank}"] = base64.b64decode("".join(text.split()))
        except (RunaiError, ValueError) as exc:
            bundle.lack(f"run/{FR_DIR}/rank-{rank}", f"{path}: {exc}")


async def gather(client: RunaiClient, job: str) -> Bundle:
    """Everything the bundle holds (RunaiError for an unknown job)."""
    detail = await client.adescribe(job)
    bundle = Bundle(job, secrets=submission_record.secret_values(dict(detail.raw)))
    bundle.add_json("describe.json", dict(detail.raw))
    bundle.add_json("events.json", [e.__dict__ for e in detail.events])
    await _logs(client, bundle, detail)
    found = read_submission(detail)
    record = found.decoded_record()
    if record is not None:
        bundle.add_json("submission.json", json.loads(record.encode()))
    else:
        bundle.lack("submission.json", "the job has no submission record (not submitted by "
                    "runai-tui, or unreadable)")  # fmt: skip
    try:
        diagnosis = await diagnose_job(client, job, detail=detail)
        attach_for_job(diagnosis.findings, detail, local=client.backend.is_local)
        bundle.add_json("diagnosis.json", diagnosis.to_dict())
    except RunaiError as exc:
        bundle.lack("diagnosis.json", exc.message)
    where = output_dir(found, found.shown_argv()[0])
    if client.backend.is_local:
        _local_run(bundle, where)
    else:
        await _remote_run(client, bundle, detail, where)
    return bundle


def write(path: Path, members: dict[str, bytes], job: str) -> None:
    """The archive, written whole to a temporary file beside `path`, then renamed over it."""
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        with tarfile.open(tmp, "w:gz") as tar:
            for name in sorted(members):
                data = members[name]
                info = tarfile.TarInfo(f"{job}/{name}")
                info.size, info.mtime, info.mode = len(data), int(time.time()), 0o644
                tar.addfile(info, io.BytesIO(data))
        os.replace(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
