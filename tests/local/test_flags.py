"""The runai-local flag parser: pflag syntax, cobra-style errors, and agreement with the builder."""

from __future__ import annotations

import pytest

from runai_local import flags as F
from runai_local import jobspec
from runai_local.config import LocalConfig
from runai_local.flags import FlagError
from tests.local.conftest import run_local


def parse_submit(*args: str) -> F.Parsed:
    return F.parse(list(args), [*F.SUBMIT_FLAGS, *F.GLOBAL_FLAGS])


def test_long_short_equals_and_repeated_forms() -> None:
    p = parse_submit(
        "job",
        "--workers=2",
        "-g",
        "1",
        "-pteam-a",
        "-e",
        "A=1",
        "--environment-variable",
        "B=x=y",
        "--existing-pvc",
        "claimname=c,path=/data",
        "--large-shm",
        "--command",
        "--",
        "python3",
        "-m",
        "trainer",
        "--lr",
        "1",
    )
    assert p.positionals == ["job"]
    assert p["workers"] == 2 and p["gpu-devices-request"] == 1 and p["project"] == "team-a"
    assert p["environment-variable"] == ["A=1", "B=x=y"]
    assert p["large-shm"] is True and p["command"] is True
    assert p.rest == ["python3", "-m", "trainer", "--lr", "1"]


def test_combined_bool_shorthands_and_bool_values() -> None:
    p = F.parse(["job", "-it", "--", "ls"], [*F.EXEC_FLAGS, *F.GLOBAL_FLAGS])
    assert p["stdin"] and p["tty"] and p.rest == ["ls"]
    p = parse_submit("--large-shm=false", "--command=true")
    assert p["large-shm"] is False and p["command"] is True


def test_negative_value_is_taken_as_the_flags_argument() -> None:
    p = F.parse(["job", "--tail", "-1"], [*F.LOGS_FLAGS, *F.GLOBAL_FLAGS])
    assert p["tail"] == -1


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--foo"], "unknown flag: --foo"),
        (["--environment", "A=1", "--bogus=1"], "unknown flag: --bogus"),
        (["-x"], "unknown shorthand flag: 'x' in -x"),
        (["--workers", "two"], 'invalid argument "two" for "--workers" flag'),
        (["--image"], "flag needs an argument: --image"),
        (["--preemptibility", "maybe"], "must be one of: preemptible, non-preemptible"),
        (["--restart-policy", "Sometimes"], "must be one of: Always, OnFailure, Never, ExitCode"),
        (["-g", "-1"], "must be a non-negative integer"),
        (["--termination-grace-period", "5 s"], 'time: unknown unit " s" in duration "5 s"'),
        (["--termination-grace-period", "banana"], 'time: invalid duration "banana"'),
        (["--termination-grace-period", "5"], 'time: missing unit in duration "5"'),
        (["--termination-grace-period", "-5s"], 'time: invalid duration "-5s"'),
        (["--termination-grace-period", "nan"], 'time: invalid duration "nan"'),
    ],
)
def test_bad_flags_raise_cobra_style_errors(args: list[str], message: str) -> None:
    with pytest.raises(FlagError) as info:
        parse_submit("job", *args)
    assert message in str(info.value)


def test_every_documented_submit_flag_is_accepted() -> None:
    # docs/runai-cli.md §1.3 (v2.25): a sample of each kind, all in one submit line.
    argv = [
        "job", "--annotation", "a=b", "--label", "team=vision", "--extended-resource",
        "openshift.io/mellanoxnics=1", "--capability", "IPC_LOCK", "--node-pools", "a",
        "--node-pools", "b", "--large-shm", "--run-as-uid", "2000", "--run-as-gid", "2000",
        "--working-dir", "/w", "-g", "1", "--master-gpu-devices-request", "1",
        "--cpu-core-request", "0.5", "--cpu-core-limit", "2", "--cpu-memory-request", "3846",
        "--cpu-memory-limit", "8996", "--preemptibility", "preemptible", "--restart-policy",
        "Never", "--master-restart-policy", "Never", "--backoff-limit", "0",
        "--clean-pod-policy", "None", "-i", "img:1", "--image-pull-policy", "IfNotPresent",
        "-p", "proj", "--supplemental-groups", "1,2", "--toleration", "operator=Exists",
        "--priority", "high", "--master-args", "-a b", "--min-replicas", "1",
        "--max-replicas", "2", "--no-master", "--attach", "--tty", "--stdin",
        "--wait-for-submit", "1m", "--nfs", "server=s,path=/p,mountpath=/m",
    ]  # fmt: skip
    p = parse_submit(*argv, "--command", "--", "true")
    assert p["supplemental-groups"] == [1, 2]
    assert p["node-pools"] == ["a", "b"]
    assert p.rest == ["true"]


