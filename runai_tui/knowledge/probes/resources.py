"""Resources per pod: CPU use, memory against its limit, and each GPU, read by a probe in the pod.

Core (no Textual). `SCRIPT` is one read-only POSIX sh probe run through the client's exec (no
TTY, time-bounded), like preflight's. It prints one `@@rs KEY VALUE` line per fact:

- CPU: the cgroup's usage counter twice, `INTERVAL` seconds apart, with /proc/uptime around it
  (cgroup v2 `cpu.stat` usage_usec; v1 `cpuacct.usage` in ns);
- memory: v2 `memory.current`/`memory.max`, v1 `memory.usage_in_bytes`/`limit_in_bytes`, and
  the inactive page cache from `memory.stat` (usage minus it is the working set kubelet uses);
- GPUs: `nvidia-smi --query-gpu=utilization.gpu,memory.used,memory.total` as CSV, or
  `gpu_tool none` when the pod has no nvidia-smi (not an error).

The local cluster runs a pod as processes, not a cgroup. Its exec exports
`RUNAI_LOCAL_POD_PIDS` (the pod's processes, found by their marker) and
`RUNAI_LOCAL_MEMORY_LIMIT` (the job's limit in bytes, if any); the probe then prints their
/proc/PID/stat lines instead of cgroup files, so the client's path (one exec per pod) and this parser stay the only ones.
`parse_probe` turns the output into a `PodResources`; `top_job` runs the probe in every running
pod; `render_text` is the CLI's table.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from runai_tui.knowledge.probes.probe_facts import last_fact, parse_facts
from runai_tui.shapes.models import Phase
from runai_tui.util.quantity import bytes_text
from runai_tui.util.text import literal

MARK = "@@rs"
INTERVAL = 1.0  # seconds between the two CPU samples
EXEC_TIMEOUT = 30.0
MEMORY_WARN = 0.90  # a pod at or above this fraction of its memory limit is flagged
# cgroup v1 reports "no limit" as a huge number (PAGE_COUNTER_MAX pages); anything this large
# is no limit.
NO_LIMIT_V1 = 1 << 60

SCRIPT = r"""
p() { printf '@@rs %s %s\n' "$1" "$2"; }
cg=/sys/fs/cgroup
sample() {
  if [ -r /proc/uptime ]; then read up _ < /proc/uptime; p "uptime$1" "$up"; fi
  if [ -n "${RUNAI_LOCAL_POD_PIDS+set}" ]; then
    for pid in $RUNAI_LOCAL_POD_PIDS; do
      s="$(cat /proc/$pid/stat 2>/dev/null)" && p "proc$1" "${s##*) }"
    done
  elif [ -r $cg/cpu.stat ] && grep -q '^usage_usec ' $cg/cpu.stat; then
    p "cpu_usec$1" "$(grep '^usage_usec ' $cg/cpu.stat | cut -d' ' -f2)"
  elif [ -r $cg/cpuacct/cpuacct.usage ]; then
    p "cpu_nsec$1" "$(cat $cg/cpuacct/cpuacct.usage)"
  elif [ -r $cg/cpu,cpuacct/cpuacct.usage ]; then
    p "cpu_nsec$1" "$(cat $cg/cpu,cpuacct/cpuacct.usage)"
  fi
}
if [ -n "${RUNAI_LOCAL_POD_PIDS+set}" ]; then
  p source "processes $RUNAI_LOCAL_POD_PIDS"
  p clk_tck "$(getconf CLK_TCK 2>/dev/null)"
  p page_size "$(getconf PAGESIZE 2>/dev/null)"
  p mem_max "${RUNAI_LOCAL_MEMORY_LIMIT:-max}"
elif [ -r $cg/memory.current ]; then
  p source cgroup-v2
  p mem_current "$(cat $cg/memory.current)"
  p mem_max "$(cat $cg/memory.max 2>/dev/null)"
  p mem_inactive_file "$(grep '^inactive_file ' $cg/memory.stat 2>/dev/null | cut -d' ' -f2)"
