"""The layering rules: the core never imports Textual; headless commands load neither Textual nor
torch; the trainer imports nothing from runai_tui; faces never spawn processes themselves; only
runai/backend.py knows the local cluster's package; asyncio spawns happen only in the core's
runner; the `runai` plumbing (runai_tui/runai/) and the operator's knowledge
(runai_tui/knowledge/) never import each other; nothing forks this process; lint and preflight
share the findings module without importing diagnose; profiles and the settings import nothing
from the plumbing; no module in runai_tui/ or trainer/ is over 700 lines."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def python_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*.py") if "__snapshots__" not in p.parts)


def test_core_and_local_cluster_never_import_textual() -> None:
    tui = REPO / "runai_tui" / "tui"
    offenders = [
        (str(p), m)
        for p in python_files(REPO / "runai_tui") + python_files(REPO / "runai_local")
        if tui not in p.parents
        for m in imported_modules(p)
        if m.split(".")[0] in ("textual", "rich")
    ]
    assert offenders == []


def test_trainer_imports_nothing_from_runai_tui() -> None:
    files = python_files(REPO / "trainer")
    offenders = [
        (str(p), m) for p in files for m in imported_modules(p) if m.startswith("runai_tui")
    ]
    assert offenders == []


def test_faces_do_not_spawn_processes_themselves() -> None:
    faces = [*python_files(REPO / "runai_tui" / "cli"), *python_files(REPO / "runai_tui" / "tui")]
    offenders = [
        (str(p), m)
        for p in faces
        if p.exists()
        for m in imported_modules(p)
        if m in ("subprocess", "pty", "asyncio.subprocess")
    ]
    assert offenders == []


def test_headless_commands_load_neither_textual_nor_torch() -> None:
    code = (
        "import sys, io, contextlib\n"
        "from runai_tui.cli import main\n"
        "buf = io.StringIO()\n"
        "with contextlib.redirect_stdout(buf):\n"
        "    assert main(['submit', '--profile', 'retinanet-tcp', '--dry-run']) == 0\n"
        "    assert main(['profiles', 'list']) == 0\n"
        "    assert main(['profiles', 'validate']) == 0\n"
        "    assert main(['--backend', 'local', 'list', '--json']) == 0\n"
        "    assert main(['diagnose', '--log', 'tests/core/diagnose_logs/ib-ok.log']) == 0\n"
        "import runai_tui.runai.client, runai_tui.runai.backend, runai_local.cli\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('textual', 'torch', 'rich'))\n"
        "print(bad)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "[]"


def test_only_backend_selection_knows_the_local_cluster_package() -> None:
    # The core talks to runai-local through its command line; only backend.py locates it.
    local = REPO / "runai_local"
    allowed = {REPO / "runai_tui" / "runai" / "backend.py"}
    offenders = [
        (str(p), m)
        for p in python_files(REPO / "runai_tui") + python_files(REPO / "trainer")
        if local not in p.parents and p not in allowed
        for m in imported_modules(p) | relative_imports(p)
        if m == "runai_local" or m.startswith("runai_local.") or m.startswith(".local")
    ]
    assert offenders == []


def relative_imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), str(path))
    return {
        "." * node.level + (node.module or "")
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.level
    }


# asyncio's process APIs, high level and low level (loop.subprocess_exec).
ASYNC_SPAWNS = {
    "create_subprocess_exec",
    "create_subprocess_shell",
    "subprocess_exec",
    "subprocess_shell",
}


def asyncio_spawns(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(), str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in ASYNC_SPAWNS:
            found.append(node.attr)
        elif isinstance(node, ast.ImportFrom):
            found += [a.name for a in node.names if a.name in ASYNC_SPAWNS]
        elif isinstance(node, ast.Name) and node.id in ASYNC_SPAWNS:
            found.append(node.id)
    return found


def test_asyncio_spawns_only_in_the_core_runner() -> None:
    runner = REPO / "runai_tui" / "runai" / "runner.py"
    assert asyncio_spawns(runner)  # the rule checks something real
    offenders = [
        (str(p), name)
        for p in python_files(REPO / "runai_tui") + python_files(REPO / "trainer")
        if p != runner
        for name in asyncio_spawns(p)
    ]
    assert offenders == []


def test_plumbing_and_knowledge_stay_apart() -> None:
    # The plumbing runs `runai` and parses what it prints; the knowledge judges profiles, records
    # and log lines. Either can change without the other: neither imports the other.
    plumbing, knowledge = REPO / "runai_tui" / "runai", REPO / "runai_tui" / "knowledge"
    assert python_files(plumbing) and python_files(knowledge)
    offenders = [
        (str(p), m)
        for folder, other in ((plumbing, "runai_tui.knowledge"), (knowledge, "runai_tui.runai"))
        for p in python_files(folder)
        for m in imported_modules(p)
        if m == other or m.startswith(other + ".")
    ]
    assert offenders == []


def test_profiles_import_nothing_from_runai() -> None:
    # The profile field table is read by the plumbing (argv, the CLI generation check), never
    # the reverse: the generations' names are in the leaf runai_tui/shapes/cli_generations.py, so there
    # is no circle, not even through an import inside a function.
    files = python_files(REPO / "runai_tui" / "profiles")
    assert files
    offenders = []
    for p in files:
        for node in ast.walk(ast.parse(p.read_text(), str(p))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            else:
                continue
            offenders += [
                (str(p), n) for n in names if n.startswith(("runai_tui.runai", "runai_local"))
            ]
    assert offenders == []
    leaf = imported_modules(REPO / "runai_tui" / "shapes" / "cli_generations.py")
    assert not any(m.startswith("runai_tui") for m in leaf)


def test_profiles_import_nothing_from_knowledge() -> None:
    # Profiles sit below the operator's knowledge, which reads them: `--set trainer.NAME=VALUE`
    # takes the trainer's flags from the leaf runai_tui/trainer_flags/, which imports neither.
    files = python_files(REPO / "runai_tui" / "profiles")
    offenders = [
        (str(p), m)
        for p in files
        for m in imported_modules(p) | relative_imports(p)
        if m.startswith(("runai_tui.knowledge", ".knowledge", "..knowledge"))
    ]
    assert offenders == []
    assert "runai_tui.trainer_flags" in imported_modules(REPO / "runai_tui/profiles/overrides.py")
    leaf = {
        m for p in python_files(REPO / "runai_tui" / "trainer_flags") for m in imported_modules(p)
    }
    assert {m for m in leaf if m.startswith("runai_tui")} <= {
        "runai_tui.shapes.errors",
        "runai_tui.trainer_flags.table",
    }


def test_the_settings_import_nothing_from_runai() -> None:
    # The settings sit below the plumbing: every command reads them, and they check a `runai_cli`
    # value with the leaf runai_tui/shapes/cli_generations.py, not with the plumbing that asks the CLI.
    config = REPO / "runai_tui" / "shapes" / "config.py"
    imported = imported_modules(config) | relative_imports(config)
    assert "runai_tui.shapes.cli_generations" in imported  # the rule checks something real
    offenders = [m for m in imported if m.startswith(("runai_tui.runai", ".runai"))]
    assert offenders == []


def test_only_the_launcher_imports_the_app() -> None:
    # The app imports its screens and helpers; they take what they need (a client, Textual's
    # App, the ForwardsHost and TuiHost protocols) instead of importing it back, not even for
    # types. The launcher starts it.
    tui = REPO / "runai_tui" / "tui"
    importers = sorted(
        str(p.relative_to(tui))
        for p in python_files(tui)
        if "runai_tui.tui.app" in imported_modules(p)
    )
    assert importers == ["launch.py"]


BRIDGES = re.compile(
    r"asyncio\.(run|to_thread|new_event_loop|run_coroutine_threadsafe)\(|"
    r"threading\.Thread\(|ThreadPoolExecutor\(|run_until_complete\("
)


def test_one_bridge_from_sync_to_async() -> None:
    # Sync code reaches the async core one way: runner.run_sync, iterate_sync or
    # run_in_background (docs/contracts.md "From sync to async"). The local cluster is its own
    # executables, whose servers run their own loop.
    runner = REPO / "runai_tui" / "runai" / "runner.py"
    local = REPO / "runai_local"
    offenders = [
        (str(p.relative_to(REPO)), match.group(0))
        for p in python_files(REPO / "runai_tui")
        if p != runner and local not in p.parents
        for match in BRIDGES.finditer(p.read_text())
    ]
    assert offenders == []


def attributes_and_imports(path: Path) -> set[str]:
    """Every attribute name used and every name imported in a module."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Attribute):
            names.add(node.attr)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names.update(alias.name for alias in node.names)
            names.add(getattr(node, "module", None) or "")
    return names


