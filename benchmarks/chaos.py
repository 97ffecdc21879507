#!/usr/bin/env python3
"""A chaos run of the unattended features on the local cluster: random schedules of real faults
on short real jobs, and after each the invariants checked.

    python benchmarks/chaos.py                     # 20 schedules, seeds 1..20
    python benchmarks/chaos.py --seed 7 --schedules 1   # replay one schedule
    python benchmarks/chaos.py --quick --keep      # one or two faults each; keep the state dirs

Each schedule runs one chain in a cluster of its own (fresh XDG folders): the trainer on
synthetic data (ResNet-18 RetinaNet at 64 px, fp32, a master and a worker pod, 12 steps, a
checkpoint every 3), submitted from a profile, recovering in place (the local cluster's restart
policy and backoff limit) or not (the pod's loss fails the job), and watched by `runai-tui watch
JOB --recover`. The faults, drawn from the seed: a rank SIGKILLed (the worker's trainer, not
torchrun), a pod SIGKILLed (its process group), a preemption (a job of higher priority takes
the GPUs for a few seconds), the watcher SIGKILLed and two started again at once, the name the
watcher would give attempt 2 taken beforehand, and failing `runai` calls (the watchers run
through a wrapper, named by RUNAI_TUI_RUNAI, that fails the Nth call of a verb: before running
it, or after: the submit went through and the call still says it failed).

The invariants (`check`): per chain at most --max-attempts submissions, and no attempt number
twice; never two live attempts of one chain (no container run of one overlaps one of another);
one watcher per chain at a time (a second one refused), none that floods (more than
FLOOD_EVENTS events, an attempt said submitted twice); every job Completed, or Failed with its
reason named (the watcher's `failed` event, else `runai-tui diagnose`), and every watcher ended
with `completed` or `stopped` and a reason, no traceback; steps lost at each resume at most the
checkpoint interval, and no step skipped (the trainer's metrics.jsonl, and `runai-tui report`);
no output dir written by two runs (one writer's steps never interleave with another's, no run
refused for an output dir in use).

Prints one line per schedule, one line per broken invariant with its seed (replay it with
`--seed N --schedules 1`), and a total; exit 1 when an invariant broke. CPU-heavy (a schedule of
two attempts: about 50 CPU-seconds in 100-130 s on 2 cores): not part of `make bench`.
tests/local/test_chaos.py runs one fixed seed.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make the checkout importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from runai_local import state

REPO = Path(__file__).resolve().parents[1]
ROOT = "cx"  # the chain's first job; every schedule has a cluster of its own
STEPS, EVERY, MAX_ATTEMPTS = 12, 3, 3
TIMED = ("rank", "pod", "preempt", "watcher")  # applied when the live attempt reaches a step
SETUP = ("taken", "runai")  # arranged before the chain starts
RECORD = "runai-tui.io/submission"
ARGS = f"""[--dataset, synthetic, --synthetic-train-images, "48", --synthetic-val-images, "2",
       --model, retinanet_resnet18_fpn, --epochs, "1", --max-steps, "{STEPS}", --batch-size, "2",
       --min-size, "64", --max-size, "64", --workers, "0", --log-every, "1", --amp, none,
       --device, cpu, --checkpoint-every, "{EVERY}", --comm-check, "off",
       --trainable-backbone-layers, "0", --output-dir, /data/runs/{ROOT}]"""
# In place: the shipped recovery (ExitCode: a killed pod starts again). Not in place: the pod's
# loss fails the job, and only the watcher brings the chain back.
PROFILE = """\
extends: retinanet-local
job_name: {root}
gpus: 1
master_gpus: 1
termination_grace_period: 30s
{policy}
args: {args}
"""
IN_PLACE = "restart_policy: ExitCode\nbackoff_limit: 3"
NOT_IN_PLACE = "restart_policy: Never\nbackoff_limit: 0"
# The wrapper the watchers run as `runai`: CHAOS_RUNAI_FAULT = VERB:FIRST:COUNT:WHEN fails the
# calls FIRST..FIRST+COUNT-1 that carry the word VERB, before running them or after.
WRAPPER = """#!{python}
import fcntl, os, subprocess, sys
verb, first, count, when = os.environ["CHAOS_RUNAI_FAULT"].split(":")
args = sys.argv[1:]
n = 0
if verb in args:
    with open(os.environ["CHAOS_RUNAI_COUNTER"], "a+") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        f.seek(0)
        n = len(f.read().splitlines()) + 1
        f.write(" ".join(args[:4]) + "\\n")
