"""What the installed runai accepts, read from its own cobra `--help`: fakes that play the documented
CLIs (2.18-2.20, 2.25, v3.0, and v1) all print the same ambiguous `Version: 2.25.0`, so these
tests prove that the help decides, not the version line. Cached per executable; a field the
CLI lacks stops `submit` with exit 2 before anything is submitted; CLI v1 is refused up front."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from runai_tui.runai.installed import COMMANDS, cache_path, parse_help
from runai_tui.shapes import cli_generations as G
from runai_tui.shapes.cli_generations import V2_EARLY, V2_LATE
from runai_tui.shapes.models import VERB_PHASES, Phase, normalize_phase
from tests.fake_runai import help_pages
from tests.fakes import fake_runai, rule

RUNAI_TUI = shutil.which("runai-tui", path=str(Path(sys.executable).parent)) or "runai-tui"


@pytest.mark.parametrize(
    ("line", "generation", "version"),
    [
        ("runai version v2.25.3", V2_LATE, "2.25.3"),
        ("v2.21.0", V2_LATE, "2.21.0"),
        ("2.23.7-rc.1", V2_LATE, "2.23.7-rc.1"),
        ("3.0.1", V2_LATE, "3.0.1"),
        ("runai version 2.20.14", V2_EARLY, "2.20.14"),
        ("2.18.0", V2_EARLY, "2.18.0"),
        # v1 and v2 both may print `Version: x`: the number is read, v1 is told by the help.
        ("Version: 2.18.94", V2_EARLY, "2.18.94"),
        ("runai-local 0.1.0 (embedded local cluster)", G.LOCAL_EMULATES, "runai-local 0.1.0"),
        ("development build", None, "development build"),
        ("1.4.2", None, "1.4.2"),
        ("", None, "(no output)"),
    ],
)
def test_classify(line: str, generation: str | None, version: str) -> None:
    cli = G.classify(line)
    assert (cli.generation, cli.version) == (generation, version)


@pytest.mark.parametrize(
    ("value", "generation"),
    [("2.19", V2_EARLY), ("v2.25.3", V2_LATE), ("3.0", V2_LATE), ("v2-early", V2_EARLY)],
)
def test_override_values(value: str, generation: str) -> None:
    assert G.parse_override(value).generation == generation


@pytest.mark.parametrize("value", ["1.9", "v1", "2.10", "banana", ""])
def test_bad_override_values(value: str) -> None:
    with pytest.raises(ValueError):
        G.parse_override(value)


def test_the_documented_help_parses_to_its_flags() -> None:
    early, late = help_pages.CLIS["2.18"]["leaves"], help_pages.CLIS["2.25"]["leaves"]

    def text(leaves: dict, path: tuple[str, ...]) -> str:
        short, flags = leaves[path]
        return f"{short}\n\nUsage:\n  runai {' '.join(path)} [flags]\n\nFlags:\n{flags}\n"

    submit = parse_help(text(early, COMMANDS["submit"]))
    assert submit is not None
    assert {"-e", "--environment", "--master-environment", "--workers", "-g"} <= submit.flags
    assert "--clean-pod-policy" not in submit.flags and "--restart-policy" not in submit.flags
    new = parse_help(text(late, COMMANDS["submit"]))
    assert new is not None and {"--clean-pod-policy", "--priority", "-e"} <= new.flags
    assert "--environment-variable" in new.flags and "--mig-profile" not in new.flags
    # A continuation line of a long description is not a flag.
    assert not any(f.startswith("--*") for f in new.flags)
    listing = parse_help(text(early, COMMANDS["list"]))
    assert listing is not None and {"--limit", "--offset"} <= listing.flags
    assert "--next-token" not in listing.flags
    assert parse_help("Error: something\n") is None
    assert parse_help("runai version 2.25\n") is None


LATE_PROFILE = """\
extends: retinanet-tcp
job_name: late
clean_pod_policy: None
restart_policy: Never
"""


def run(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [RUNAI_TUI, *args], capture_output=True, text=True, env={**os.environ, **env}, timeout=60
    )


def user_profile(name: str, text: str) -> Path:
    folder = Path(os.environ["XDG_CONFIG_HOME"]) / "runai-tui" / "profiles"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.yaml").write_text(text)
    return folder / f"{name}.yaml"


def submits(fake) -> list[list[str]]:
    return [c for c in fake.calls() if c[:3] == ["training", "pytorch", "submit"]]


SUBMITTED = rule("pytorch", "submit", stdout="Creating pytorch training late...\n")


def test_a_field_the_cli_lacks_exits_2_before_submitting(tmp_path: Path) -> None:
    path = user_profile("late", LATE_PROFILE)
    fake = fake_runai(tmp_path, [SUBMITTED], cli="2.18")
    out = run("submit", "--profile", "late", env=fake.env())
    assert out.returncode == 2, out.stderr
    errors = [line for line in out.stderr.splitlines() if line.startswith("error:")]
    lists = "`runai training pytorch submit --help` does not list it"
    # The master's restart policy comes unchanged from retinanet-tcp, which it extends: a
    # shipped protection the submit could go without; the profile's own fields are refused.
    assert errors == [
        f"error: {path}:4: restart_policy: --restart-policy is not in runai 2.25.0: {lists}",
        f"error: {path}:3: clean_pod_policy: --clean-pod-policy is not in runai 2.25.0: {lists}",
    ]
    assert "warning: runai" not in out.stderr  # refused: nothing said about what it would drop
    assert "hint: drop the field for this CLI (--set " in out.stderr
    assert "Traceback" not in out.stderr
    assert not submits(fake)
    asked = fake.help_calls()
    assert asked == [["training", "pytorch", "--help"], ["training", "pytorch", "submit", "--help"]]

    # Asked once: the answers are cached per executable (and its mtime and size).
    again = run("submit", "--profile", "late", env=fake.env())
    assert again.returncode == 2 and fake.help_calls() == asked
    cache = json.loads(cache_path().read_text())
    [entry] = [e for key, e in cache.items() if key.split("\0")[0] == str(fake.path)]
    assert "--clean-pod-policy" not in entry["help"]["submit"]["flags"]

    # Dropping the fields submits, and the 2.18 fake (cobra) accepts every flag sent.
    dropped = run(
        "submit", "--profile", "late", "--set", "clean_pod_policy=", "--set", "restart_policy=",
        "--set", "master_restart_policy=", env=fake.env(),
    )  # fmt: skip
    assert dropped.returncode == 0, dropped.stderr
    assert len(submits(fake)) == 1

    # An updated runai (a new mtime) is asked again: the same version line, 2.25's help.
    fake.set_rules([SUBMITTED], cli="2.25")
    stat = fake.path.stat()
    os.utime(fake.path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
    out = run("submit", "--profile", "late", env=fake.env())
    assert out.returncode == 0, out.stderr
    last = submits(fake)[-1]
    assert last[last.index("--restart-policy") + 1] == "Never"
    assert len(fake.help_calls()) == 4


TCP = Path(__file__).resolve().parents[2] / "profiles" / "retinanet-tcp.yaml"
LOST = (
    "warning: runai 2.25.0 has no --restart-policy, --master-restart-policy: submitting without "
    "restart_policy, master_restart_policy (set by the shipped profile retinanet-tcp), so Run:ai "
    "restarts no failed pod; still protecting the job: torchrun's restarts inside each pod (the "
    "entry script's --max-restarts) and `runai-tui watch JOB --recover`, which submits a failed "
    "job again"
)


def test_the_seed_submits_on_2_18_without_its_restart_policies_and_says_so(
    tmp_path: Path,
) -> None:
    fake = fake_runai(tmp_path, [SUBMITTED], cli="2.18")
    out = run("submit", "--profile", "retinanet-tcp", env=fake.env())
    assert out.returncode == 0, out.stderr
    # One warning about the CLI (lint's own warnings about the profile come first).
    assert [line for line in out.stderr.splitlines() if line.startswith("warning: runai")] == [LOST]
    [sent] = submits(fake)  # the 2.18 fake (cobra) refuses a flag its help does not list
    assert "--restart-policy" not in sent and "--master-restart-policy" not in sent
    assert sent[sent.index("--backoff-limit") + 1] == "3"  # what 2.18 has is kept
    record = _record(sent)
    assert "restart_policy" not in record["data"] and "master_restart_policy" not in record["data"]
    assert record["data"]["backoff_limit"] == 3 and record["sets"] == []

    # A profile extending it, the policies left alone, and the RDMA seed: the same.
    user_profile("mine", "extends: retinanet-tcp\njob_name: mine\nworkers: 1\n")
    for profile in ("mine", "retinanet-rdma"):
        out = run("submit", "--profile", profile, env=fake.env())
        assert out.returncode == 0, out.stderr
        assert LOST in out.stderr  # the policies come from retinanet-tcp in both
    assert len(submits(fake)) == 3


def test_a_sweep_of_the_seed_on_2_18_submits_every_job_and_warns_once(tmp_path: Path) -> None:
    fake = fake_runai(tmp_path, [SUBMITTED], cli="2.18", jobs=[])
    out = run("sweep", "--profile", "retinanet-tcp", "--grid", "workers=1,2", "--name", "sw", "-y",
              env=fake.env())  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert [line for line in out.stderr.splitlines() if line.startswith("warning: runai")] == [LOST]
    sent = submits(fake)
    assert [argv[3] for argv in sent] == ["sw-1", "sw-2"]
    assert not any("--restart-policy" in argv for argv in sent)


@pytest.mark.parametrize(
    "how",
    [
        ("--set", "restart_policy=OnFailure"),  # the shipped value, but asked for
        ("--set", "master_restart_policy=Always"),
    ],
)
def test_a_restart_policy_the_user_sets_is_still_refused_on_2_18(
    tmp_path: Path, how: tuple[str, str]
) -> None:
    fake = fake_runai(tmp_path, [SUBMITTED], cli="2.18")
    out = run("submit", "--profile", "retinanet-tcp", *how, env=fake.env())
    assert out.returncode == 2, out.stderr
    field = how[1].partition("=")[0]
    flag = "--" + field.replace("_", "-")
    errors = [line for line in out.stderr.splitlines() if line.startswith("error:")]
    assert errors == [
        f"error: --set {how[1]}: {field}: {flag} is not in runai 2.25.0: `runai training pytorch "
        "submit --help` does not list it"
    ]
    assert "warning: runai" not in out.stderr and "Traceback" not in out.stderr
    assert not submits(fake)


def _record(argv: list[str]) -> dict:
    """The submission record among the `--annotation KEY=VALUE` pairs of a submit argv."""
    for i, word in enumerate(argv[:-1]):
        key, _, value = argv[i + 1].partition("=")
        if word == "--annotation" and key == "runai-tui.io/submission":
            return json.loads(value)
    raise AssertionError(f"no submission record in {argv}")


@pytest.mark.parametrize("cli", ["2.25", "3.0"])
def test_the_newer_clis_take_every_field_of_the_shipped_profiles(tmp_path: Path, cli: str) -> None:
    user_profile("late", LATE_PROFILE)
    fake = fake_runai(tmp_path, [SUBMITTED], cli=cli)
    for profile in ("late", "retinanet-tcp", "retinanet-rdma"):
        out = run("submit", "--profile", profile, env=fake.env())
        assert out.returncode == 0, out.stderr
    assert len(submits(fake)) == 3 and ["version"] not in fake.calls()


def test_cli_v1_is_refused_before_any_command_is_built(tmp_path: Path) -> None:
    fake = fake_runai(tmp_path, [SUBMITTED], cli="v1")
    for args in (["submit", "--profile", "retinanet-tcp"], ["list"], ["describe", "j"]):
        out = run(*args, env=fake.env())
        assert out.returncode == 2, out.stderr
        errors = [line for line in out.stderr.splitlines() if line.startswith("error:")]
        assert errors == [
            f"error: runai 2.25.0 at {fake.path} is CLI v1 (it has no `runai training` command); "
            "runai-tui needs the runai CLI v2"
        ]
        assert "hint: install the runai CLI v2 from your Run:ai control plane" in out.stderr
    # Never sent a v2 command: only the questions.
    assert fake.calls() == [["version"]]
    assert fake.help_calls() == [["training", "pytorch", "--help"]]


def test_unreadable_help_warns_once_and_the_version_decides(tmp_path: Path) -> None:
    user_profile("late", LATE_PROFILE)
    wrapper = [
        rule("--help", stdout="usage: site-wrapper [args]\n"),
        rule("version", stdout="runai version v2.20.1\n"),
        SUBMITTED,
    ]
    fake = fake_runai(tmp_path, wrapper)
    first = run("submit", "--profile", "late", env=fake.env())
    assert first.returncode == 2
    warned = [line for line in first.stderr.splitlines() if "--help" in line and "warning" in line]
    assert len(warned) == 1 and warned[0].startswith(
        "warning: cannot read `runai training pytorch --help`"
    )
    assert "deciding by the version line: runai 2.20.1 (CLI v2 ≤ 2.20)" in warned[0]
    assert "the help is unreadable and runai 2.20.1 (CLI v2 ≤ 2.20) does not have it" in (
        first.stderr
    )
    second = run("submit", "--profile", "late", env=fake.env())
    assert second.returncode == 2 and "warning: cannot read" not in second.stderr
    # The override wins: nothing is asked, and it says where it came from.
    override = run("submit", "--profile", "late", env={**fake.env(), "RUNAI_TUI_RUNAI_CLI": "2.25"})
    assert override.returncode == 0, override.stderr
    asked = len(fake.help_calls())
    bad = run("submit", "--profile", "late", env={**fake.env(), "RUNAI_TUI_RUNAI_CLI": "x"})
    assert bad.returncode == 2
    assert bad.stderr.startswith("error: RUNAI_TUI_RUNAI_CLI=x: expected a CLI v2 generation")
    assert len(fake.help_calls()) == asked


def test_an_unknown_flag_answer_is_one_line_exit_1(tmp_path: Path) -> None:
    # Help that lists --clean-pod-policy (2.25's), a runai that refuses it after all.
    refuses = rule("submit", stderr="Error: unknown flag: --clean-pod-policy\n", exit=1)
    fake = fake_runai(tmp_path, [refuses], cli="2.25")
    user_profile("late", LATE_PROFILE)
    out = run("submit", "--profile", "late", env=fake.env())
    assert out.returncode == 1
    errors = [line for line in out.stderr.splitlines() if line.startswith("error:")]
    assert errors == [
        "error: runai training pytorch submit does not know the flag --clean-pod-policy "
        "(this runai CLI lacks it)"
    ]


def test_dry_run_asks_nothing(tmp_path: Path) -> None:
    user_profile("late", LATE_PROFILE)
    fake = fake_runai(tmp_path, [], cli="2.18")
    out = run("submit", "--profile", "late", "--dry-run", env=fake.env())
    assert out.returncode == 0 and "--restart-policy Never" in out.stdout
    assert fake.calls() == [] and fake.help_calls() == []


JOBS = [
    {"name": "live", "phase": "Running"},
    {"name": "broke", "phase": "Failed"},
    {"name": "held", "phase": "Stopped"},
]


def test_a_live_or_waiting_job_suspends_and_a_stopped_one_resumes() -> None:
    # The REST phases (docs/runai-cli.md §2.7); the other verbs apply in any phase.
    assert {p for p in Phase if p.allows("suspend")} == {
        Phase.CREATING,
        Phase.INITIALIZING,
        Phase.PENDING,
        Phase.RUNNING,
        Phase.DEGRADED,
        Phase.RESUMING,
        Phase.UPDATING,
    }
    assert {p for p in Phase if p.allows("resume")} == {Phase.STOPPED}
    assert normalize_phase("Suspended").can_resume  # CLI v1's word for it
    assert all(p.allows("delete") for p in Phase)
    assert VERB_PHASES["suspend"] == (
        "suspend applies to running or waiting jobs "
        "(Creating, Degraded, Initializing, Pending, Resuming, Running, Updating)"
    )


def test_suspend_and_resume_only_where_the_cli_has_them_and_the_state_fits(
    tmp_path: Path,
) -> None:
    early = fake_runai(tmp_path / "early", [], cli="2.18", jobs=JOBS)
    out = run("suspend", "live", env=early.env())
    assert out.returncode == 2
    assert out.stderr.splitlines()[0] == (
        "error: suspend: `runai training pytorch suspend` is not in runai 2.25.0: "
        "`runai training pytorch --help` does not list suspend"
    )
    assert early.calls() == [["version"]]  # the message names the version; nothing else ran

    late = fake_runai(
        tmp_path / "late",
        [rule("suspend", stdout="suspended\n"), rule("resume", stdout="resumed\n")],
        cli="2.25",
        jobs=JOBS,
    )
    out = run("suspend", "live", "broke", env=late.env())
    assert out.returncode == 1
    assert "error: broke is Failed: suspend applies to running or waiting jobs" in out.stderr
    assert run("resume", "held", env=late.env()).returncode == 0
    verbs = [c[:4] for c in late.calls() if c[2:3] in (["suspend"], ["resume"])]
    assert verbs == [
        ["training", "pytorch", "suspend", "live"],
        ["training", "pytorch", "resume", "held"],
    ]


def test_the_list_has_every_job_and_names_other_frameworks(tmp_path: Path) -> None:
    sixty = [{"name": f"j-{i:02d}", "phase": "Running", "framework": "PyTorch"} for i in range(60)]
    early = fake_runai(tmp_path / "early", [], cli="2.18", jobs=sixty)
    out = run("list", "--json", env=early.env())
    assert out.returncode == 0, out.stderr
    assert len(json.loads(out.stdout)) == 60  # the CLI's default --limit is 50
    out = run("list", env=early.env())
    assert out.stdout.splitlines()[0].split() == ["NAME", "STATUS", "PROJECT", "PODS", "GPUS"]

    mixed = [*sixty[:1], {"name": "tf", "phase": "Running", "framework": "TensorFlow"}]
    late = fake_runai(tmp_path / "late", [], cli="3.0", jobs=mixed)
    lines = run("list", env=late.env()).stdout.splitlines()
    assert lines[0].split()[-1] == "FRAMEWORK"
    assert lines[1].split()[-1] == "PyTorch" and lines[2].split()[-1] == "TensorFlow"


@pytest.mark.parametrize("cli", ["2.18", "2.25", "3.0"])
def test_the_fakes_refuse_unknown_flags_as_cobra_does(tmp_path: Path, cli: str) -> None:
    fake = fake_runai(tmp_path, [SUBMITTED], cli=cli)

    def call(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(fake.path), *args], capture_output=True, text=True, timeout=30)

    bad = call("training", "pytorch", "submit", "j", "--bogus", "1")
    assert (bad.returncode, bad.stderr) == (1, "Error: unknown flag: --bogus\n")
    short = call("training", "pytorch", "describe", "j", "-z")
    assert (short.returncode, short.stderr) == (1, "Error: unknown shorthand flag: 'z' in -z\n")
    # A value that looks like a flag belongs to the flag before it (pflag): cobra accepts it
    # and the scenario, which has no describe rule, answers (exit 64).
    assert call("training", "pytorch", "describe", "j", "--pod-limit", "-1").returncode == 64
    late_only = call("training", "pytorch", "submit", "j", "--clean-pod-policy", "None")
    assert late_only.returncode == (1 if cli == "2.18" else 0)
    assert call("version").stdout == "Version: 2.25.0\nBuildDate: 2025-01-01T00:00:00Z\n"


def test_info_asks_runai_version_once(tmp_path: Path) -> None:
    # One reader of `runai version` (installed.Capabilities.aversion, cached): the backend's
    # version line and the runai CLI's generation in `info` come from the one answer.
    fake = fake_runai(tmp_path, [rule("version", stdout="runai version v2.20.1\n")])
    out = run("info", "--json", env=fake.env())
    assert out.returncode == 0, out.stderr
    info = json.loads(out.stdout)
    assert info["backend"]["version"] == "runai version v2.20.1"
    assert info["runai_cli"]["label"].startswith("runai 2.20.1")
    assert fake.calls().count(["version"]) == 1
