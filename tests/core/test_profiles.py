"""Profiles: loading with line numbers, extends, validation of every bad input, atomic saves."""

from __future__ import annotations

from pathlib import Path

import pytest

from runai_tui.profiles import Profile, ProfileError, ProfileStore, apply_overrides, merge
from runai_tui.shapes.errors import UsageError

REPO = Path(__file__).resolve().parents[2]

BASE = """\
description: base
job_name: base-job
image: img:1
workers: 2
env:
  A: "1"
  B: two
pvcs:
  - {claim: data, path: /data}
"""


@pytest.fixture
def store(tmp_path: Path) -> ProfileStore:
    shipped, user = tmp_path / "shipped", tmp_path / "user"
    shipped.mkdir()
    user.mkdir()
    (shipped / "base.yaml").write_text(BASE)
    return ProfileStore([shipped, user])


def write(store: ProfileStore, name: str, text: str) -> Path:
    path = store.user_dir / f"{name}.yaml"
    path.write_text(text)
    return path


def problems_of(store: ProfileStore, name: str) -> list[str]:
    with pytest.raises(ProfileError) as info:
        store.load(name)
    return [str(p) for p in info.value.problems]


def test_shipped_profiles_are_valid() -> None:
    store = ProfileStore()
    assert {"retinanet-tcp", "retinanet-rdma"} <= set(store.names())
    rdma = store.load("retinanet-rdma")
    assert rdma.extends == "retinanet-tcp"
    assert rdma.env["NCCL_IB_HCA"] == "mlx5" and rdma.env["NCCL_IB_GID_INDEX"] == "3"
    assert rdma.capabilities == ["IPC_LOCK"]
    assert "openshift.io/mlxrdma" in rdma.extended_resources
    assert rdma.annotations == {"k8s.v1.cni.cncf.io/networks": "ssa"}
    assert "NCCL_SOCKET_NTHREADS" not in rdma.env  # removed with null


def test_extends_merges_mappings_replaces_lists_and_null_deletes(store: ProfileStore) -> None:
    write(
        store,
        "child",
        "extends: base\njob_name: child\nenv: {B: null, C: c}\npvcs: [{claim: other, path: /o}]\n",
    )
    child = store.load("child")
    assert child.env == {"A": "1", "C": "c"}
    assert child.pvcs == [{"claim": "other", "path": "/o"}]
    assert child.workers == 2 and child.image == "img:1"
    assert merge({"a": {"x": 1}}, {"a": {"y": 2}}) == {"a": {"x": 1, "y": 2}}


def test_user_profile_shadows_shipped(store: ProfileStore) -> None:
    write(store, "base", BASE.replace("workers: 2", "workers: 5"))
    assert store.load("base").workers == 5
    entry = next(e for e in store.entries() if e.name == "base")
    assert entry.origin == "user" and entry.shadows is not None


