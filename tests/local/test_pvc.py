"""PVC claims on the local cluster: value parsing, the path rewrite rule, seeding project-001."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from runai_local import pvc
from runai_local.config import LocalConfig


@pytest.fixture
def config(tmp_path: Path) -> LocalConfig:
    return LocalConfig(pvc_root=tmp_path / "pvc", pvcs={"mapped": tmp_path / "elsewhere"})


def test_claim_maps_to_root_or_configured_directory(config: LocalConfig, tmp_path: Path) -> None:
    mount = pvc.parse_existing_pvc("claimname=project-001,path=/data/", config)
    assert (mount.claim, mount.path, mount.local) == (
        "project-001",
        "/data",
        tmp_path / "pvc" / "project-001",
    )
    assert (
        pvc.parse_existing_pvc("claimname=mapped,path=/m", config).local == tmp_path / "elsewhere"
    )


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("claimname=c", "path is missing"),
        ("path=/data", "claimname is missing"),
        ("claimname=c,path=data", "must be an absolute directory"),
        ("claimname=c,path=/", "must be an absolute directory"),
        ("claimname=C_x,path=/d", "is not a lowercase DNS-1123 name"),
        ("claimname=c,path=/d,size=1G", 'unknown part "size=1G"'),
        ("c:/data", 'unknown part "c:/data"'),
    ],
)
def test_bad_values_name_the_problem_and_the_format(
    config: LocalConfig, value: str, message: str
) -> None:
    with pytest.raises(pvc.PvcError) as info:
        pvc.parse_existing_pvc(value, config)
    assert message in str(info.value) and value in str(info.value)


def test_rewrite_rule_whole_paths_only_longest_first(config: LocalConfig) -> None:
    mounts = [
        pvc.parse_existing_pvc("claimname=a,path=/data", config),
        pvc.parse_existing_pvc("claimname=b,path=/data/ckpt", config),
    ]
    a, b = str(config.pvc_root / "a"), str(config.pvc_root / "b")
    assert pvc.rewrite("/data", mounts) == a
    assert pvc.rewrite("/data/scripts/x.sh", mounts) == f"{a}/scripts/x.sh"
    assert pvc.rewrite("--output-dir=/data/ckpt/run1", mounts) == f"--output-dir={b}/run1"
    assert pvc.rewrite("/data/a:/data/b", mounts) == f"{a}/a:{a}/b"
    for untouched in ("/database", "/srv/data", "x/data", "data", "~/data"):
        assert pvc.rewrite(untouched, mounts) == untouched


def test_rewrite_never_rewrites_a_replacement(tmp_path: Path) -> None:
    # The local directory itself contains the mount path: one pass keeps it intact.
    cfg = LocalConfig(pvc_root=Path("/data/pvcs"))
    mounts = [pvc.parse_existing_pvc("claimname=c,path=/data", cfg)]
    assert pvc.rewrite("/data/x", mounts) == "/data/pvcs/c/x"


def test_project_001_is_seeded_with_the_entry_script_and_trainer(
    config: LocalConfig, repo_root: Path
) -> None:
    mount = pvc.parse_existing_pvc("claimname=project-001,path=/data", config)
    pvc.prepare(mount)
    script = mount.local / "scripts/vision/shell/train-retinanet-ddp.sh"
    assert script.resolve() == (repo_root / "scripts/train-retinanet-ddp.sh").resolve()
    assert not script.parent.is_symlink()  # the script's own dir is on the PVC
    trainer = mount.local / "scripts/vision/train/trainer"
    assert (trainer / "__main__.py").is_file()
    # A second prepare keeps what is there (never clobbers user files).
    (mount.local / "runs").mkdir()
    pvc.prepare(mount)
    assert (mount.local / "runs").is_dir()


def test_settings_file_and_environment_overrides(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from runai_local.config import ConfigError, config_path, load_config

    default = load_config()
    assert default.gpus == 0 and default.project == "local"
    assert default.pvc_root == Path(os.environ["XDG_DATA_HOME"]) / "runai-tui/local/pvc"
    config_path().parent.mkdir(parents=True, exist_ok=True)
    config_path().write_text(f"gpus: 2\npvcs: {{project-001: {tmp_path / 'data'}}}\n")
    loaded = load_config()
    assert loaded.gpus == 2 and loaded.pvcs == {"project-001": tmp_path / "data"}
    monkeypatch.setenv("RUNAI_LOCAL_GPUS", "4")
    monkeypatch.setenv("RUNAI_LOCAL_PVC_ROOT", str(tmp_path / "root"))
    assert (load_config().gpus, load_config().pvc_root) == (4, tmp_path / "root")
    monkeypatch.setenv("RUNAI_LOCAL_GPUS", "many")
    with pytest.raises(ConfigError, match="RUNAI_LOCAL_GPUS='many' is not an integer"):
        load_config()
    monkeypatch.delenv("RUNAI_LOCAL_GPUS")
    config_path().write_text("gpu: 1\n")
    with pytest.raises(ConfigError, match="unknown setting"):
        load_config()


def test_nodes_slow_nodes_and_shm_size_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    from runai_local.config import ConfigError, config_path, load_config

    default = load_config()
    assert (default.node_names, default.slow_nodes, default.shm_size) == (["local"], {}, "")
    config_path().parent.mkdir(parents=True, exist_ok=True)
    config_path().write_text("nodes: 3\nslow_nodes: {local-2: 0.25}\nshm_size: 64Mi\n")
    loaded = load_config()
    assert loaded.node_names == ["local-0", "local-1", "local-2"]
    assert (loaded.slow_nodes, loaded.shm_size) == ({"local-2": 0.25}, "64m")
    monkeypatch.setenv("RUNAI_LOCAL_SLOW_NODES", "local-0=0.5")
    monkeypatch.setenv("RUNAI_LOCAL_SHM_SIZE", "1Gi")
    assert (load_config().slow_nodes, load_config().shm_size) == ({"local-0": 0.5}, "1g")
    monkeypatch.setenv("RUNAI_LOCAL_SLOW_NODES", "local-0=2")
    with pytest.raises(ConfigError, match="local-0='2': give a CPU share above 0 and below 1"):
        load_config()
    monkeypatch.delenv("RUNAI_LOCAL_SLOW_NODES")
    monkeypatch.setenv("RUNAI_LOCAL_SHM_SIZE", "lots")
    with pytest.raises(ConfigError, match="shm_size='lots' is not a size; write e.g. 64Mi"):
        load_config()
