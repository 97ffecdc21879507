"""The rank that hung, from PyTorch Flight Recorder dumps (one file per rank).

torch writes each rank's ring buffer of collectives as a pickle of plain dicts, lists, strings and
numbers: ``{"version", "pg_config", "pg_status", "entries": [{"pg_id", "process_group",
"collective_seq_id", "profiling_name", "input_sizes", "input_dtypes", "state",
"time_created_ns", "timeout_ms", ...}]}``. It is read here with an unpickler that admits no class
or function at all, so an untrusted file can build nothing but plain data; torch is never
imported. The trainer (trainer/flight_recorder.py) writes the files to
``<output-dir>/flight-recorder/rank-N``.

The judgement: in each process group, S is the first collective some rank has not completed. A
rank whose last entered collective is below S never reached S: that rank hung (or died) and
every other rank waited in S until the timeout. When every rank entered S, a rank that entered
it later than the others' timeout arrived after they gave up: it is the one that stalled. Core
module: no Textual, no torch, no `runai` plumbing (the job path takes the client as a parameter).
"""

from __future__ import annotations

import io
import pickle
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from runai_tui.trainer_flags import records
from runai_tui.util.text import literal

DIR_NAME = records.DUMP_DIR  # <output-dir>/flight-recorder: trainer/records.py
MAX_DUMP_BYTES = 256 << 20  # a dump larger than this is not read
CLOCK_SLACK_NS = 120 * 10**9  # clocks of different nodes may differ by this much
_RANK_FILE = re.compile(r"^(?P<prefix>[\w.-]*?)(?P<rank>\d+)$")
# The trainer's log lines that say where the dumps go (startup) or went (a dump).
_DUMP_LINE = re.compile(r"flight recorder[^/]*?(?P<dir>/\S*?/)[\w.-]*?\d*(?:\s|$)")
_DTYPE_BYTES = {
    "Float": 4, "Double": 8, "Half": 2, "BFloat16": 2, "Long": 8, "Int": 4, "Short": 2,
    "Char": 1, "Byte": 1, "Bool": 1, "ComplexFloat": 8, "ComplexDouble": 16,
    "Float8_e4m3fn": 1, "Float8_e5m2": 1,
}  # fmt: skip


class DumpProblem(Exception):
    """A dump directory that cannot be judged: `message` names the file, `hint` the fix."""

    def __init__(self, message: str, hint: str) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint


class _PlainData(pickle.Unpickler):
    """Admits no global: dicts, lists, tuples, sets, strings, bytes, numbers, None and bools need
    none, and anything else in a file is refused rather than constructed."""

    def find_class(self, module: str, name: str) -> Any:
        raise pickle.UnpicklingError(f"refuses to load {module}.{name}")


@dataclass(frozen=True)
class Entry:
    """One collective as one rank recorded it."""

    pg: str
    pg_desc: str
    seq: int
    op: str
    sizes: list[list[int]]
    dtypes: list[str]
    created_ns: int | None
    timeout_ms: int | None

    def size_text(self) -> str:
        if not self.sizes:
            return "no tensors"
        parts = []
        total = 0
        for shape, dtype in zip(self.sizes, [*self.dtypes, *[""] * len(self.sizes)], strict=False):
            numel = 1
            for dim in shape:
                numel *= int(dim)
            total += numel * _DTYPE_BYTES.get(dtype, 0)
            parts.append(f"{'x'.join(map(str, shape)) or 'scalar'} {dtype}".strip())
        text = ", ".join(parts[:3]) + (f" (+{len(parts) - 3} more)" if len(parts) > 3 else "")
        return f"{text} ({_bytes(total)})" if total else text


@dataclass
class RankDump:
    rank: int
    name: str  # the file it came from
    version: str
    entries: list[Entry]
    entered: dict[str, int]  # process group -> last collective this rank entered
    completed: dict[str, int]  # process group -> last collective it completed
    groups: dict[str, list[int]]  # process group -> its ranks, as pg_config gives them
    world_size: int | None = None  # the trainer adds it: some builds leave pg_config's ranks empty