@pytest.mark.parametrize(
    ("text", "field", "line", "words"),
    [
        ("image: a\nworkers: two\n", "workers", 2, "whole number"),
        ("image: a\nworkers: -1\n", "workers", 2, "from 1"),
        ("image: a\ngpus: 100000\n", "gpus", 2, "from 0 to 64"),
        ("image: a\nwokers: 2\n", "wokers", 2, "did you mean 'workers'"),
        ("image: a\njob_name: Retina\n", "job_name", 2, "DNS-1123"),
        ("image: a\njob_name: my_job\n", "job_name", 2, "DNS-1123"),
        ("image: a\njob_name: " + "a" * 64 + "\n", "job_name", 2, "63"),
        ("image: a\nenv:\n  'A=B': x\n", "env.A=B", 3, "without '='"),
        ("image: a\nenv:\n  'A B': x\n", "env.A B", 3, "spaces"),
        ("image: a\nmemory: {request: lots}\n", "memory.request", 2, "quantity"),
        ("image: a\nmemory: {request: 1K}\n", "memory.request", 2, "quantity such as 512Mi"),
        ("image: a\nmemory: {limit: 0Gi}\n", "memory.limit", 2, "quantity"),
        ("image: a\ncpu: {request: 0m}\n", "cpu.request", 2, "above 0"),
        ("image: a\ncpu: {limit: 2 cores}\n", "cpu.limit", 2, "e.g. 0.5, 4 or 500m"),
        (
            "image: a\nextended_resources: {rdma/hca: 1.5}\n",
            "extended_resources.rdma/hca",
            2,
            "whole quantity",
        ),
        ("image: a\npvcs: [{claim: x}]\n", "pvcs", 2, "'claim' and 'path'"),
        ("image: a\npvcs: [data:/data]\n", "pvcs", 2, "claim"),
        ("image: a\nannotations: {'bad key!': v}\n", "annotations.bad key!", 2, "Kubernetes key"),
        ("image: a\nlarge_shm: yes please\n", "large_shm", 2, "true or false"),
        ("image: a\nrestart_policy: Sometimes\n", "restart_policy", 2, "OnFailure"),
        ("image: a\ncpu: {request: 4, limit: 2}\n", "cpu.limit", 2, "at least the request"),
        ("image: a\ncpu: {reqest: 4}\n", "cpu.reqest", 2, "did you mean 'request'"),
        ("image: a\ncapabilities: [ipc_lock]\n", "capabilities", 2, "upper case"),
        ("image: a b\n", "image", 1, "without spaces"),
        ("image: a\nworking_dir: relative/dir\n", "working_dir", 2, "absolute"),
        ("image: a\ntermination_grace_period: nan\n", "termination_grace_period", 2, "30s"),
        ("image: a\ntermination_grace_period: -30s\n", "termination_grace_period", 2, "30s"),
        ("image: a\ntermination_grace_period: 2d\n", "termination_grace_period", 2, "30s"),
        ("image: a\nworkers: 1\nworkers: 2\n", "workers", 3, "duplicate key (first at line 2)"),
        ("workers: 1\n", "image", None, "missing"),
    ],
)
def test_every_bad_field_is_named_with_file_line_value_and_fix(
    store: ProfileStore, text: str, field: str, line: int | None, words: str
) -> None:
    path = write(store, "bad", text)
    problems = problems_of(store, "bad")
    assert len(problems) == 1, problems
    expected_where = f"{path}:{line}: " if line else f"{path}: "
    assert problems[0].startswith(expected_where + field + ":"), problems[0]
    assert words in problems[0]


def test_quantities_are_read_the_kubernetes_way(store: ProfileStore) -> None:
    write(
        store, "q", "image: a\ncpu: {request: 500m, limit: 2}\nmemory: {request: 1e9, limit: 4Gi}\n"
    )
    loaded = store.load("q")
    assert loaded.cpu == {"request": 0.5, "limit": 2}  # the runai flags take cores
    assert loaded.memory == {"request": "1e9", "limit": "4Gi"}  # passed on as written


def test_every_problem_is_reported(store: ProfileStore) -> None:
    write(store, "bad", "image: a\nworkers: two\ngpus: -3\nfoo: 1\n")
    problems = problems_of(store, "bad")
    assert [p.split(": ")[1] for p in problems] == ["workers", "gpus", "foo"]


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("image: [unclosed\n", "malformed YAML"),
        ("- a\n- b\n", "not a mapping"),
        ("just a string\n", "not a mapping"),
        ("image: a\n  bad: indent\n", "malformed YAML"),
    ],
)
def test_malformed_files(store: ProfileStore, text: str, words: str) -> None:
    write(store, "bad", text)
    problems = problems_of(store, "bad")
    assert words in problems[0] and "bad.yaml:" in problems[0]


def test_huge_and_binary_files(store: ProfileStore) -> None:
    write(store, "huge", "description: " + "x" * 300_000 + "\n")
    assert "at most 262144 bytes" in problems_of(store, "huge")[0]
    (store.user_dir / "bin.yaml").write_bytes(b"image: a\x00\x01\x02")
    assert "binary" in problems_of(store, "bin")[0]
    (store.user_dir / "latin.yaml").write_bytes(b"description: caf\xe9\n")
    assert "not UTF-8" in problems_of(store, "latin")[0]


