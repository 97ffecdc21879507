"""Defensive parsing of `runai` (and `runai-local`) output into models, and error classification.

The JSON printed by the real CLI v2 is UNCONFIRMED and drifts between versions, so every reader
here accepts several spellings and shapes, and an unknown shape becomes a RunaiError (never a
crash). Update notices printed around the JSON are skipped.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta, timezone

from runai_tui.shapes.errors import ErrorKind, RunaiError
from runai_tui.shapes.json_types import JSON
from runai_tui.shapes.models import Event, Job, JobDetail, Pod, normalize_phase

# --- notices and JSON ------------------------------------------------------------------------

# Lines the auto-updating CLI prints before or after the real output (docs/runai-cli.md §3.4).
_NOTICE_RE = re.compile(
    r"^\s*(A new version .* is available|Updating now|"
    r"Warning: You are currently using version|.*newer version .* is available)",
    re.IGNORECASE,
)


def is_notice(line: str) -> bool:
    """True for an update notice line that is not part of the command's real output."""
    return bool(_NOTICE_RE.match(line))


def strip_notices(text: str) -> str:
    """The text without update-notice lines and surrounding blank lines."""
    return "\n".join(line for line in text.splitlines() if not is_notice(line)).strip()


def _looks_like_payload(value: object) -> bool:
    return isinstance(value, dict) or (
        isinstance(value, list) and (not value or any(isinstance(item, dict) for item in value))
    )


def extract_json(text: str) -> JSON:
    """The first JSON object or array in `text` (notices may surround it).

    Tries every `{` / `[` in order and keeps the first that decodes to an object or to a list
    holding objects (or empty); a stray `[2]` in a notice is skipped. Raises ValueError when there is none.
    """
    decoder = json.JSONDecoder()
    fallback: JSON = None
    value: JSON
    found_fallback = False
    for match in re.finditer(r"[\[{]", text):
        try:
            value, _end = decoder.raw_decode(text, match.start())
        except ValueError:
            continue
        if _looks_like_payload(value):
            return value
        if not found_fallback:
            fallback, found_fallback = value, True
    if found_fallback:
        return fallback
    raise ValueError("no JSON object or array in the output")


# --- small field readers ---------------------------------------------------------------------


def pick(data: Mapping[str, object], *keys: str) -> object:
    """The value of the first key present with a non-None value, else None."""
    for key in keys:
        value = data.get(key)
        if value is not None:
            return value
    return None


def _to_int(value: object) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return int(value)
    if isinstance(value, str):
        try:
            return int(float(value.strip()))
        except ValueError:
            return None
    return None


def _to_float(value: object) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value.strip())
        except ValueError:
            return None
    return None


_RFC3339_RE = re.compile(
    r"^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?"
    r"\s*(Z|z|[+-]\d{2}:?\d{2}|UTC)?$"
)