elif [ -r $cg/memory/memory.usage_in_bytes ]; then
  p source cgroup-v1
  p mem_current "$(cat $cg/memory/memory.usage_in_bytes)"
  p mem_max "$(cat $cg/memory/memory.limit_in_bytes 2>/dev/null)"
  p mem_inactive_file "$(grep '^total_inactive_file ' $cg/memory/memory.stat 2>/dev/null | cut -d' ' -f2)"
else
  p source none
fi
sample 0
sleep __INTERVAL__
sample 1
if [ "${NVIDIA_VISIBLE_DEVICES:-}" != void ] && command -v nvidia-smi >/dev/null 2>&1; then
  out="$(nvidia-smi --query-gpu=utilization.gpu,memory.used,memory.total --format=csv,noheader,nounits 2>&1)"
  if [ $? -eq 0 ]; then
    printf '%s\n' "$out" | while IFS= read -r line; do p gpu "$line"; done
  else
    p gpu_error "$(printf '%s' "$out" | head -n 1)"
  fi
else
  p gpu_tool none
fi
p end ok
""".replace("__INTERVAL__", f"{INTERVAL:g}")

COMMAND = ["sh", "-c", SCRIPT]


@dataclass
class Gpu:
    index: int
    util_percent: float | None  # None: nvidia-smi printed [N/A]
    memory_used_mib: float | None
    memory_total_mib: float | None

    def to_dict(self) -> dict[str, object]:
        return {
            "index": self.index,
            "util_percent": self.util_percent,
            "memory_used_mib": self.memory_used_mib,
            "memory_total_mib": self.memory_total_mib,
        }


@dataclass
class PodResources:
    """One pod's figures. `error` set: the probe could not read them (with `hint`)."""

    pod: str
    phase: str = "Running"
    source: str = ""  # cgroup-v2 | cgroup-v1 | processes (the local cluster)
    cpu_cores: float | None = None  # cores busy on average over the interval
    memory_bytes: int | None = None  # the working set (usage minus inactive page cache)
    memory_limit_bytes: int | None = None  # None: no limit
    gpu_tool: bool = False
    gpus: list[Gpu] = field(default_factory=list)
    gpu_error: str = ""
    error: str = ""
    hint: str = ""

    @property
    def running(self) -> bool:
        return self.phase == Phase.RUNNING.value

    @property
    def memory_fraction(self) -> float | None:
        if self.memory_bytes is None or not self.memory_limit_bytes:
            return None
        return self.memory_bytes / self.memory_limit_bytes

    @property
    def memory_warning(self) -> bool:
        fraction = self.memory_fraction
        return fraction is not None and fraction >= MEMORY_WARN

    def to_dict(self) -> dict[str, object]:
        return {
            "pod": self.pod,
            "phase": self.phase,
            "source": self.source,
            "cpu_cores": self.cpu_cores,
            "memory_bytes": self.memory_bytes,
            "memory_limit_bytes": self.memory_limit_bytes,
            "memory_fraction": self.memory_fraction,
            "memory_warning": self.memory_warning,
            "gpu_tool": self.gpu_tool,
            "gpus": [g.to_dict() for g in self.gpus],
            "gpu_error": self.gpu_error,
            "error": self.error,
            "hint": self.hint,
        }


@dataclass
class TopReport:
    job: str
    pods: list[PodResources] = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        return 1 if any(p.error for p in self.pods) else 0

    def to_dict(self) -> dict[str, object]:
        return {"job": self.job, "pods": [p.to_dict() for p in self.pods]}


def _int(text: str) -> int | None:
    text = text.strip()
    return int(text) if text.isdigit() else None


def _float(text: str) -> float | None:
    try:
        return float(text.strip())
    except ValueError:
        return None