def test_extends_cycle_and_missing_parent(store: ProfileStore) -> None:
    write(store, "a", "extends: b\nimage: x\n")
    write(store, "b", "extends: a\nimage: y\n")
    assert "cycle a -> b -> a" in problems_of(store, "a")[0]
    write(store, "self", "extends: self\nimage: x\n")
    assert "cycle" in problems_of(store, "self")[0]
    path = write(store, "orphan", "description: o\nextends: nowhere\n")
    problem = problems_of(store, "orphan")[0]
    assert problem.startswith(f"{path}:2: extends:") and "no such profile" in problem


def test_problem_in_parent_names_the_parent_file(store: ProfileStore) -> None:
    parent = write(store, "parent", "image: a\nworkers: zero\n")
    write(store, "kid", "extends: parent\njob_name: kid\n")
    assert problems_of(store, "kid")[0].startswith(f"{parent}:2: workers:")


def test_unknown_profile_name(store: ProfileStore) -> None:
    with pytest.raises(UsageError, match="unknown profile 'bsae'; did you mean 'base'"):
        store.load("bsae")


def test_overrides(store: ProfileStore) -> None:
    profile = store.load("base")
    out = apply_overrides(
        profile, ["workers=4", "env.NEW=a b", "memory.request=4G", "command=python x.py"]
    )
    assert out.workers == 4 and out.env["NEW"] == "a b" and out.memory == {"request": "4G"}
    assert out.command == ["python x.py"]  # one word, exactly as written
    assert apply_overrides(profile, ["args=[--lr, '0.1']"]).args == ["--lr", "0.1"]
    assert apply_overrides(profile, ["env.A="]).env["A"] == ""
    before = (dict(profile.env), dict(profile.memory), repr(profile.data))
    apply_overrides(profile, ["env.A=1", "memory.request=1Gi"])
    assert (profile.env, profile.memory, repr(profile.data)) == before  # the input is untouched
    for bad, words in [
        (["wrkers=2"], "did you mean 'workers'"),
        (["workers=two"], "whole number"),
        (["nonsense"], "FIELD=VALUE"),
        (["env.BAD NAME=1"], "spaces"),
        (["memory.huge=1"], "unknown field"),
    ]:
        with pytest.raises(ProfileError, match=words) as info:
            apply_overrides(profile, bad)
        assert str(info.value.problems[0]).startswith(f"--set {bad[0]}")


def test_save_is_atomic_and_never_replaces_valid_with_invalid(store: ProfileStore) -> None:
    path = store.save_text("mine", "image: a\nworkers: 1\n")
    assert store.load("mine").workers == 1
    with pytest.raises(ProfileError):
        store.save_text("mine", "image: a\nworkers: many\n")
    assert path.read_text() == "image: a\nworkers: 1\n"
    assert sorted(p.name for p in store.user_dir.iterdir()) == ["mine.yaml"]  # no temp left


def test_new_and_duplicate(store: ProfileStore) -> None:
    child = store.new("big", base="base")
    assert "extends: base" in child.read_text()
    assert store.load("big").job_name == "big"
    fresh = store.new("Fresh_One")
    assert store.load("Fresh_One").job_name == "fresh-one"
    assert fresh.parent == store.user_dir
    copy = store.duplicate("base", "base-copy")
    assert copy.read_text() == BASE
    with pytest.raises(UsageError, match="already exists"):
        store.duplicate("base", "base-copy")
    with pytest.raises(UsageError, match="invalid profile name"):
        store.new("../escape")


def test_the_master_pod_gets_the_workers_gpus_unless_it_asks_for_its_own() -> None:
    same = Profile(name="p", workers=2, gpus=4)
    assert (same.master_pod_gpus, same.most_gpus_per_pod, same.job_gpus) == (4, 4, 12)
    own = Profile(name="p", workers=2, gpus=4, master_gpus=0)
    assert (own.master_pod_gpus, own.most_gpus_per_pod, own.job_gpus) == (0, 4, 8)
    cpu = Profile(name="p", workers=1)
    assert (cpu.master_pod_gpus, cpu.most_gpus_per_pod, cpu.job_gpus) == (0, 0, 0)