def parse_time(value: object) -> datetime | None:
    """RFC3339 (Go prints up to 9 fraction digits, `Z`) or epoch seconds/ms → aware datetime."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        seconds = value / 1000 if value > 1e11 else value  # milliseconds since the epoch
        try:
            return datetime.fromtimestamp(seconds, tz=timezone.utc)
        except (OverflowError, OSError, ValueError):
            return None
    if not isinstance(value, str):
        return None
    m = _RFC3339_RE.match(value.strip())
    if not m:
        return None
    year, month, day, hour, minute, second = (int(g) for g in m.groups()[:6])
    micro = int((m.group(7) or "0")[:6].ljust(6, "0"))
    zone = m.group(8)
    tz = timezone.utc
    if zone and zone[0] in "+-":
        digits = zone[1:].replace(":", "")
        offset = timedelta(hours=int(digits[:2]), minutes=int(digits[2:]))
        tz = timezone(offset if zone[0] == "+" else -offset)
    try:
        return datetime(year, month, day, hour, minute, second, micro, tzinfo=tz)
    except ValueError:
        return None


# --- list ------------------------------------------------------------------------------------

_NAME_KEYS = ("name", "workload", "Name", "workloadName", "Workload", "jobName")
_PHASE_KEYS = ("status", "phase", "Status", "actualPhase", "Phase", "state", "State")
_PROJECT_KEYS = ("project", "projectName", "Project", "project_name")
_LIST_KEYS = (
    "workloads", "items", "data", "trainings", "Workloads", "Items", "Trainings", "jobs", "results",
)  # fmt: skip
_NEXT_KEYS = ("next", "nextToken", "next_token", "NextToken")


def _gpus_of(item: Mapping[str, object]) -> float | None:
    value = _to_float(pick(item, "allocatedGPUs", "gpuAllocation", "GPU Allocation", "gpus"))
    if value is not None:
        return value
    resources = item.get("allocatedResources")
    if isinstance(resources, Mapping):
        for key in ("gpu", "gpus", "gpuDevices", "gpuDevicesRequest"):
            value = _to_float(resources.get(key))
            if value is not None:
                return value
        for key, raw in resources.items():
            if str(key).lower().startswith("gpu") and _to_float(raw) is not None:
                return _to_float(raw)
    return None


def _pods_counts(item: Mapping[str, object]) -> tuple[int | None, int | None]:
    running = _to_int(pick(item, "runningPods", "running_pods", "RunningPods"))
    requested = _to_int(pick(item, "requestedPods", "requested_pods", "RequestedPods"))
    both = pick(item, "Running/Requested Pods", "pods")  # the table column, "1/3"
    if isinstance(both, str) and "/" in both:
        left, _, right = both.partition("/")
        running = running if running is not None else _to_int(left)
        requested = requested if requested is not None else _to_int(right)
    return running, requested


def parse_job(item: Mapping[str, object]) -> Job | None:
    """One workload object → Job, or None when it has no name."""
    name = pick(item, *_NAME_KEYS)
    if not isinstance(name, str) or not name.strip():
        return None
    running, requested = _pods_counts(item)
    kind = pick(item, "type", "Type", "workloadType") or ""
    framework = pick(item, "framework", "distributedFramework", "Framework")
    return Job(
        name=name.strip(),
        phase=normalize_phase(pick(item, *_PHASE_KEYS)),
        project=str(pick(item, *_PROJECT_KEYS) or ""),
        type=" ".join(str(part) for part in (kind, framework) if part),
        running_pods=running,
        requested_pods=requested,
        gpus=_gpus_of(item),
        created=parse_time(pick(item, "createdAt", "creationTimestamp", "submittedAt", "Created")),
        raw=dict(item),
        framework=str(framework or ""),
    )


def _find_items(doc: object, depth: int = 0) -> list[object] | None:
    if isinstance(doc, list):
        return doc
    if not isinstance(doc, dict) or depth > 2:
        return None
    for key in _LIST_KEYS:
        value = doc.get(key)
        if isinstance(value, list):
            return value
        if isinstance(value, dict):  # {"data": {"workloads": [...]}}
            inner = _find_items(value, depth + 1)
            if inner is not None:
                return inner
    lists = [v for v in doc.values() if isinstance(v, list) and v and isinstance(v[0], dict)]
    if len(lists) == 1:  # one unnamed list of objects: that's it
        return lists[0]
    if not doc or (set(doc) <= set(_NEXT_KEYS) | {"total", "count"}):
        return []  # an empty page
    return None


_NO_ITEMS_RE = re.compile(
    r"\bno (workloads?|trainings?|jobs?|resources?|projects?)\b.*\bfound\b", re.I
)


def parse_list_page(text: str) -> tuple[list[Job], str]:
    """One page of `training list --json` → (jobs, next page token or "")."""
    body = strip_notices(text)
    if not body or body == "null" or _NO_ITEMS_RE.search(body):
        return [], ""
    try:
        doc = extract_json(body)
    except ValueError:
        raise RunaiError(
            ErrorKind.OTHER,
            f"could not parse the workload list: {first_meaningful_line(body)}",
            "run the same runai command by hand to see its output; report the format",
            output=text,
        ) from None
    if doc is None:
        return [], ""
    items = _find_items(doc)
    if items is None:
        keys = ", ".join(sorted(map(str, doc))[:8]) if isinstance(doc, dict) else type(doc).__name__
        raise RunaiError(
            ErrorKind.OTHER,
            f"could not parse the workload list: no list of workloads in the JSON (keys: {keys})",
            "run the same runai command by hand to see its output; report the format",
            output=text,
        )
    jobs = [job for job in (parse_job(i) for i in items if isinstance(i, Mapping)) if job]
    if items and not jobs:
        raise RunaiError(
            ErrorKind.OTHER,
            "could not parse the workload list: no item has a workload name",
            "run the same runai command by hand to see its output; report the format",
            output=text,
        )
    token = ""
    if isinstance(doc, dict):
        raw_token = pick(doc, *_NEXT_KEYS)
        if isinstance(raw_token, (str, int)) and not isinstance(raw_token, bool):
            token = str(raw_token).strip()
    return jobs, token


# --- describe --------------------------------------------------------------------------------

# Nested sections where a REST-like describe keeps the workload's own fields.
_SECTION_KEYS = ("general", "General", "workload", "Workload", "metadata", "data", "spec")


def _find_list(doc: Mapping[str, object], *keys: str) -> list[object]:
    for key in keys:
        value = doc.get(key)
        if isinstance(value, list):
            return value
        if isinstance(value, dict):
            inner = pick(value, "items", "pods", "events", "data", *keys)
            if isinstance(inner, list):
                return inner
    return []


def _role_of(pod_name: str, raw_role: object) -> str:
    if isinstance(raw_role, str) and raw_role:
        return raw_role.lower()
    if re.search(r"-master-\d+$", pod_name):
        return "master"
    if re.search(r"-worker-\d+$", pod_name):
        return "worker"
    return ""


def parse_pod(item: Mapping[str, object]) -> Pod | None:
    name = pick(item, "name", "podName", "Name", "pod")
    if not isinstance(name, str) or not name:
        return None
    return Pod(
        name=name,
        phase=normalize_phase(pick(item, "phase", "status", "k8sPhase", "Status", "Phase")),
        node=str(pick(item, "nodeName", "node", "Node", "NodeName") or ""),
        gpus=_to_float(pick(item, "gpus", "allocatedGPUs", "gpu", "GPUs")) or 0.0,
        role=_role_of(name, pick(item, "role", "Role")),
        message=str(pick(item, "message", "Message", "reason", "Reason") or ""),
    )


def parse_event(item: Mapping[str, object]) -> Event:
    return Event(
        time=str(
            pick(item, "createdAt", "time", "timestamp", "lastTimestamp", "eventTime", "Time") or ""
        ),
        type=str(pick(item, "type", "Type", "eventType") or ""),
        reason=str(pick(item, "reason", "Reason") or ""),
        message=str(pick(item, "message", "Message") or ""),
    )


def parse_describe(text: str) -> JobDetail:
    """`describe NAME -o json` output (local-cluster or REST-like shape) → JobDetail."""
    body = strip_notices(text)
    try:
        doc = extract_json(body)
    except ValueError:
        doc = None
    if isinstance(doc, list) and len(doc) == 1:
        doc = doc[0]
    if not isinstance(doc, dict):
        raise RunaiError(
            ErrorKind.OTHER,
            f"could not parse the workload description: {first_meaningful_line(body)}",
            "run the same runai command by hand to see its output; report the format",
            output=text,
        )
    # The job's own fields: at the top (local shape) or in a section (REST-like shape).
    merged: dict[str, object] = {}
    for key in reversed(_SECTION_KEYS):
        section = doc.get(key)
        if isinstance(section, dict):
            merged.update(section)
    merged.update({k: v for k, v in doc.items() if not isinstance(v, (dict, list))})
    for key in ("allocatedResources",):
        if isinstance(doc.get(key), dict):
            merged[key] = doc[key]
    job = parse_job(merged)
    if job is None:
        raise RunaiError(
            ErrorKind.OTHER,
            "could not parse the workload description: it has no workload name",
            "run the same runai command by hand to see its output; report the format",
            output=text,
        )
    job.raw = doc
    pods = [
        pod
        for pod in (
            parse_pod(p)
            for p in _find_list(doc, "pods", "Pods", "podList")
            if isinstance(p, Mapping)
        )
        if pod is not None
    ]
    events = [
        parse_event(e)
        for e in _find_list(doc, "events", "Events", "eventList")
        if isinstance(e, Mapping)
    ]
    resources = pick(doc, "resources", "Resources", "compute", "Compute")
    notes = doc.get("notes")
    return JobDetail(
        job=job,
        pods=pods,
        events=events,
        resources=dict(resources) if isinstance(resources, dict) else {},
        notes=[str(n) for n in notes] if isinstance(notes, list) else [],
        raw=doc,
    )


# --- projects --------------------------------------------------------------------------------


def parse_project_list(text: str) -> list[str]:
    """Project names from `project list --json`, in order, without duplicates. Its JSON shape is
    UNCONFIRMED (docs/runai-cli.md §3.2), so a list of names or of objects (`name`,
    `projectName`, `Name`), bare or under `projects`/`items`/`data`/`entries`, is accepted."""
    body = strip_notices(text)
    if not body or body == "null" or _NO_ITEMS_RE.search(body):
        return []
    try:
        doc = extract_json(body)
    except ValueError:
        raise RunaiError(
            ErrorKind.OTHER,
            f"could not parse the project list: {first_meaningful_line(body)}",
            "run `runai project list --json` by hand to see its output; report the format",
            output=text,
        ) from None
    entries: object = doc
    if isinstance(doc, Mapping):
        entries = pick(doc, "projects", "items", "data", "entries", "Projects") or []
    names: list[str] = []
    for item in entries if isinstance(entries, list) else []:
        name = item if isinstance(item, str) else None
        if isinstance(item, Mapping):
            value = pick(item, "name", "projectName", "Name")
            name = value if isinstance(value, str) else None
        if name and name not in names:
            names.append(name)
    return names


# --- errors ----------------------------------------------------------------------------------

# Failures are recognised by the phrases the CLIs actually print (docs/runai-cli.md §2.3, §2.8,
# §6.2), never by a bare `401`, `expired` or `not found`: a submit failing with "PVC project-001
# not found" or "x509: certificate has expired" is not a login problem, and a job that is missing
# is named as a workload or job. Workload names are masked as `<name>` before matching.
_NOT_LOGGED_IN_RE = re.compile(
    r"\bnot logged in\b"  # v1 whoami: "You are currently not logged in to Run:AI"
    r"|\bmust be logged in\b"  # kubectl: "You must be logged in to the server (Unauthorized)"
    r"|\bno valid id-token\b"  # a stale token, from the kubeconfig the CLI set up
    r"|\b(?:access |refresh |id[- ]|auth(?:entication)? )?token (?:is |has )?expired\b"
    r"|\bsession (?:is |has )?expired\b"
    r"|\b401 unauthori[sz]ed\b|\bstatus(?: code)?:? 401\b"  # an HTTP status, not any 401
    r"|^\W*(?:error:\s*)?unauthori[sz]ed\W*$"  # the whole message is "Unauthorized"
    r"|\bplease (?:log ?in|re-?login)\b|\blogin required\b|\brunai login\b",
    re.IGNORECASE | re.MULTILINE,
)
_WORKLOAD_NAME = r"['\"]?(?:<name>|[a-z0-9][\w.-]*)['\"]?"
_NOT_FOUND_RE = re.compile(
    r"\bcould not locate desired workload\b"  # v2 logs/exec (docs/runai-cli.md §2.3)
    r"|\bno such (?:workload|job)\b|\b(?:workload|job) (?:was )?not found\b"
    # "workload 'x' could not be found in project 'p'", v1 "Job x does not exist in project p.",
    # v1 "Job x not found"; a Kubernetes-style `"x" not found` only for the job's own name.
    rf"|\b(?:workload|job|training|pytorchjob)s?(?:\.[\w.]+)?\s+{_WORKLOAD_NAME}\s+"
    r"(?:could not be found|was not found|not found|does not exist|doesn't exist)\b"
    r"|['\"]<name>['\"]\s+(?:not found|does not exist|could not be found)\b",
    re.IGNORECASE,
)
HINT_LOGIN = "run: runai login"
HINT_NOT_FOUND = (
    "check the name and project with `runai-tui list`; "
    "if it is listed, your login may be stale: run: runai login"
)
# cobra/pflag: `Error: unknown flag: --x`, `unknown shorthand flag: 'x' in -x`.
_UNKNOWN_FLAG_RE = re.compile(r"unknown (?:shorthand )?flag: ('[^']+' in -\S+|-{1,2}[\w.-]+)")
HINT_UNKNOWN_FLAG = (
    "`runai-tui info` lists what this runai CLI accepts; drop the setting that needs the flag, "
    "update the runai CLI, or set runai_cli if its help cannot be read"
)
HINT_OTHER = "run the same command with runai directly to see its full output"


# cobra's `Error: ` (or a lower-case `error: `) before runai's message: ours says `error:` already.
_RUNAI_ERROR_PREFIX = re.compile(r"^(?:error:\s*)+", re.IGNORECASE)


def plain_message(line: str) -> str:
    """A line of runai's output as we pass it on: trimmed, without runai's own `Error:` prefix."""
    return _RUNAI_ERROR_PREFIX.sub("", line.strip())


def first_meaningful_line(text: str, limit: int = 300) -> str:
    """The first non-blank, non-notice line as `plain_message` gives it (trimmed to `limit`
    characters), or ""."""
    for line in text.splitlines():
        line = plain_message(line)
        if line and not is_notice(line) and not line.lower().startswith("usage:"):
            return line if len(line) <= limit else line[: limit - 1] + "…"
    return ""


def _matching_line(text: str, pattern: re.Pattern[str]) -> str:
    for line in text.splitlines():
        if pattern.search(line) and not is_notice(line):
            return plain_message(line)
    return ""


def classify_failure(
    output: str,
    returncode: int,
    *,
    command: str = "runai",
    names: Iterable[str] = (),
    check_when_ok: bool = False,
) -> RunaiError | None:
    """The RunaiError that `output` (stdout + stderr) and `returncode` mean, or None for success.

    With `check_when_ok`, a zero exit whose text says "does not exist" / "not logged in" is still a
    failure (CLI v1 `delete` exits 0 on a missing job). Workload names are masked before matching,
    so a job called `expired-401` is not mistaken for a login problem.
    """
    if returncode == 0 and not check_when_ok:
        return None
    masked = output
    for name in names:
        if name:  # whole names only: masking a job called "x" must not eat the x of "exist"
            masked = re.sub(rf"(?<![\w.-]){re.escape(name)}(?![\w.-])", "<name>", masked)
    if _NOT_LOGGED_IN_RE.search(masked):
        line = _matching_line(masked, _NOT_LOGGED_IN_RE)
        detail = line.replace("<name>", "…")
        return RunaiError(
            ErrorKind.NOT_LOGGED_IN,
            f"not logged in to Run:ai or the login expired ({detail})"
            if detail
            else "not logged in to Run:ai or the login expired",
            HINT_LOGIN,
            output=output,
        )
    if _NOT_FOUND_RE.search(masked):
        line = _matching_line(output, _NOT_FOUND_RE) or first_meaningful_line(output)
        return RunaiError(ErrorKind.NOT_FOUND, line, HINT_NOT_FOUND, output=output)
    if returncode == 0:
        return None
    unknown = _UNKNOWN_FLAG_RE.search(output)
    if unknown:
        return RunaiError(
            ErrorKind.OTHER,
            f"{command} does not know the flag {unknown.group(1)} (this runai CLI lacks it)",
            HINT_UNKNOWN_FLAG,
            output=output,
        )
    line = first_meaningful_line(output) or "(no output)"
    return RunaiError(
        ErrorKind.OTHER, f"{command} failed (exit {returncode}): {line}", HINT_OTHER, output=output
    )


# kubectl's words, which `runai ... port-forward` prints through client-go (the exact runai text is
# UNCONFIRMED; runai-local prints the same): `Forwarding from 127.0.0.1:6006 -> 6006`.
_FORWARDING_RE = re.compile(r"Forwarding from (\[[0-9a-fA-F:]+\]|[\w.-]+):(\d+) -> (\d+)")
_PORT_IN_USE_RE = re.compile(
    r"address already in use|unable to listen on (?:any of the requested )?port", re.IGNORECASE
)


def parse_forwarding(line: str) -> tuple[str, int, int] | None:
    """(local host, local port, remote port) from a `Forwarding from H:L -> R` line, else None."""
    m = _FORWARDING_RE.search(line)
    return (m.group(1), int(m.group(2)), int(m.group(3))) if m else None


def says_port_in_use(output: str) -> bool:
    return _PORT_IN_USE_RE.search(output) is not None


def parse_submitted_name(output: str) -> str:
    """The workload name a submit printed (`Creating pytorch training NAME...`), or ""."""
    patterns = (
        r"Creating (?:[\w-]+ )*?(?:training|workspace|workload) ['\"]?([a-z0-9][a-z0-9.-]*?)['\"]?\.{3}",
        r"job ['\"]([a-z0-9][a-z0-9.-]*)['\"] has been submitted",
    )
    for pattern in patterns:
        m = re.search(pattern, output)
        if m:
            return m.group(1)
    return ""


__all__ = [
    "classify_failure",
    "extract_json",
    "first_meaningful_line",
    "is_notice",
    "parse_describe",
    "parse_event",
    "parse_job",
    "parse_list_page",
    "parse_pod",
    "parse_project_list",
    "parse_submitted_name",
    "parse_time",
    "pick",
    "plain_message",
    "strip_notices",
]
