"""Figure `job-table`: a refresh of the jobs table at 5,000 jobs (runai_tui/tui/widgets/
job_table.py, `update_jobs`) vs keyed `update_cell` on a plain DataTable doing the same changes.

The yardstick fits the columns to their cells as ours does (`update_width=True`); the same
without width updates is reported as the floor. Each sample is a headless app showing 5,000 jobs; the refresh brings a realistic change set
(ages moved on by 90 s, 5% new phases, 1% jobs gone, 1% new) and is timed up to the repaint that
follows. Meanwhile a 5 ms timer ticks on the event loop: its largest gap is how long a key press
would have waited (the "input never blocked" part). Interleaved, medians; each sample runs in
a process of its own, so neither side's heap (the yardstick's samples allocate for seconds)
slows the other's.

Two wall times: the figure, `paint`, ends when the table's repaint is drawn (the last
`render_lines` of the table): the latency a user sees. `wall` ends when Pilot's `pause()`
returns, which waits for the process to use under 1 ms of CPU in a 20 ms slice: it holds at
least one such slice of sleeping, and on a loaded machine (or when the 5 ms ticker's own CPU
tips a slice over) several, so it is reported beside as an upper bound. Each
sample starts from a collected heap (`gc.collect()` after the set-up, on both sides): a full
collection of the garbage earlier samples left would otherwise land in random timed windows;
`full_gc` reports what one full collection over the loaded app costs.
Targets: the refresh under 0.1 s, and the loop never blocked for 0.1 s or more."""

from __future__ import annotations

import asyncio
import gc
import json
import subprocess
import sys
import time
from datetime import datetime, timedelta, timezone
from typing import Any

from benchmarks.harness import Figure, child_env, interleave, median, timed_run

NAME = "job-table"
TITLE = "jobs table refresh at 5,000 jobs"
LIMIT_S = 0.1
NOW = datetime(2026, 11, 22, 12, 0, 0, tzinfo=timezone.utc)