def parse_gpu_line(index: int, line: str) -> Gpu:
    """One nvidia-smi CSV row `45, 1234, 81559` (nounits: %, MiB, MiB); `[N/A]` becomes None."""
    cells = [c.strip() for c in line.split(",")]
    cells += [""] * (3 - len(cells))
    return Gpu(index, _float(cells[0]), _float(cells[1]), _float(cells[2]))


def _proc_totals(lines: list[str]) -> tuple[int, int] | None:
    """Sum of utime+stime (ticks) and rss (pages) over /proc/PID/stat lines cut after `) `."""
    if not lines:
        return None
    ticks = pages = 0
    for line in lines:
        fields = line.split()
        # after the command: state ppid pgrp ... utime(12) stime(13) ... rss(22), 1-based
        if len(fields) < 22:
            continue
        ticks += int(fields[11]) + int(fields[12])
        pages += int(fields[21])
    return ticks, pages


def _elapsed(facts: dict[str, list[str]]) -> float:
    start, end = _float(last_fact(facts, "uptime0")), _float(last_fact(facts, "uptime1"))
    if start is not None and end is not None and end > start:
        return end - start
    return INTERVAL


def parse_probe(pod: str, output: str) -> PodResources:
    """The probe's output into one pod's figures. A pod whose figures could not be read gets
    `error` and `hint` (never made-up numbers); no nvidia-smi is `gpu_tool False`, not an error."""
    facts = parse_facts(output, MARK)
    res = PodResources(pod)
    source = last_fact(facts, "source")
    res.source = source.split(" ")[0]
    elapsed = _elapsed(facts)
    if res.source == "processes":
        _parse_processes(res, facts, elapsed)
    elif res.source in ("cgroup-v2", "cgroup-v1"):
        _parse_cgroup(res, facts, elapsed)
    elif last_fact(facts, "end") == "ok":
        res.error = "no cgroup files in the pod (/sys/fs/cgroup memory.current or memory/)"
        res.hint = "the container runtime hides the cgroup; read usage with `kubectl top pod`"
    res.gpu_tool = bool(facts.get("gpu") or facts.get("gpu_error"))
    res.gpus = [parse_gpu_line(i, line) for i, line in enumerate(facts.get("gpu", []))]
    res.gpu_error = last_fact(facts, "gpu_error")
    if last_fact(facts, "end") != "ok" and not res.error:
        res.error = "the probe did not finish in the pod (no end marker): its output was cut"
        res.hint = "run `runai-tui exec JOB -- sh` and look; raise --timeout if the pod is slow"
    return res


def _parse_cgroup(res: PodResources, facts: dict[str, list[str]], elapsed: float) -> None:
    current = _int(last_fact(facts, "mem_current"))
    inactive = _int(last_fact(facts, "mem_inactive_file")) or 0
    if current is not None:
        res.memory_bytes = max(current - inactive, 0)
    limit = _int(last_fact(facts, "mem_max"))  # v2 "max" is not a number: no limit
    res.memory_limit_bytes = limit if limit is not None and limit < NO_LIMIT_V1 else None
    usec0, usec1 = _int(last_fact(facts, "cpu_usec0")), _int(last_fact(facts, "cpu_usec1"))
    nsec0, nsec1 = _int(last_fact(facts, "cpu_nsec0")), _int(last_fact(facts, "cpu_nsec1"))
    if usec0 is not None and usec1 is not None:
        res.cpu_cores = max(usec1 - usec0, 0) / 1e6 / elapsed
    elif nsec0 is not None and nsec1 is not None:
        res.cpu_cores = max(nsec1 - nsec0, 0) / 1e9 / elapsed
    if current is None:
        res.error = "the pod's cgroup has no memory usage file"
        res.hint = "the container runtime hides the cgroup; read usage with `kubectl top pod`"
    elif res.cpu_cores is None:
        res.error = "the pod's cgroup has no CPU usage file (cpu.stat or cpuacct.usage)"
        res.hint = "the container runtime hides the cgroup; read usage with `kubectl top pod`"