@dataclass
class Hang:
    """What the dumps say. `stalled`: the ranks that never entered (or entered late) `seq`."""

    pg: str
    pg_desc: str
    seq: int
    op: str
    size: str
    stalled: list[int]
    waited: list[int]  # ranks that entered it and waited
    late: bool  # the stalled ranks entered it, but after the others' timeout
    last_completed: dict[int, int]
    missing: list[int] = field(default_factory=list)  # ranks with no dump

    def message(self) -> str:
        who = ranks_text(self.stalled)
        where = f"collective {self.seq} of process group {self.pg}" + (
            f" ({self.pg_desc})" if self.pg_desc else ""
        )
        what = f"{self.op}, {self.size}" if self.op else "operation not in the buffer"
        if self.late:
            head = f"{who} entered {where} after the timeout of {ranks_text(self.waited)}"
        elif set(self.stalled) <= set(self.missing):
            head = f"{who} left no dump and never reached {where}, which {ranks_text(self.waited)} entered"
        else:
            head = f"{who} never entered {where}; {ranks_text(self.waited)} entered it and waited"
        done = ", ".join(f"rank {r}: {s}" for r, s in sorted(self.last_completed.items()))
        tail = f"; no dump from {ranks_text(self.missing)}" if self.missing else ""
        return f"{head}: {what}. Last completed collective: {done}{tail}"

    def fix(self) -> str:
        who = ranks_text(self.stalled)
        return (
            f"look at {who}'s pod and node first: the last lines of its log (runai-tui logs JOB "
            "--pod POD), then `runai-tui preflight JOB --pod POD` on it; a rank that stops "
            "before a collective is stuck in data loading, a dead node, or code only it runs"
        )

    def to_dict(self) -> dict[str, object]:
        return {
            "process_group": self.pg,
            "seq": self.seq,
            "op": self.op,
            "size": self.size,
            "stalled_ranks": self.stalled,
            "waiting_ranks": self.waited,
            "late": self.late,
            "last_completed": {str(k): v for k, v in sorted(self.last_completed.items())},
            "missing_ranks": self.missing,
        }


@dataclass
class Judgement:
    dumps: list[RankDump]
    missing: list[int]
    hangs: list[Hang]


def _bytes(n: int) -> str:
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"


def ranks_text(ranks: Iterable[int]) -> str:
    items = sorted(set(ranks))
    if not items:
        return "no rank"
    return ("rank " if len(items) == 1 else "ranks ") + ", ".join(map(str, items))


# -- reading ------------------------------------------------------------------------------------


def load_dump(data: bytes, name: str, rank: int) -> RankDump:
    """One rank's file, as plain data. Raises DumpProblem for a truncated or foreign file."""
    hint = f"give the directory torch's Flight Recorder wrote (<output-dir>/{DIR_NAME})"
    try:
        raw = _PlainData(io.BytesIO(data)).load()
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, IndexError) as exc:
        raise DumpProblem(
            f"{name}: truncated or not a Flight Recorder dump ({exc or type(exc).__name__})", hint
        ) from None
    if not isinstance(raw, dict) or not isinstance(raw.get("entries"), list):
        raise DumpProblem(f"{name}: not a Flight Recorder dump (no 'entries' list)", hint)
    try:
        entries = [_entry(e) for e in raw["entries"] if isinstance(e, dict) and not e.get("is_p2p")]
        status = raw.get("pg_status") or {}
        entered = {str(k): int(v.get("last_enqueued_collective", -1)) for k, v in status.items()}
        completed = {str(k): int(v.get("last_completed_collective", -1)) for k, v in status.items()}
        groups = {}
        for key, config in (raw.get("pg_config") or {}).items():
            ranks = config.get("ranks", "") if isinstance(config, dict) else ""
            numbers = [int(x) for x in re.findall(r"\d+", str(ranks))]
            if numbers:
                groups[str(key)] = numbers
    except (AttributeError, TypeError, ValueError) as exc:
        raise DumpProblem(f"{name}: not a Flight Recorder dump ({exc})", hint) from None
    for e in entries:  # a dump without pg_status (older torch): the buffer says as much
        entered[e.pg] = max(entered.get(e.pg, -1), e.seq)
    world = raw.get("world_size")
    world_size = world if isinstance(world, int) and not isinstance(world, bool) else None
    return RankDump(
        rank, name, str(raw.get("version", "")), entries, entered, completed, groups, world_size
    )


def _entry(e: dict[str, Any]) -> Entry:
    pg = e.get("process_group") or ("", "")
    pg_id = str(e.get("pg_id", pg[0] if pg else ""))
    op = str(e.get("profiling_name", ""))
    op = op.split(":", 1)[-1]  # "nccl:all_reduce" -> "all_reduce"
    created = e.get("time_created_ns")
    timeout = e.get("timeout_ms")
    return Entry(
        pg_id,
        str(pg[1]) if len(pg) > 1 else "",
        int(e.get("collective_seq_id", -1)),
        op,
        [[int(d) for d in shape] for shape in e.get("input_sizes") or []],
        [str(d) for d in e.get("input_dtypes") or []],
        int(created) if created is not None else None,
        int(timeout) if timeout is not None else None,
    )