def test_no_module_forks_this_process() -> None:
    # Work runs in one process: no hand-made fork pools, no process pools.
    forks = {"fork", "forkpty", "ProcessPoolExecutor", "multiprocessing"}
    offenders = [
        (str(p), name)
        for p in python_files(REPO / "runai_tui")
        for name in attributes_and_imports(p)
        if name.split(".")[0] in forks
    ]
    assert offenders == []


def test_lint_and_preflight_share_findings_without_importing_diagnose() -> None:
    knowledge = REPO / "runai_tui" / "knowledge"
    for name in ("lint/checks.py", "probes/preflight.py"):
        modules = imported_modules(knowledge / name)
        assert "runai_tui.knowledge.findings" in modules, name
        assert not any(m.startswith("runai_tui.knowledge.diagnose") for m in modules), name


def test_no_module_in_runai_tui_or_the_trainer_is_over_700_lines() -> None:
    sizes = {
        str(p): len(p.read_text().splitlines())
        for package in ("runai_tui", "runai_local", "trainer")
        for p in python_files(REPO / package)
    }
    assert {p: n for p, n in sizes.items() if n > 700} == {}


def test_reads_that_run_together_go_through_gather_all() -> None:
    # A bare asyncio.gather leaves the others running when one fails, and the loop's end then
    # closes their log streams out of order ("aclose(): asynchronous generator is already
    # running"): runai_tui/util/aio.py's gather_all cancels and ends them first (docs/contracts.md).
    allowed = {
        "runai_tui/util/aio.py",  # gather_all itself, waiting for the cancelled
        "runai_tui/runai/pod_logs.py",  # waits for its own cancelled pumps (return_exceptions)
        "runai_local/portforward.py",  # runai-local's relay: its own executable and loop
    }

    names = {"gather", "TaskGroup"}

    def gathers(node: ast.AST) -> bool:
        if isinstance(node, ast.Attribute) and node.attr in names:
            return isinstance(node.value, ast.Name) and node.value.id == "asyncio"
        if isinstance(node, ast.ImportFrom) and node.module == "asyncio":
            return bool(names & {alias.name for alias in node.names})
        return False

    offenders = [
        rel
        for p in python_files(REPO / "runai_tui")
        if (rel := str(p.relative_to(REPO))) not in allowed
        and any(gathers(node) for node in ast.walk(ast.parse(p.read_text(), str(p))))
    ]
    assert offenders == []