def _parse_processes(res: PodResources, facts: dict[str, list[str]], elapsed: float) -> None:
    first = _proc_totals(facts.get("proc0", []))
    last = _proc_totals(facts.get("proc1", []))
    if first is None or last is None:
        res.error = "none of the pod's processes is left in /proc: the pod has ended"
        res.hint = "check the pod with `runai-tui describe JOB`"
        return
    tck = _int(last_fact(facts, "clk_tck")) or 100
    page = _int(last_fact(facts, "page_size")) or 4096
    # A process that exits between the samples takes its ticks away; never report negative use.
    res.cpu_cores = max(last[0] - first[0], 0) / tck / elapsed
    res.memory_bytes = last[1] * page
    res.memory_limit_bytes = _int(last_fact(facts, "mem_max"))  # the job's limit, if it has one


# --- shown the same way by the CLI and the TUI --------------------------------------------------


def cpu_text(res: PodResources) -> str:
    return "" if res.cpu_cores is None else f"{res.cpu_cores:.2f} cores"


def memory_text(res: PodResources) -> str:
    if res.memory_bytes is None:
        return ""
    used = bytes_text(res.memory_bytes)
    fraction = res.memory_fraction
    if fraction is None or res.memory_limit_bytes is None:
        return f"{used} (no limit)"
    mark = " !" if res.memory_warning else ""
    return f"{used} / {bytes_text(res.memory_limit_bytes)} {fraction * 100:.0f}%{mark}"


def gpu_text(gpu: Gpu) -> str:
    util = "?" if gpu.util_percent is None else f"{gpu.util_percent:.0f}%"
    used = "?" if gpu.memory_used_mib is None else f"{gpu.memory_used_mib / 1024:.1f}"
    total = "?" if gpu.memory_total_mib is None else f"{gpu.memory_total_mib / 1024:.1f}"
    return f"GPU{gpu.index} {util} {used}/{total} GiB"


def gpus_text(res: PodResources) -> str:
    if res.gpu_error:
        return f"nvidia-smi failed: {res.gpu_error}"
    if not res.gpu_tool:
        return "no GPU tool"
    if not res.gpus:
        return "no GPU"
    return "; ".join(gpu_text(g) for g in res.gpus)


def mean_gpu_util(report: TopReport) -> float | None:
    """The mean utilisation over every GPU of every pod (None: no GPU figure)."""
    values = [g.util_percent for p in report.pods for g in p.gpus if g.util_percent is not None]
    return sum(values) / len(values) if values else None


def warnings(report: TopReport) -> list[str]:
    out = []
    for res in report.pods:
        if res.memory_warning and res.memory_fraction is not None:
            out.append(
                f"{res.pod}: memory at {res.memory_fraction * 100:.0f}% of its limit: the next "
                "growth is an OOM kill (raise the memory limit, or lower batch size/workers)"
            )
    return out


def render_text(report: TopReport) -> str:
    """The CLI's table; values from the pod go through `literal`."""
    rows: list[list[str]] = []
    for res in report.pods:
        if not res.running:
            rows.append([res.pod, res.phase, "", "", ""])
        elif res.error:
            rows.append([res.pod, "error", "", "", f"{res.error} (hint: {res.hint})"])
        else:
            rows.append([res.pod, "Running", cpu_text(res), memory_text(res), gpus_text(res)])
    header = ["POD", "STATUS", "CPU", "MEMORY", "GPUS"]
    widths = [max(len(literal(r[i])) for r in [header, *rows]) for i in range(4)]
    lines = []
    for row in [header, *rows]:
        cells = [literal(c).ljust(w) for c, w in zip(row[:4], widths, strict=True)]
        lines.append("  ".join([*cells, literal(row[4])]).rstrip())
    lines.extend(f"warning: {w}" for w in warnings(report))
    return "\n".join(lines)