def make_jobs(count: int, changed: bool) -> list[Any]:
    from runai_tui.models import Job, Phase

    phases = [Phase.RUNNING, Phase.PENDING, Phase.COMPLETED, Phase.FAILED, Phase.RUNNING]
    jobs = []
    for i in range(count):
        if changed and i % 100 == 0:
            continue  # 1% gone
        phase = phases[i % len(phases)]
        if changed and i % 20 == 1:
            phase = Phase.COMPLETED if phase is not Phase.COMPLETED else Phase.RUNNING
        jobs.append(
            Job(
                name=f"job-{i:05d}",
                phase=phase,
                project="team-a",
                type="Training",
                running_pods=3 if phase is Phase.RUNNING else 0,
                requested_pods=3,
                gpus=2.0,
                created=NOW - timedelta(seconds=37 * i),
            )
        )
    if changed:
        jobs += [
            Job(name=f"new-{i:04d}", phase=Phase.PENDING, project="team-a", created=NOW)
            for i in range(count // 100)
        ]
    return jobs


async def refresh_once(kind: str, count: int) -> dict[str, float]:
    """Wall seconds from the refresh call to Pilot's pause and to the table's repaint, the largest
    event-loop gap meanwhile, and the CPU seconds of the call and of the repaint (what they cost
    on an idle machine)."""
    from textual.app import App, ComposeResult
    from textual.widgets import DataTable

    from runai_tui.tui.widgets.job_table import COLUMNS, JobTable, job_cells

    before, after = make_jobs(count, False), make_jobs(count, True)
    now0, now1 = NOW, NOW + timedelta(seconds=90)

    class Bench(App[None]):
        def compose(self) -> ComposeResult:
            yield JobTable() if kind == "ours" else DataTable(cursor_type="row")

    shown: dict[str, dict[str, object]] = {}
    fit = kind == "plain"  # "plain-nofit": the floor, columns not fitted to their cells

    def plain_update(table: DataTable, jobs: list[Any], now: datetime) -> None:
        """The yardstick: keyed update_cell of what changed, remove gone, add new (no sort)."""
        wanted = {job.name: job_cells(job, now) for job in jobs}
        for name in [n for n in shown if n not in wanted]:
            table.remove_row(name)
            del shown[name]
        for name, cells in wanted.items():
            old = shown.get(name)
            if old is None:
                table.add_row(*(cells[key] for key, _ in COLUMNS), key=name)
            else:
                for column, value in cells.items():
                    if old[column] != value:
                        table.update_cell(name, column, value, update_width=fit)
            shown[name] = cells

    app = Bench()
    async with app.run_test(size=(120, 40)) as pilot:
        table = app.query_one(DataTable)
        if kind == "ours":
            table.update_jobs(before, now0)  # type: ignore[attr-defined]
        else:
            for key, label in COLUMNS:
                table.add_column(label, key=key)
            plain_update(table, before, now0)
        await pilot.pause()
        await pilot.pause()
        gc.collect()  # the set-up's garbage is not the refresh's
        full_gc = time.perf_counter()
        gc.collect()  # nothing left to free: what a full collection of this app costs
        full_gc = time.perf_counter() - full_gc
        painted: list[float] = []
        render_lines = table.render_lines

        def timed_render_lines(crop: Any) -> Any:
            lines = render_lines(crop)
            painted.append(time.perf_counter())
            return lines

        table.render_lines = timed_render_lines  # type: ignore[method-assign]
        ticks: list[float] = []
        timer = app.set_interval(0.005, lambda: ticks.append(time.perf_counter()))
        await asyncio.sleep(0.05)
        start, cpu0 = time.perf_counter(), time.process_time()
        if kind == "ours":
            table.update_jobs(after, now1)  # type: ignore[attr-defined]
        else:
            plain_update(table, after, now1)
        cpu1 = time.process_time()
        await pilot.pause()  # the repaint
        elapsed, cpu2 = time.perf_counter() - start, time.process_time()
        await asyncio.sleep(0.05)
        timer.stop()
        if table.row_count != len(after):
            raise RuntimeError(f"{kind}: {table.row_count} rows, expected {len(after)}")
    around = [t for t in ticks if t >= start - 0.05]
    gap = max((b - a for a, b in zip(around, around[1:], strict=False)), default=0.0)
    paint = max((t for t in painted if start <= t <= start + elapsed), default=start + elapsed)
    return {
        "wall": elapsed,
        "paint": paint - start,
        "gap": gap,
        "cpu_call": cpu1 - cpu0,
        "cpu_repaint": cpu2 - cpu1,
        "full_gc": full_gc,
    }


def measure(repeat: int | None = None, quick: bool = False, **_: Any) -> Figure:
    repeat = repeat or (1 if quick else 5)
    count = 200 if quick else 5000
    gaps: dict[str, list[float]] = {"ours": [], "yardstick": []}
    cpu: dict[str, list[dict[str, float]]] = {"ours": [], "yardstick": [], "floor": []}

    def sample(kind: str, side: str) -> float:
        argv = [sys.executable, "-m", "benchmarks.fig_job_table", kind, str(count)]
        run = timed_run(argv, child_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        if run.code != 0:
            raise RuntimeError(f"job-table sample {kind} failed (exit {run.code})")
        result = json.loads(run.stdout)
        gaps[side].append(result["gap"])
        cpu[side].append(result)
        return result["paint"]

    a, b = interleave(lambda: sample("ours", "ours"), lambda: sample("plain", "yardstick"), repeat)
    gaps["floor"] = []
    floor = [sample("plain-nofit", "floor") for _ in range(max(1, repeat // 2))]
    fig = Figure(
        NAME,
        TITLE,
        "s",
        ours=median(a),
        yardstick=median(b),
        note=f"yardstick: keyed update_cell(update_width=True) on a DataTable; {count:,} jobs; "
        f"without update_width (columns not fitted): {median(floor) * 1000:.0f} ms",
        details={
            "ours_samples": a,
            "yardstick_samples": b,
            "ours_max_loop_gap_s": max(gaps["ours"]),
            "yardstick_max_loop_gap_s": max(gaps["yardstick"]),
            # update_cell without update_width: columns keep their width (not the same result)
            "floor_s": median(floor),
            "floor_loop_gap_s": median(gaps["floor"]),
        },
    )

    # The absolute target is judged on wall time to the repaint and on CPU time (what the
    # refresh costs: on a shared machine wall time is partly waiting for a core).
    def cpu_median(side: str, key: str) -> float:
        return median([r[key] for r in cpu[side]])

    ours_pause = cpu_median("ours", "wall")
    yard_pause = cpu_median("yardstick", "wall")

    ours_cpu = cpu_median("ours", "cpu_call") + cpu_median("ours", "cpu_repaint")
    yard_cpu = cpu_median("yardstick", "cpu_call") + cpu_median("yardstick", "cpu_repaint")
    ours_block = max(cpu_median("ours", "cpu_call"), cpu_median("ours", "cpu_repaint"))
    yard_block = max(cpu_median("yardstick", "cpu_call"), cpu_median("yardstick", "cpu_repaint"))
    gap = median(gaps["ours"])
    fig.details.update(
        ours_cpu_s=ours_cpu,
        yardstick_cpu_s=yard_cpu,
        ours_cpu_call_s=cpu_median("ours", "cpu_call"),
        ours_cpu_repaint_s=cpu_median("ours", "cpu_repaint"),
        ours_wall_loop_gap_s=gap,
        yardstick_wall_loop_gap_s=median(gaps["yardstick"]),
        ours_pause_s=ours_pause,
        yardstick_pause_s=yard_pause,
        ours_pause_samples=[r["wall"] for r in cpu["ours"]],
        ours_cpu_samples=[r["cpu_call"] + r["cpu_repaint"] for r in cpu["ours"]],
        full_gc_s=cpu_median("ours", "full_gc"),
    )
    fig.target = f"ratio <= 1, wall and CPU < {LIMIT_S:g} s"
    wall_ok = fig.ours is not None and fig.ours < LIMIT_S
    fig.met = fig.ratio is not None and fig.ratio <= 1 and wall_ok and ours_cpu < LIMIT_S
    fig.details["extra_rows"] = {
        "job-table to Pilot's idle (wall)": {
            "ours": f"{ours_pause * 1000:.0f} ms",
            "yardstick": f"{yard_pause * 1000:.0f} ms",
            "ratio": ours_pause / max(yard_pause, 1e-9),
            "target": "(upper bound)",
            "met": None,
        },
        "job-table refresh CPU": {
            "ours": f"{ours_cpu * 1000:.0f} ms",
            "yardstick": f"{yard_cpu * 1000:.0f} ms",
            "ratio": ours_cpu / max(yard_cpu, 1e-9),
            "target": f"< {LIMIT_S * 1000:.0f} ms",
            "met": ours_cpu < LIMIT_S,
        },
        "job-table loop blocked (CPU)": {
            "ours": f"{ours_block * 1000:.0f} ms",
            "yardstick": f"{yard_block * 1000:.0f} ms",
            "ratio": ours_block / max(yard_block, 1e-9),
            "target": f"< {LIMIT_S * 1000:.0f} ms",
            "met": ours_block < LIMIT_S,
        },
        "job-table loop gap (wall)": {
            "ours": f"{gap * 1000:.0f} ms",
            "yardstick": f"{median(gaps['yardstick']) * 1000:.0f} ms",
            "ratio": gap / max(median(gaps["yardstick"]), 1e-9),
            "target": "(load-dependent)",
            "met": None,
        },
    }
    return fig


if __name__ == "__main__":  # one sample, in a process of its own: `kind count` -> JSON
    print(json.dumps(asyncio.run(refresh_once(sys.argv[1], int(sys.argv[2])))))
