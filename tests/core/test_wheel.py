"""A wheel carries the shipped profiles, the trainer's fast-path rule, record schema, atomic
writer and lock helper (links in the source tree), and an install outside the source tree finds
them."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_wheel_ships_the_profiles_and_an_install_finds_them(tmp_path: Path) -> None:
    # Build from a copy, so the source tree gets no build/ or egg-info from the test.
    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, src / name)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for name in ("runai_tui", "runai_local", "profiles", "trainer"):
        shutil.copytree(REPO / name, src / name, symlinks=True, ignore=ignore)
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    dist = tmp_path / "dist"
    build = [*pip, "wheel", "--no-deps", "--no-build-isolation", "--no-index", "-w", str(dist)]
    subprocess.run([*build, str(src)], check=True, cwd=tmp_path, timeout=300)
    (wheel,) = dist.glob("runai_tui-*.whl")
    shipped = sorted(p.name for p in (REPO / "profiles").glob("*.yaml"))
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        inside = sorted(Path(n).name for n in names if n.startswith("runai_tui/shipped_profiles/"))
        assert inside == shipped
        assert "runai_tui/profiles/fields.py" in names and "runai_local/cli.py" in names
        text = archive.read("runai_tui/shipped_profiles/retinanet-tcp.yaml").decode()
        rule = archive.read("runai_tui/trainer_flags/fast_path.py").decode()
        schema = archive.read("runai_tui/trainer_flags/records.py").decode()
        writer = archive.read("runai_tui/util/atomic.py").decode()
        locks = archive.read("runai_tui/util/lock_holder.py").decode()
        assert not any(n.startswith("trainer/") for n in names)  # the trainer is not installed
    assert text == (REPO / "profiles" / "retinanet-tcp.yaml").read_text()
    assert rule == (REPO / "trainer" / "fast_path.py").read_text()
    assert schema == (REPO / "trainer" / "records.py").read_text()
    assert writer == (REPO / "trainer" / "files.py").read_text()
    assert locks == (REPO / "trainer" / "lock_holder.py").read_text()

    site = tmp_path / "site"
    install = [*pip, "install", "--no-deps", "--no-index", "--target", str(site)]
    subprocess.run([*install, str(wheel)], check=True, timeout=300)
    # -S: no site-packages hooks (the dev venv's editable install would point back here); PyYAML
    # comes from its own directory, after the installed package.
    yaml_dir = Path(yaml.__file__).resolve().parents[1]
    probe = (
        "import json, runai_tui.profiles as p, runai_tui.trainer_flags.fast_path\n"
        "import runai_tui.trainer_flags.records\n"
        "import runai_tui.workflows.watch_lock, runai_local.state\n"
        "s = p.ProfileStore()\n"
        "print(json.dumps({'module': p.__file__, 'shipped': str(p.shipped_profiles_dir()),\n"
        "    'names': s.names(), 'image': s.load('retinanet-rdma').image}))\n"
    )
    out = subprocess.run(
        [sys.executable, "-S", "-c", probe],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={"PYTHONPATH": f"{site}:{yaml_dir}", "XDG_CONFIG_HOME": str(tmp_path / "cfg")},
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    found = json.loads(out.stdout)
    assert Path(found["module"]).is_relative_to(site)
    assert Path(found["shipped"]) == site / "runai_tui" / "shipped_profiles"
    assert found["names"] == [Path(n).stem for n in shipped]
    assert found["image"] == "nvcr.io/nvidia/pytorch:26.02-py3"


def test_in_a_source_tree_the_shipped_profiles_are_the_projects_profiles_dir() -> None:
    from runai_tui.profiles import ProfileStore, shipped_profiles_dir

    assert (REPO / "runai_tui" / "shipped_profiles").is_symlink()
    assert shipped_profiles_dir() == REPO / "profiles"
    assert ProfileStore().path("retinanet-tcp") == REPO / "profiles" / "retinanet-tcp.yaml"