def rank_files(names: Iterable[str]) -> dict[int, str]:
    """{rank: file name} for the dump files among `names` (`rank-N`, or one other common
    prefix; hidden files, such as a dump being written, are left out)."""
    by_prefix: dict[str, dict[int, str]] = {}
    for name in names:
        match = _RANK_FILE.match(name)
        if match and not name.startswith("."):
            by_prefix.setdefault(match["prefix"], {})[int(match["rank"])] = name
    if records.DUMP_FILE_PREFIX in by_prefix:
        return by_prefix[records.DUMP_FILE_PREFIX]
    if len(by_prefix) == 1:
        return next(iter(by_prefix.values()))
    return {}


def read_dir(directory: Path) -> list[RankDump]:
    """Every rank's dump in a local directory. Raises DumpProblem."""
    if not directory.is_dir():
        raise DumpProblem(
            f"--flight-recorder {directory}: no such directory",
            f"give the directory of rank-N files (<output-dir>/{DIR_NAME})",
        )
    files = rank_files(p.name for p in directory.iterdir() if p.is_file())
    if not files:
        raise DumpProblem(
            f"--flight-recorder {directory}: no rank-N dump files in it",
            "the trainer writes them on a collective timeout; was the job run with "
            "TORCH_FR_DUMP_ON_TIMEOUT=1 (`runai-tui lint` says flight-recorder-off)?",
        )
    dumps = []
    for rank, name in sorted(files.items()):
        path = directory / name
        if path.stat().st_size > MAX_DUMP_BYTES:
            raise DumpProblem(f"{path}: larger than {_bytes(MAX_DUMP_BYTES)}", "not a dump?")
        dumps.append(load_dump(path.read_bytes(), str(path), rank))
    return dumps


# -- judging ------------------------------------------------------------------------------------


def judge(dumps: list[RankDump]) -> Judgement:
    """Which rank hung where. Raises DumpProblem when the dumps come from different runs."""
    _check_same_run(dumps)
    present = {d.rank for d in dumps}
    world: set[int] = set()
    for d in dumps:
        for ranks in d.groups.values():
            world.update(ranks)
        world.update(range(d.world_size or 0))
    world |= set(range(max(present) + 1))
    missing = sorted(world - present)
    hangs = []
    for pg in sorted({pg for d in dumps for pg in d.entered}, key=_pg_order):
        hang = _judge_group(pg, [d for d in dumps if pg in d.entered], missing)
        if hang is not None:
            hangs.append(hang)
    return Judgement(dumps, missing, hangs)


def _pg_order(pg: str) -> tuple[int, str]:
    return (int(pg), "") if pg.isdigit() else (1 << 30, pg)


def _judge_group(pg: str, dumps: list[RankDump], missing: list[int]) -> Hang | None:
    entered = {d.rank: d.entered[pg] for d in dumps}
    low, high = min(entered.values()), max(entered.values())
    never = [r for r, e in entered.items() if e == low] if high > low else []
    seq = low + 1 if never else low  # all at the same place: the last one they entered
    if seq < 1:
        return None
    # gloo counts a collective that failed on its timeout as completed; one that a rank never
    # entered cannot have completed, so nothing at or past `seq` is taken as done.
    last_completed = {d.rank: min(d.completed.get(pg, entered[d.rank] - 1), seq - 1) for d in dumps}
    waited = [r for r, e in entered.items() if e >= seq]
    entries = [
        e for d in dumps if entered[d.rank] >= seq for e in d.entries if e.pg == pg and e.seq == seq
    ]
    first = entries[0] if entries else None
    op, size = (first.op, first.size_text()) if first else ("", "")
    desc = first.pg_desc if first else ""
    group_ranks: set[int] = set()
    for d in dumps:
        group_ranks.update(d.groups.get(pg, []))
    absent = [r for r in missing if not group_ranks or r in group_ranks]
    if never:
        return Hang(pg, desc, seq, op, size, never, waited, False, last_completed, absent)
    if absent:  # every dump is in `seq`: the ranks that wrote none did not come
        return Hang(pg, desc, seq, op, size, absent, waited, False, last_completed, absent)
    late = _late_ranks(pg, seq, dumps)
    if late:
        waited = [r for r in waited if r not in late]
        return Hang(pg, desc, seq, op, size, late, waited, True, last_completed, absent)
    return None


def _late_ranks(pg: str, seq: int, dumps: list[RankDump]) -> list[int]:
    """Ranks that entered `seq` more than the timeout after the first rank did."""
    times: dict[int, int] = {}
    timeout_ms = None
    for d in dumps:
        for e in d.entries:
            if e.pg == pg and e.seq == seq and e.created_ns is not None:
                times[d.rank] = e.created_ns
                timeout_ms = e.timeout_ms or timeout_ms
    if len(times) < 2 or not timeout_ms:
        return []
    first = min(times.values())
    return sorted(r for r, t in times.items() if t - first > timeout_ms * 10**6)


