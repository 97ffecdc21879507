"""The measured start-up paths load only what they need: a structural check of what
`runai-tui submit --dry-run` imports (benchmarks/fig_cli.py times it) and of what the TUI loads
before its first paint (benchmarks/fig_tui_paint.py), not a timing.

The modules below are what these paths leave out (tens of milliseconds, or a whole UI or
framework): the process machinery, the client, the TUI and torch; the other commands' modules
with what they import at their tops (the subcommand table); the screens opened on demand; the
profiles before the first paint (docs/performance.md, Start-up). Plain Python (typing,
dataclasses) is welcome on these paths. Every other import sits at the top of its module: an
import inside a function says why on the line above it (or its own line)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

# Not on the dry-run path: the process machinery, the client, the TUI and torch. (The backend is:
# the dry run shows the executable it runs, found with the environment, PATH and the config.)
HEAVY = [
    "asyncio",
    "subprocess",
    "runai_tui.runai.client",
    "runai_tui.runai.parse",
    "textual",
    "rich",
    "torch",
    # What other commands' modules import (at their tops: entry.py imports only the module of the
    # command that runs).
    "runai_tui.runai.runner",
    "runai_tui.runai.bulk",
    "runai_tui.runai.interactive",
    "runai_tui.runai.pod_logs",
    "runai_tui.knowledge.remedies",
    "runai_tui.knowledge.plan",
    "runai_tui.knowledge.compare",
    "runai_tui.workflows.job_records",
    "runai_tui.knowledge.records.progress",
    "runai_tui.knowledge.diagnose",
    "runai_tui.knowledge.probes.preflight",
    "runai_tui.knowledge.probes.resources",
    "runai_tui.knowledge.records.flight_recorder",
    "runai_tui.workflows.run_sources",
    "runai_tui.workflows.resubmit",
    "runai_tui.tui",
    # The other commands' modules: entry.py imports only the module of the command that runs.
    "runai_tui.cli.job_commands",
    "runai_tui.cli.bulk_commands",
    "runai_tui.cli.diagnose_commands",
    "runai_tui.cli.preflight_commands",
    "runai_tui.cli.ranks_commands",
    "runai_tui.cli.wait_commands",
    "runai_tui.cli.port_forward_commands",
    "runai_tui.cli.top_commands",
    "runai_tui.cli.resubmit_commands",
    "runai_tui.cli.compare_commands",
    "runai_tui.cli.lint_commands",
    "runai_tui.workflows.job_end",
    # The dry run checks no CLI's flags and reads no CLI cache. (It does build the submission
    # record, with json: it prints the argv the submit sends.)
    "runai_tui.runai.installed",
    # The dry run redacts nothing: the secret scanner (detect-secrets, with requests) is for
    # the bundle and the displays of a submission.
    "detect_secrets",
    "runai_tui.util.secret_scan",
]

# Screens the TUI opens on demand: none is loaded before the first paint of the jobs screen.
ON_DEMAND_SCREENS = [
    f"runai_tui.tui.screens.{name}"
    for name in (
        "compare",
        "confirm",
        "describe",
        "help",
        "logs",
        "preflight",
        "profiles",
        "projects",
        "prompt",
        "remedies",
        "submit",
    )
]
# Modules the first paint does not need either, though a module it loads uses them: the
# diagnosis (the background pass starts after the first paint) with its drawing, the preflight,
# the remedies, the submitted-argv reader they use and the compare module it pulls in; the
# profiles; the subcommands.
OFF_FIRST_PAINT = [
    *ON_DEMAND_SCREENS,
    "runai_tui.knowledge.diagnose",
    "runai_tui.knowledge.probes.preflight",
    "runai_tui.knowledge.remedies",
    "runai_tui.tui.health_render",
    "runai_tui.knowledge.submitted",
    "runai_tui.knowledge.compare",
    # The profiles and YAML: the job list needs neither (the client's argv words are in
    # runai_tui/runai/argv.py, the field table is loaded for submit's flags only), and the
    # screens that list or submit profiles load them through the app's `store`.
    "yaml",
    "runai_tui.profiles",
    "runai_tui.runai.command",
    # The subcommands' modules: no subcommand opens the TUI.
    "runai_tui.cli.profile_commands",
    "runai_tui.cli.job_commands",
    # The secret scanner: describe's raw view loads it when it opens.
    "detect_secrets",
    "runai_tui.util.secret_scan",
]


def loaded_after(code: str, modules: list[str]) -> list[str]:
    """Which of MODULES a fresh interpreter has loaded after running CODE."""
    probe = f"{code}import sys\nprint(sorted(m for m in {modules!r} if m in sys.modules))\n"
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, cwd=REPO, check=False
    )
    assert out.returncode == 0, out.stderr
    return ast.literal_eval(out.stdout.strip().splitlines()[-1])


def test_dry_run_imports_none_of_the_heavy_modules() -> None:
    code = (
        "import sys, io, contextlib\n"
        "from runai_tui.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    assert main(['submit', '--profile', 'retinanet-tcp', '--dry-run']) == 0\n"
    )
    assert loaded_after(code, HEAVY) == []


def test_tui_first_paint_imports_no_screen_opened_on_demand() -> None:
    # What `runai-tui` loads up to the jobs screen: the entry point with no subcommand (its
    # parser), the launcher, the app and the jobs screen.
    code = (
        "from runai_tui.cli.entry import build_parser, subcommands_for\n"
        "build_parser(subcommands_for([])).parse_args([])\n"
        "import runai_tui.tui.launch, runai_tui.tui.app, runai_tui.tui.screens.jobs\n"
    )
    assert loaded_after(code, OFF_FIRST_PAINT) == []


def test_runai_local_starts_without_the_supervisor_or_the_spec_builder() -> None:
    # Every call of the local backend (list, describe, logs: what `wait`, `watch` and the TUI
    # poll) starts a runai-local; the supervisor's machinery (sockets, the throttle's thread,
    # the scheduler) is for the detached process a submit starts, which imports it itself, and
    # the spec builder with the PVCs and the config's YAML (over a quarter of a describe's CPU) is for
    # submit and exec.
    code = "import runai_local.cli\n"
    left_out = ["runai_local.supervisor", "runai_local.throttle", "runai_local.jobspec",
                "runai_local.config", "runai_local.pvc", "yaml"]  # fmt: skip
    assert loaded_after(code, left_out) == []


def _function_imports(path: Path) -> list[tuple[int, str]]:
    """(line, source line) of every import inside a function of PATH that gives no reason."""
    lines = path.read_text(encoding="utf-8").splitlines()
    unexplained: list[tuple[int, str]] = []
    for func in ast.walk(ast.parse("\n".join(lines))):
        if not isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for node in ast.walk(func):
            if not isinstance(node, (ast.Import, ast.ImportFrom)):
                continue
            # The reason: on the import's line, or on the line above it or above its run of
            # imports.
            i = node.lineno - 1
            while i > 0 and lines[i - 1].lstrip().startswith(("import ", "from ")):
                i -= 1
            if "#" not in lines[node.lineno - 1] and "#" not in lines[i - 1]:
                unexplained.append((node.lineno, lines[node.lineno - 1].strip()))
    return unexplained


def test_every_import_inside_a_function_says_why() -> None:
    found = [
        f"{path.relative_to(REPO)}:{line}: {text}"
        for package in ("runai_tui", "runai_local", "trainer")
        for path in sorted((REPO / package).rglob("*.py"))
        for line, text in _function_imports(path)
    ]
    assert found == [], "imports belong at the top of the module, or say why not:\n" + "\n".join(
        found
    )


# Imports inside functions stay few: each one left keeps a layer's rule or 20 ms off a path a
# user waits for (docs/performance.md, "Imports inside functions").
FUNCTION_IMPORTS_CEILING = 40


def test_imports_inside_functions_stay_under_the_ceiling() -> None:
    inside = {
        (path, node.lineno)
        for path in sorted((REPO / "runai_tui").rglob("*.py"))
        for func in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef))
        for node in ast.walk(func)
        if isinstance(node, (ast.Import, ast.ImportFrom))
    }
    assert len(inside) <= FUNCTION_IMPORTS_CEILING, sorted(
        f"{path.relative_to(REPO)}:{line}" for path, line in inside
    )