def _top_level_imports(path: Path, package: str) -> set[str]:
    """The project modules a module imports when it is loaded: its module-level imports, not those
    inside functions or under `if TYPE_CHECKING`. `from P import name` counts as P.name when that
    is a module, else as P."""
    tree = ast.parse(path.read_text(), str(path))
    found: set[str] = set()

    def visit(nodes: list[ast.stmt]) -> None:
        for node in nodes:
            if isinstance(node, ast.If):
                if not (isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"):
                    visit(node.body)
                    visit(node.orelse)
            elif isinstance(node, ast.Try):
                visit(node.body)
            elif isinstance(node, ast.Import):
                found.update(a.name for a in node.names if a.name.split(".")[0] == package)
            elif (
                isinstance(node, ast.ImportFrom)
                and node.level == 0
                and (node.module or "").split(".")[0] == package
            ):
                found.update(f"{node.module}.{a.name}" for a in node.names)
                found.add(f"{node.module}.*")  # the package itself, when a name is no module

    visit(tree.body)
    return found


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@pytest.mark.parametrize("package", ["runai_tui", "runai_local", "trainer"])
def test_no_import_circle(package: str) -> None:
    # A circle makes the import order matter and hides which layer leans on which: none anywhere.
    modules = {_module_name(p): p for p in python_files(REPO / package)}

    def targets(imported: set[str]) -> list[str]:
        # `from P import a, b`: the modules a and b; P itself only for a name that is no module.
        out = {m for m in imported if m in modules}
        for star in (m for m in imported if m.endswith(".*")):
            pkg = star[:-2]
            named = {m for m in imported if m.rpartition(".")[0] == pkg and not m.endswith("*")}
            if pkg in modules and any(m not in modules for m in named):
                out.add(pkg)
        return sorted(out)

    graph = {
        name: [m for m in targets(_top_level_imports(path, package)) if m != name]
        for name, path in modules.items()
    }
    circles: list[list[str]] = []
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []

    def strongconnect(v: str) -> None:  # Tarjan: every strongly connected component over one
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                strongconnect(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    for name in graph:
        if name not in index:
            strongconnect(name)
    assert circles == [], "\n".join(" <-> ".join(c) for c in circles)


def test_knowledge_reads_facts_and_calls_no_client() -> None:
    # knowledge/ is pure functions of facts: no coroutine, no client, nothing from the layers that
    # run it (the passes that fetch logs, describe or exec are workflows/).
    knowledge = REPO / "runai_tui" / "knowledge"
    offenders = []
    for p in python_files(knowledge):
        tree = ast.parse(p.read_text(), str(p))
        if any(isinstance(n, ast.AsyncFunctionDef | ast.Await) for n in ast.walk(tree)):
            offenders.append((str(p.relative_to(REPO)), "async"))
        up = ("runai_tui.runai", "runai_tui.workflows", "runai_tui.cli", "runai_tui.tui")
        offenders += [
            (str(p.relative_to(REPO)), m) for m in imported_modules(p) if m.startswith(up)
        ]
    assert offenders == []


def test_the_redaction_is_a_leaf() -> None:
    # profiles/ (lint's secret-in-env), the submission record, knowledge/, the bundle and both
    # faces import the one redaction: it imports nothing of theirs, and its scanner only
    # detect-secrets.
    redaction = imported_modules(REPO / "runai_tui" / "util" / "redaction.py")
    scanner = imported_modules(REPO / "runai_tui" / "util" / "secret_scan.py")
    assert "runai_tui.util" in redaction  # the scanner, loaded on demand
    assert {m for m in redaction | scanner if m.startswith("runai_tui")} == {"runai_tui.util"}
    assert any(m.startswith("detect_secrets") for m in scanner)