def _check_same_run(dumps: list[RankDump]) -> None:
    """Dumps of one run agree on the default group's ranks and entered every collective both
    completed within the timeout of each other (both were in it at the same time)."""
    hint = "keep one run's rank-N files in the directory (the newest attempt's), then run again"
    worlds = {tuple(d.groups.get("0") or ()) for d in dumps if d.groups.get("0")}
    if len(worlds) > 1:
        raise DumpProblem(
            "dumps from different runs in one directory: their process groups differ "
            f"({' vs '.join(str(list(w)) for w in sorted(worlds))})",
            hint,
        )
    for a in dumps:
        for b in dumps:
            if b.rank <= a.rank:
                continue
            for pg in set(a.completed) & set(b.completed):
                # Before the last collective either entered: gloo counts a timed-out one as
                # completed, and a rank that stalled enters it arbitrarily late.
                done = min(a.completed[pg], b.completed[pg], a.entered[pg] - 1, b.entered[pg] - 1)
                ta = {e.seq: e for e in a.entries if e.pg == pg and e.seq <= done}
                for e in b.entries:
                    other = ta.get(e.seq)
                    if other is None or e.created_ns is None or other.created_ns is None:
                        continue
                    limit = (e.timeout_ms or 0) * 10**6 + CLOCK_SLACK_NS
                    if abs(e.created_ns - other.created_ns) > limit or e.op != other.op:
                        raise DumpProblem(
                            f"dumps from different runs in one directory: {a.name} and {b.name} "
                            f"disagree on collective {e.seq} of process group {pg} "
                            f"({other.op} vs {e.op}, entered "
                            f"{abs(e.created_ns - other.created_ns) / 1e9:.0f} s apart)",
                            hint,
                        )


# -- where the dumps are, and reading them through a pod -----------------------------------------


class DumpLocator:
    """Fed the job's log lines: the directory the trainer said its dumps go to, and which pod
    printed which rank's dump line."""

    def __init__(self) -> None:
        self.directory: str | None = None
        self.pod_of_rank: dict[int, str] = {}

    def feed(self, pod: str, line: str) -> None:
        if "flight recorder" not in line:
            return
        match = _DUMP_LINE.search(line)
        if match:
            self.directory = match["dir"].rstrip("/")
        rank = re.search(r"\[rank (\d+)\] flight recorder dump", line)
        if rank:
            self.pod_of_rank[int(rank[1])] = pod


def summary_lines(judgement: Judgement) -> list[str]:
    """Each rank's position in its process groups, for the text report."""
    out = []
    for d in judgement.dumps:
        groups = ", ".join(
            f"group {pg}: entered {d.entered[pg]}, completed {d.completed.get(pg, '?')}"
            for pg in sorted(d.entered, key=_pg_order)
        )
        out.append(f"rank {d.rank}  {groups or 'no collectives recorded'}")
    for rank in judgement.missing:
        out.append(f"rank {rank}  no dump")
    return out


# -- findings -----------------------------------------------------------------------------------


@dataclass
class Reported:
    """A finding for diagnose's table: `code` is a row of diagnose.CODES."""

    code: str
    pod: str
    evidence: str
    message: str
    fix: str


def findings(judgement: Judgement, pod_of_rank: dict[int, str] | None = None) -> list[Reported]:
    pods = pod_of_rank or {}
    out = []
    for hang in judgement.hangs:
        pod = pods.get(hang.stalled[0], f"rank {hang.stalled[0]}")
        evidence = "; ".join(summary_lines(judgement))
        out.append(Reported("hang-rank", pod, evidence, hang.message(), hang.fix()))
    return out


def unreadable(problem: DumpProblem, pod: str) -> Reported:
    return Reported(
        "flight-recorder-unreadable", pod, problem.message, problem.message, problem.hint
    )


def render_text(judgement: Judgement, reported: list[Reported]) -> str:
    """`diagnose --flight-recorder DIR`'s report; dump values go through `literal`."""

    out = ["RANK  WHERE IT WAS", *(literal(line) for line in summary_lines(judgement)), ""]
    if not reported:
        out.append(f"no hang found in {len(judgement.dumps)} rank dump(s)")
    for r in reported:
        out.append(f"ERROR {r.code}  {literal(r.pod)}")
        out.append(f"  what:     {literal(r.message)}")
        out.append(f"  fix:      {r.fix}")
    return "\n".join(out)