def test_builder_output_for_every_shipped_profile_parses_here(repo_root, tmp_path) -> None:
    """The argv builder and this parser are the two places that spell flags: they must agree."""
    command = pytest.importorskip("runai_tui.runai.command")
    profiles = pytest.importorskip("runai_tui.profiles")
    store = profiles.ProfileStore([repo_root / "profiles"])
    names = store.names()
    assert "retinanet-local" in names
    for name in names:
        argv = command.build_submit_argv(store.load(name))
        assert argv[:4] == ["runai", "training", "pytorch", "submit"]
        parsed = parse_submit(*argv[4:])
        assert parsed.positionals == [argv[4]], name
        assert parsed.rest, f"{name}: no command after --"
        # ... and mean the same: the job this cluster would run is the profile's job.
        profile = store.load(name)
        spec, _mounts = jobspec.build_spec(parsed, LocalConfig(pvc_root=tmp_path), argv, tmp_path)
        assert len(spec["pods"]) == profile.workers + 1
        assert [p["gpus"] for p in spec["pods"]][1:] == [profile.gpus] * profile.workers
        assert spec["pods"][1]["env"] == {
            k: str(v).replace("/data", str(tmp_path / "project-001"))
            for k, v in profile.env.items()
        }
        words = [*profile.command, *profile.args]
        local = [w.replace("/data", str(tmp_path / "project-001")) for w in words]
        assert spec["pods"][0]["argv"] == local
        assert spec["workingDir"] == profile.working_dir.replace(
            "/data", str(tmp_path / "project-001")
        )


def test_cli_rejects_unknown_flags_verbs_and_extra_names() -> None:
    cases = [
        (["training", "pytorch", "submit", "j", "--nope", "--", "true"], "unknown flag: --nope"),
        (["training", "list", "--jsn"], "unknown flag: --jsn"),
        (["training", "pytorch", "logs", "j", "-z"], "unknown shorthand flag: 'z' in -z"),
        (["training", "pytorch", "frobnicate"], 'unknown command "frobnicate"'),
        (["trainings"], 'unknown command "trainings" for "runai-local"'),
        (["training", "pytorch", "submit", "a", "b", "--", "true"], "accepts at most 1 arg(s)"),
    ]
    for args, message in cases:
        res = run_local(*args)
        assert res.code == 1, args
        assert res.err.startswith("Error: ") and message in res.err, (args, res.err)
        assert "Traceback" not in res.err


def test_version_whoami_and_help() -> None:
    assert run_local("version").out.strip().endswith("(embedded local cluster)")
    assert run_local("whoami").out.strip()
    res = run_local("training", "pytorch", "submit", "--help")
    assert res.code == 0 and "--existing-pvc" in res.out and "--gpu-devices-request" in res.out


def test_field_table_flags_and_generations_agree_with_this_parser() -> None:
    """Every flag the field table says the local cluster's generation has, this parser accepts,
    with the same choices; and runai-local's own `version` is read as that generation."""
    from runai_tui.profiles import FIELDS
    from runai_tui.profiles.validators import Invalid
    from runai_tui.shapes import cli_generations as generations

    assert generations.classify(run_local("version").out).generation == (generations.LOCAL_EMULATES)
    by_long = {f"--{flag.name}": flag for flag in F.SUBMIT_FLAGS}
    by_short = {f"-{flag.short}": flag for flag in F.SUBMIT_FLAGS if flag.short}
    checked = 0
    for row in FIELDS:
        if generations.LOCAL_EMULATES not in row.cli:
            continue
        for flag_name in row.flags:
            flag = by_long.get(flag_name) or by_short.get(flag_name)
            assert flag is not None, f"{row.name}: {flag_name} unknown to runai-local"
            if flag.choices:
                with pytest.raises(Invalid) as bad:
                    (row.check or (lambda v: v))("\x01not-a-choice")
                assert bad.value.expected == "expected one of: " + ", ".join(flag.choices)
            checked += 1
    assert checked >= 25


def test_help_of_every_command_runai_tui_uses_is_read_as_from_a_real_runai() -> None:
    """runai-local answers `--help` from its own flag tables in cobra's layout, so the embedded
    default goes through the same reading as an installed runai: what the help lists is what
    runai-local's parser accepts."""
    from runai_tui.runai.installed import COMMANDS, parse_help

    tables = {
        "submit": F.SUBMIT_FLAGS,
        "describe": F.DESCRIBE_FLAGS,
        "logs": F.LOGS_FLAGS,
        "exec": F.EXEC_FLAGS,
        "port-forward": F.PORT_FORWARD_FLAGS,
        "delete": F.ACTION_FLAGS,
        "suspend": F.ACTION_FLAGS,
        "resume": F.ACTION_FLAGS,
        "list": F.LIST_FLAGS,
    }
    for key, words in COMMANDS.items():
        res = run_local(*words, "--help")
        assert res.code == 0, (key, res.err)
        found = parse_help(res.out)
        assert found is not None, key
        if key in tables:
            expected = {f"--{f.name}" for f in tables[key]} | {
                f"-{f.short}" for f in tables[key] if f.short
            }
            assert found.flags == expected, key
    verbs = parse_help(run_local("training", "pytorch", "--help").out)
    assert verbs is not None and {"suspend", "resume", "describe", "logs"} <= verbs.commands
    listing = parse_help(run_local("training", "list", "--help").out)
    assert listing is not None and "--next-token" in listing.flags


def test_priorities_are_the_field_tables_and_a_bad_one_is_one_line() -> None:
    from runai_tui.profiles.fields import PRIORITIES

    assert jobspec.PRIORITIES == PRIORITIES
    res = run_local("training", "pytorch", "submit", "p", "--priority", "urgent", "--", "true")
    assert res.code == 1 and res.err.strip().splitlines() == [
        'Error: invalid argument "urgent" for "--priority" flag: use one of '
        + ", ".join(PRIORITIES)
    ]