fail = int(first) <= n < int(first) + int(count)
real = [{python!r}, "-m", "runai_local.cli", *args]
if not fail:
    os.execv(real[0], real)
if when == "after":
    subprocess.run(real, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
sys.stderr.write("Error: rpc error: code = Unavailable desc = connection error: "
                 "dial tcp 10.0.0.1:443: connect: connection refused (chaos)\\n")
sys.exit(1)
"""
FLOOD_EVENTS = 40  # more events than a chain of 3 attempts and a few runai errors say
FLOOD_BYTES = 200_000  # the watchers' output past this: stopped, a flood
WATCH_SECONDS = 900.0  # a schedule's chain not ended by then: a hang, an invariant broken
SETTLE_SECONDS = 120.0  # after the watchers end, for the other jobs (the preemptor) to end


@dataclass
class Schedule:
    """What one seed draws: recovery in place or not, the timed faults (kind, step) and the
    setup faults; the runai wrapper's fault when there is one."""

    seed: int
    in_place: bool
    timed: list[tuple[str, int]]
    setup: list[str]
    runai_fault: str = ""

    def text(self) -> str:
        parts = [f"{k}@{s}" for k, s in self.timed]
        parts += [f"runai({self.runai_fault})" if k == "runai" else k for k in self.setup]
        place = "in-place" if self.in_place else "not-in-place"
        return f"{place}: {', '.join(parts) or 'no fault'}"


def draw(seed: int, quick: bool = False) -> Schedule:
    """The schedule of SEED: the same seed draws the same schedule."""
    rng = random.Random(seed)
    in_place = rng.random() < 0.35
    kinds = rng.sample(TIMED + SETUP, rng.randint(1, 2) if quick else rng.randint(2, 3))
    if not in_place and "pod" not in kinds and rng.random() < 0.6:
        kinds.append("pod")  # most chains fail once, so that the watcher submits again
    timed = sorted(((k, rng.randint(4, 9)) for k in kinds if k in TIMED), key=lambda t: t[1])
    setup = [k for k in kinds if k in SETUP]
    runai_fault = ""
    if "runai" in setup:
        verb = rng.choice(("submit", "submit", "describe", "list"))  # the watcher's own call
        first = rng.randint(1, 2) if verb == "submit" else rng.randint(1, 8)
        when = rng.choice(("before", "after"))
        runai_fault = f"{verb}:{first}:{rng.randint(1, 2)}:{when}"
    return Schedule(seed, in_place, timed, setup, runai_fault)


@dataclass
class WatcherRun:
    """One `runai-tui watch` process: its files, when it started and was killed."""

    proc: subprocess.Popen[bytes]
    out: Path
    err: Path
    started: float
    killed: float | None = None
    kept: tuple[list[dict[str, Any]], str] | None = None  # what `keep` read, the files gone

    def events(self) -> list[dict[str, Any]]:
        if self.kept is not None:
            return self.kept[0]
        found = []
        for line in self.out.read_text(errors="replace").splitlines():
            with contextlib.suppress(ValueError):
                found.append(json.loads(line))
        return found

    def stderr(self) -> str:
        return self.kept[1] if self.kept is not None else self.err.read_text(errors="replace")

    def keep(self) -> None:
        """Read the events and stderr once more, into memory, before their files go."""
        self.kept = (self.events(), self.stderr())

    def refused(self) -> bool:
        return "is already watched by pid" in self.stderr()


@dataclass
class Broken:
    seed: int
    invariant: str
    detail: str

    def line(self) -> str:
        return (f"BROKEN seed={self.seed} [{self.invariant}] {self.detail} (replay: python "
                f"benchmarks/chaos.py --seed {self.seed} --schedules 1)")  # fmt: skip


@dataclass
class Run:
    """One schedule as it runs: its cluster's folders and environment, its watchers, the faults
    applied (kind, step, what was done) and what was collected at the end."""

    schedule: Schedule
    root: Path
    env: dict[str, str]
    watchers: list[WatcherRun] = field(default_factory=list)
    applied: list[tuple[str, int, str]] = field(default_factory=list)
    placeholders: set[str] = field(default_factory=set)  # jobs not of the chain
    timed_out: bool = False
    jobs: dict[str, dict[str, Any]] = field(default_factory=dict)  # name -> describe -o json
    report: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    @property
    def jobs_dir(self) -> Path:
        return Path(self.env["XDG_STATE_HOME"]) / "runai-tui/local/jobs/local"

    @property
    def output_dir(self) -> Path:
        return Path(self.env["XDG_DATA_HOME"]) / f"runai-tui/local/pvc/project-001/runs/{ROOT}"

    def run(self, *argv: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", *argv], capture_output=True, text=True,
                              timeout=timeout, env=self.env, cwd=REPO)  # fmt: skip

    def local(self, *argv: str) -> subprocess.CompletedProcess[str]:
        return self.run("runai_local.cli", *argv)

    def describe(self, name: str) -> dict[str, Any] | None:
        done = self.local("training", "pytorch", "describe", name, "-o", "json")
        return json.loads(done.stdout) if done.returncode == 0 else None


def isolated_env(root: Path, **extra: str) -> dict[str, str]:
    """This process's environment for a cluster of its own under ROOT (as tests/local/conftest.py
    makes one): fresh XDG folders, none of the caller's RUNAI_TUI_*/RUNAI_LOCAL_* settings."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("RUNAI_TUI_", "RUNAI_LOCAL_", "XDG_"))}  # fmt: skip
    for var in ("XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME"):
        (root / var.lower()).mkdir(parents=True)
        env[var] = str(root / var.lower())
    (root / "xdg_config_home/runai-tui/profiles").mkdir(parents=True)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH", "")) if p)
    return env | {"RUNAI_TUI_BACKEND": "local"} | extra


def prepare(schedule: Schedule, root: Path) -> Run:
    """The schedule's cluster: its profile, the wrapper when runai calls fail, the taken name."""
    run = Run(schedule, root, isolated_env(root, RUNAI_LOCAL_GPUS="4"))
    policy = IN_PLACE if schedule.in_place else NOT_IN_PLACE
    profile = PROFILE.format(root=ROOT, policy=policy, args=ARGS)
    (root / f"xdg_config_home/runai-tui/profiles/{ROOT}.yaml").write_text(profile)
    if schedule.runai_fault:
        wrapper = root / "runai"
        wrapper.write_text(WRAPPER.format(python=sys.executable))
        wrapper.chmod(0o755)
    if "taken" in schedule.setup:  # the name the watcher gives attempt 2, taken by another job
        name = f"{ROOT}-r2"
        done = run.local("training", "pytorch", "submit", name, "--command", "--", "true")
        run.placeholders.add(name)
        run.applied.append(("taken", 0, f"{name} submitted first ({done.returncode})"))
    return run


def start_watcher(run: Run) -> WatcherRun:
    n = len(run.watchers)
    env = dict(run.env)
    if run.schedule.runai_fault:  # runai is the wrapper, which runs the local cluster
        env |= {"RUNAI_TUI_BACKEND": "runai", "RUNAI_TUI_RUNAI": str(run.root / "runai"),
                "CHAOS_RUNAI_FAULT": run.schedule.runai_fault,
                "CHAOS_RUNAI_COUNTER": str(run.root / "runai-calls")}  # fmt: skip
    out, err = run.root / f"watch-{n}.jsonl", run.root / f"watch-{n}.err"
    argv = [sys.executable, "-m", "runai_tui.cli", "watch", ROOT, "--recover", "--backoff", "0",
            "--interval", "2", "--max-attempts", str(MAX_ATTEMPTS), "--json"]  # fmt: skip
    with out.open("wb") as o, err.open("wb") as e:
        proc = subprocess.Popen(argv, stdout=o, stderr=e, env=env, cwd=REPO,
                                start_new_session=True)  # fmt: skip
    watcher = WatcherRun(proc, out, err, time.time())
    run.watchers.append(watcher)
    return watcher


def chain_dirs(run: Run) -> list[Path]:
    """The job dirs of the chain's jobs (by name: ROOT and ROOT-…, not the placeholders),
    oldest first."""
    if not run.jobs_dir.is_dir():
        return []
    found = [d for d in run.jobs_dir.iterdir()
             if (d.name == ROOT or d.name.startswith(ROOT + "-"))
             and d.name not in run.placeholders and (d / "spec.json").exists()]  # fmt: skip
    return sorted(found, key=lambda d: (d / "spec.json").stat().st_mtime)


def live_step(run: Run) -> int:
    """The step the newest attempt's master last logged (its current container), 0 if none."""
    dirs = chain_dirs(run)
    if not dirs:
        return 0
    try:
        text = (dirs[-1] / f"logs/{dirs[-1].name}-master-0.log").read_text(errors="replace")
    except OSError:
        return 0
    steps = re.findall(r'"kind": "train", "step": (\d+)', text)
    return int(steps[-1]) if steps else 0


def trainer_pid(jobdir: Path, pod: str) -> int:
    """The trainer process (not torchrun) of POD."""
    for pid in state.processes_of_job(jobdir, pod):
        with contextlib.suppress(OSError):
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            if b"trainer" in argv and not any(b"torchrun" in a or b".run" in a for a in argv):
                return pid
    return 0


def apply(run: Run, kind: str, step: int) -> str:
    """Apply one timed fault to the newest attempt; what was done, for the log."""
    jobdir = chain_dirs(run)[-1]
    name = jobdir.name
    if kind == "rank":
        pid = trainer_pid(jobdir, f"{name}-worker-0")
        if pid:
            os.kill(pid, signal.SIGKILL)
        return f"SIGKILL the trainer of {name}-worker-0 (pid {pid or 'none found'})"
    if kind == "pod":
        doc = run.describe(name) or {}
        pod: dict[str, Any] = next(
            (p for p in doc.get("pods", []) if p["name"] == f"{name}-worker-0"), {}
        )
        with contextlib.suppress(OSError, KeyError, TypeError):
            os.killpg(pod["pid"], signal.SIGKILL)
        return f"SIGKILL the pod {name}-worker-0 (pid {pod.get('pid')})"
    if kind == "preempt":
        urgent = f"urgent{len(run.placeholders)}"
        done = run.local("training", "pytorch", "submit", urgent, "--workers", "0", "-g", "3",
                         "--priority", "very-high", "--command", "--", "sh", "-c", "sleep 3")  # fmt: skip
        run.placeholders.add(urgent)
        return f"{urgent} (very-high, 3 GPUs) submitted ({done.returncode}) to preempt {name}"
    live = [w for w in run.watchers if w.proc.poll() is None and w.killed is None]
    for w in live:
        w.proc.kill()
        w.killed = time.time()
        w.proc.wait()
    start_watcher(run)
    start_watcher(run)  # two at once: one is refused
    return f"SIGKILL {len(live)} watcher(s), two started again at once"


def drive(run: Run) -> None:
    """Submit the chain, start its watcher, apply each timed fault when the newest attempt
    reaches its step, and wait until the watchers have ended (WATCH_SECONDS at most)."""
    done = run.run("runai_tui.cli", "submit", "--profile", ROOT)
    if done.returncode != 0:
        run.notes.append(f"submit failed: {done.stderr.strip()}")
        return
    start_watcher(run)
    pending = list(run.schedule.timed)
    deadline = time.monotonic() + WATCH_SECONDS
    while any(w.proc.poll() is None for w in run.watchers):
        if time.monotonic() > deadline:
            run.timed_out = True
            break
        if len(chain_dirs(run)) > MAX_ATTEMPTS + 1:  # a flood: stop it before it fills the machine
            run.notes.append(f"stopped early: {len(chain_dirs(run))} jobs in the chain")
            break
        if sum(w.out.stat().st_size for w in run.watchers) > FLOOD_BYTES:
            run.notes.append(f"stopped early: the watchers said over {FLOOD_BYTES} bytes")
            break
        step = live_step(run) if pending else 0
        if pending and step >= pending[0][1]:
            kind, at = pending.pop(0)
            run.applied.append((kind, step, apply(run, kind, at)))
        time.sleep(0.3)
    for kind, at in pending:
        run.applied.append((kind, at, "not applied: the chain ended first"))
    for w in run.watchers:
        if w.proc.poll() is None:
            w.proc.kill()
            w.killed = w.killed or time.time()
            w.proc.wait()


def settle(run: Run) -> None:
    """Wait for every job to end (SETTLE_SECONDS at most), then read them and the report."""
    deadline = time.monotonic() + SETTLE_SECONDS
    live = ("Creating", "Pending", "Initializing", "Running", "Stopping", "Resuming", "Unknown")
    while True:
        listed = run.local("training", "list", "--json")
        rows = json.loads(listed.stdout or "{}").get("workloads", [])
        if not [r for r in rows if r["phase"] in live] or time.monotonic() > deadline:
            break
        time.sleep(1.0)
    for row in rows:
        doc = run.describe(row["name"])
        if doc is not None:
            run.jobs[row["name"]] = doc
    report = run.run("runai_tui.cli", "report", "--since", "2h", "--json")
    with contextlib.suppress(ValueError):
        run.report = json.loads(report.stdout)


def record_of(doc: dict[str, Any]) -> dict[str, Any] | None:
    text = (doc.get("spec", {}).get("annotations") or {}).get(RECORD)
    with contextlib.suppress(TypeError, ValueError):
        record = json.loads(text or "")
        return record if isinstance(record, dict) else None
    return None


def chain_of(run: Run) -> list[str]:
    """The chain's jobs, oldest first: ROOT and every job whose submission record leads back to
    it by its parents, and every job named like an attempt (ROOT-…) that is no placeholder."""

    def leads_to_root(name: str) -> bool:
        seen: set[str] = set()
        while name not in seen:
            if name == ROOT:
                return True
            seen.add(name)
            record = record_of(run.jobs.get(name, {}))
            if not record or not record.get("parent"):
                return False
            name = str(record["parent"])
        return False

    found = [n for n in run.jobs if n not in run.placeholders
             and (leads_to_root(n) or n.startswith(ROOT + "-"))]  # fmt: skip
    return sorted(found, key=lambda n: str(run.jobs[n].get("createdAt", "")))


def stamp(text: str | None) -> float | None:
    if not text:
        return None
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def container_runs(doc: dict[str, Any]) -> list[tuple[str, float, float]]:
    """(pod, start, end) of every run of every pod's container; a run not ended ends now."""
    found = []
    for pod in doc.get("pods", []):
        for one in pod.get("runs") or []:
            start = stamp(one.get("startedAt"))
            if start is not None:
                found.append((pod["name"], start, stamp(one.get("finishedAt")) or time.time()))
    return found


def check_attempts(run: Run, chain: list[str]) -> list[str]:
    broken = [note for note in run.notes if note.startswith(("stopped early", "submit failed"))]
    if len(chain) > MAX_ATTEMPTS:
        broken.append(f"{len(chain)} submissions in the chain, at most {MAX_ATTEMPTS}: {chain}")
    numbers: dict[int, list[str]] = {}
    for name in chain:
        record = record_of(run.jobs[name])
        if record is None:
            broken.append(f"{name} is named like an attempt of {ROOT} but has no record")
            continue
        numbers.setdefault(int(record.get("attempt") or 1), []).append(name)
    broken += [f"attempt {n} submitted {len(names)} times: {names}"
               for n, names in sorted(numbers.items()) if len(names) > 1]  # fmt: skip
    return broken


def check_live(run: Run, chain: list[str]) -> list[str]:
    """No container run of one attempt overlaps one of another (to the millisecond)."""
    broken = []
    runs = {name: container_runs(run.jobs[name]) for name in chain}
    for i, a in enumerate(chain):
        for b in chain[i + 1 :]:
            for pa, sa, ea in runs[a]:
                hit = [(pb, sb, eb) for pb, sb, eb in runs[b] if sb < ea and sa < eb]
                if hit:
                    pb, sb, eb = hit[0]
                    overlap = min(ea, eb) - max(sa, sb)
                    broken.append(f"{a} and {b} live at once: {pa} ran until "
                                  f"{time.strftime('%H:%M:%S', time.gmtime(ea))} and {pb} "
                                  f"started {overlap:.2f} s before that")  # fmt: skip
                    break
    return broken


def check_watchers(run: Run) -> list[str]:
    """One watcher at a time: the watchers that were not refused never watched at once."""
    broken, spans = [], []
    for i, w in enumerate(run.watchers):
        events = w.events()
        if w.refused():
            if w.proc.returncode != 1:
                broken.append(f"watcher {i} was refused but exited {w.proc.returncode}")
            continue
        if not events:
            continue
        if len(events) > FLOOD_EVENTS:
            counts = Counter(str(e.get("event")) for e in events)
            broken.append(f"watcher {i} said {len(events)} events (a flood): {dict(counts)}")
        end = w.killed or float(events[-1].get("time", w.started))
        spans.append((i, float(events[0].get("time", w.started)), end))
    submitted = [e.get("submitted") for w in run.watchers for e in w.events()
                 if e.get("event") == "submitted"]  # fmt: skip
    if len(submitted) > MAX_ATTEMPTS - 1 or len(set(submitted)) != len(submitted):
        broken.append(f"the watchers said they submitted {submitted}")
    for n, (i, si, ei) in enumerate(spans):
        for j, sj, ej in spans[n + 1 :]:
            if si < ej and sj < ei:
                broken.append(f"watchers {i} and {j} watched {ROOT} at once "
                              f"({min(ei, ej) - max(si, sj):.1f} s)")  # fmt: skip
    return broken


def failed_named(run: Run, name: str) -> str:
    """Who names why NAME failed: the watcher's `failed` event, else diagnose; "" if none."""
    for w in run.watchers:
        for e in w.events():
            verdict = e.get("verdict") or {}
            if e.get("event") == "failed" and e.get("job") == name and verdict.get("codes"):
                return f"watcher: {verdict['codes']}"
    done = run.run("runai_tui.cli", "diagnose", name, "--json")
    with contextlib.suppress(ValueError):
        codes = [f.get("code") for f in json.loads(done.stdout).get("findings", [])
                 if f.get("severity") in ("error", "warning")]  # fmt: skip
        if codes:
            return f"diagnose: {codes}"
    return ""


def check_ends(run: Run, chain: list[str]) -> list[str]:
    """Every job Completed or Failed with its reason named; the watcher ended with its reason."""
    broken = []
    if run.timed_out:
        broken.append(f"the watcher had not ended after {WATCH_SECONDS:g} s")
    for i, w in enumerate(run.watchers):
        if "Traceback" in w.stderr():
            broken.append(f"watcher {i} printed a traceback: {w.stderr().strip()[-300:]}")
    last = [w for w in run.watchers if not w.refused() and w.killed is None]
    if last and not run.timed_out:
        events = last[-1].events()
        end = events[-1] if events else {}
        kind, code = end.get("event"), last[-1].proc.returncode
        if not events:
            said = (last[-1].stderr().strip().splitlines() or ["nothing"])[0]
            broken.append(f"watcher {run.watchers.index(last[-1])} exited {code} before "
                          f"watching, and no watcher watches {ROOT}: {said}")  # fmt: skip
        elif kind not in ("completed", "stopped") or not end.get("text"):
            broken.append(f"the watcher's last event is {kind!r} (exit {code}), not completed "
                          "or stopped with a reason")  # fmt: skip
        elif (code == 0) != (kind == "completed"):
            broken.append(f"the watcher said {kind} and exited {code}")
        if kind == "completed" and chain and run.jobs[chain[-1]]["phase"] != "Completed":
            broken.append(
                f"the watcher said completed, {chain[-1]} is {run.jobs[chain[-1]]['phase']}"
            )
    for name in chain:
        phase = run.jobs[name]["phase"]
        if phase in ("Completed", "Stopped"):
            continue
        if phase != "Failed":
            broken.append(f"{name} is still {phase} after its watcher ended")
        elif not failed_named(run, name):
            broken.append(f"{name} Failed and nothing names why ({run.jobs[name]['message']})")
    return broken


def trainer_records(run: Run) -> list[dict[str, Any]]:
    try:
        text = (run.output_dir / "metrics.jsonl").read_text(errors="replace")
    except OSError:
        return []
    found = []
    for line in text.splitlines():
        with contextlib.suppress(ValueError):
            found.append(json.loads(line))
    return found


def check_steps(run: Run, chain: list[str]) -> list[str]:
    """Steps lost at each resume at most the checkpoint interval, none skipped, and one writer
    at a time: a run's steps follow each other; only a resume (or a fresh start) goes back."""
    broken, last, resumes = [], 0, 0
    for record in trainer_records(run):
        kind, step = record.get("kind"), int(record.get("step") or 0)
        if kind == "resume":
            resumes += 1
            if int(record.get("lost", 0)) > EVERY:
                broken.append(f"resume at step {step} lost {record['lost']} steps (> {EVERY})")
            if step > last:
                broken.append(f"resumed from step {step}, ahead of the last step trained {last}")
            last = step
        elif kind == "train":
            if step == 1 and last > EVERY:
                broken.append(f"started again from step 1 after step {last}: {last} steps lost")
            elif step != last + 1 and step != 1:
                what = "two writers" if step <= last else "skipped steps"
                broken.append(f"{what}: step {step} written after step {last} with no resume")
            last = step
    chain_row: dict[str, Any] = next(
        (r for r in run.report.get("jobs", []) if r.get("job") == ROOT), {}
    )
    lost = chain_row.get("steps_lost")
    if isinstance(lost, int) and lost > EVERY * max(resumes, 1):
        broken.append(f"report: {lost} steps lost over {resumes} resume(s), > {EVERY} each")
    for name in chain:
        for log in (run.jobs_dir / name / "logs").glob("*.log"):
            text = log.read_text(errors="replace")
            if "is in use by another" in text:
                broken.append(f"{log.name}: a run refused, its output dir in use by another run")
    return broken


CHECKS: dict[str, Callable[[Run, list[str]], list[str]]] = {
    "max-attempts": check_attempts,
    "one-live-attempt": check_live,
    "one-watcher": lambda run, chain: check_watchers(run),
    "ends-with-reason": check_ends,
    "steps-and-writers": check_steps,
}


def check(run: Run) -> list[Broken]:
    chain = chain_of(run)
    return [Broken(run.schedule.seed, name, detail)
            for name, fn in CHECKS.items() for detail in fn(run, chain)]  # fmt: skip


def clean(run: Run) -> None:
    """Stop every process of the schedule's jobs (its watchers are stopped already)."""
    if run.jobs_dir.is_dir():
        for jobdir in run.jobs_dir.iterdir():
            with contextlib.suppress(OSError):
                state.kill_job_processes(jobdir, 2.0)


def run_schedule(schedule: Schedule, where: Path, keep: bool = False) -> tuple[Run, list[Broken]]:
    """Run one schedule in a cluster of its own under WHERE/seed-N; the run and what broke."""
    root = where / f"seed-{schedule.seed}"
    if root.exists():
        shutil.rmtree(root)
    run = prepare(schedule, root)
    try:
        drive(run)
        settle(run)
        broken = check(run)
    finally:
        for w in run.watchers:
            if w.proc.poll() is None:
                w.proc.kill()
                w.proc.wait()
        clean(run)
        for w in run.watchers:
            w.keep()
        if not keep:
            shutil.rmtree(root, ignore_errors=True)
    return run, broken


def summary(run: Run, broken: list[Broken]) -> str:
    chain = chain_of(run)
    phases = " → ".join(f"{n} ({run.jobs[n]['phase']})" for n in chain) or "no job"
    faults = "; ".join(f"{k}@{s}: {what}" for k, s, what in run.applied) or "none"
    return (f"seed {run.schedule.seed} [{run.schedule.text()}] {phases}; faults: {faults}; "
            f"{len(broken)} broken")  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    ap.add_argument("--schedules", type=int, default=20, help="how many (default 20)")
    ap.add_argument("--seed", type=int, default=1, help="the first schedule's seed (default 1)")
    ap.add_argument("--keep", action="store_true", help="keep each schedule's state dir")
    ap.add_argument("--quick", action="store_true", help="one or two faults per schedule")
    args = ap.parse_args(argv)
    where = Path(tempfile.mkdtemp(prefix="chaos-"))
    broken: list[Broken] = []
    for seed in range(args.seed, args.seed + args.schedules):
        run, found = run_schedule(draw(seed, args.quick), where, args.keep)
        print(summary(run, found), flush=True)
        for b in found:
            print(b.line(), flush=True)
        broken += found
    print(f"schedules run: {args.schedules}; invariants broken: {len(broken)}"
          + (f"; state kept in {where}" if args.keep else ""))  # fmt: skip
    if not args.keep:
        shutil.rmtree(where, ignore_errors=True)
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
