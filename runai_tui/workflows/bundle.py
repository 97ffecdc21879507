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

Secrets never enter it (runai_tui/util/redaction.py, the one redaction): the secrets are learned
from describe's document (the submit argv, its env flags, the submission record) and from every
JSON member (run.json's env); then each JSON member is parsed, redacted value by value and
written again (a JSON Lines member line by line), so it stays JSON, and each log is redacted as
free text: known values as whole tokens (6 characters or more; a shorter one is replaced only
where it lives, as `<redacted:short>`), plus what detect-secrets finds (private key blocks whole,
cloud and Git tokens, JWTs, URLs with a password). A Flight Recorder dump is binary (a pickle)
and cannot be edited: one that holds a secret is left out, and the manifest says so. The
manifest counts the replacements by kind (`redactions.by_kind`) and names the short ones.
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
from runai_tui.shapes.errors import RunaiError
from runai_tui.shapes.models import JobDetail, Phase
from runai_tui.trainer_flags import records
from runai_tui.util.redaction import Redactor
from runai_tui.workflows.diagnose_job import diagnose_job
from runai_tui.workflows.run_sources import METRICS_FILE, RUN_FILE, output_dir

if TYPE_CHECKING:
    from runai_tui.runai.client import RunaiClient

FR_DIR = records.DUMP_DIR


@dataclass
class Bundle:
    """The members (archive name -> bytes), what could not be gathered and why, and the
    redaction that learns the job's secrets and replaces them."""

    job: str
    members: dict[str, bytes] = field(default_factory=dict)
    missing: list[dict[str, str]] = field(default_factory=list)
    redactor: Redactor = field(default_factory=Redactor)

    def add_text(self, name: str, text: str) -> None:
        self.members[name] = text.encode("utf-8", errors="replace")

    def add_json(self, name: str, data: object) -> None:
        self.add_text(name, json.dumps(data, indent=2, default=str) + "\n")

    def lack(self, what: str, why: str) -> None:
        self.missing.append({"what": what, "why": why})

    @property
    def secrets(self) -> int:
        """How many distinct secrets the job holds (values, and names of short ones)."""
        return len(self.redactor.known) + len(self.redactor.short)

    def redacted(self) -> dict[str, bytes]:
        """Every member with the secrets replaced (a JSON member parsed and written again), and
        the manifest."""
        for name, data in self.members.items():
            for doc in _documents(name, data):
                self.redactor.learn(doc)
        out: dict[str, bytes] = {}
        for name, data in self.members.items():
            shown = self._redact(name, data)
            if shown is not None:
                out[name] = shown
        manifest = {
            "job": self.job,
            "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "members": sorted(out),
            "missing": self.missing,
            "secrets_redacted": self.secrets,
            "redactions": self.redactor.summary(),
        }
        out["manifest.json"] = (json.dumps(manifest, indent=2) + "\n").encode()
        return out

    def _redact(self, name: str, data: bytes) -> bytes | None:
        """One member redacted as what it is; None for a binary one that holds a secret (left
        out, and said in `missing`)."""
        if f"/{FR_DIR}/" in f"/{name}":
            return self._binary(name, data)
        text = data.decode("utf-8", errors="replace")
        if name.endswith(".json"):
            try:
                doc = json.loads(text)
            except ValueError:
                return self.redactor.text(text).encode()  # not JSON when gathered: text
            return (json.dumps(self.redactor.document(doc), indent=2) + "\n").encode()
        if name.endswith(".jsonl"):
            return "".join(self._json_line(line) for line in text.splitlines(True)).encode()
        return self.redactor.text(text).encode()

    def _json_line(self, line: str) -> str:
        try:
            doc = json.loads(line)
        except ValueError:
            return self.redactor.text(line)
        return json.dumps(self.redactor.document(doc)) + "\n"

    def _binary(self, name: str, data: bytes) -> bytes | None:
        text, counted = data.decode("latin-1"), self.redactor.counts.copy()
        clean = self.redactor.text(text) == text
        self.redactor.counts = counted  # a dump is kept whole or left out: nothing replaced
        if clean:
            return data
        self.lack(name, "it holds a secret and is binary (a pickle cannot be edited): left out")
        return None


def _documents(name: str, data: bytes) -> list[object]:
    """The JSON documents of a member, to learn secrets from (none for a log or a dump)."""
    if f"/{FR_DIR}/" in f"/{name}" or not name.endswith((".json", ".jsonl")):
        return []
    text = data.decode("utf-8", errors="replace")
    docs: list[object] = []
    for line in text.splitlines() if name.endswith(".jsonl") else [text]:
        with contextlib.suppress(ValueError):
            docs.append(json.loads(line))
    return docs


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
    bundle = Bundle(job)
    bundle.redactor.learn(dict(detail.raw))
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
