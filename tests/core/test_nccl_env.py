"""NCCL's environment read as NCCL reads it (runai_tui/knowledge/nccl_env.py), pinned to NCCL's
rules: integers through strtoll(s, NULL, 0) (NVIDIA/nccl src/misc/param.cc, checked here against
this machine's C library), NCCL_DEBUG's levels (src/debug.cc), the list syntax of NCCL_IB_HCA and
NCCL_SOCKET_IFNAME (src/misc/utils.cc parseStringList/matchIfList); and every reader in
runai-tui (lint, plan, preflight, remedies, diagnose) giving the same answer."""

from __future__ import annotations

import ctypes
import ctypes.util

import pytest
from hypothesis import given
from hypothesis import strategies as st

from runai_tui.knowledge import nccl_env
from runai_tui.knowledge.diagnose import PodDiagnoser
from runai_tui.knowledge.lint.registry import lint
from runai_tui.knowledge.plan import profile_link
from runai_tui.knowledge.probes.preflight import checklist
from runai_tui.profiles import Profile, ProfileStore
from runai_tui.profiles.store import shipped_profiles_dir

# value of NCCL_IB_DISABLE -> what NCCL reads (ncclParamIbDisable()), how
IB_DISABLE = [
    ("true", 0, "no digits"),  # no digits: 0, not an error; IB stays on
    ("True", 0, "no digits"),
    ("yes", 0, "no digits"),
    ("false", 0, "no digits"),
    ("2", 2, "read"),
    ("0x1", 1, "read"),  # base 0: hexadecimal
    ("0X10", 16, "read"),
    (" 1", 1, "read"),  # leading white space skipped
    ("\t1\n", 1, "read"),
    ("1abc", 1, "read"),  # trailing junk ignored
    ("1.5", 1, "read"),
    ("-1", -1, "read"),
    ("+1", 1, "read"),
    ("010", 8, "read"),  # a leading 0: octal
    ("08", 0, "read"),  # octal stops at 8
    ("0x", 0, "read"),  # "0", then junk
    ("0", 0, "read"),
    ("", 0, "empty"),  # empty: the default
    ("99999999999999999999", 0, "out of range"),  # ERANGE: the default
    ("- 1", 0, "no digits"),
]


@pytest.mark.parametrize(("raw", "value", "how"), IB_DISABLE)
def test_integers_read_as_ncclLoadParam_reads_them(raw: str, value: int, how: str) -> None:
    reading = nccl_env.read_int("NCCL_IB_DISABLE", {"NCCL_IB_DISABLE": raw})
    assert (reading.value, reading.how) == (value, how)
    assert nccl_env.ib_disabled({"NCCL_IB_DISABLE": raw}) is (value != 0)


def test_unset_empty_and_out_of_range_are_the_default_but_no_digits_is_zero() -> None:
    # NCCL_IB_GID_INDEX defaults to -1 (detected): only unset/empty/ERANGE give it back.
    name = "NCCL_IB_GID_INDEX"
    assert nccl_env.read_int(name, {}).value == -1
    assert nccl_env.read_int(name, {name: ""}).value == -1
    assert nccl_env.read_int(name, {name: "1" * 30}).value == -1
    assert nccl_env.read_int(name, {name: "auto"}).value == 0  # strtoll: 0, errno 0


def _libc_strtoll() -> ctypes._CFuncPtr | None:  # type: ignore[name-defined]
    path = ctypes.util.find_library("c")
    if path is None:
        return None
    func = ctypes.CDLL(path, use_errno=True).strtoll
    func.restype = ctypes.c_longlong
    func.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_char_p), ctypes.c_int]
    return func


STRTOLL = _libc_strtoll()
ERANGE = 34


@pytest.mark.skipif(STRTOLL is None, reason="no C library to compare with")
@given(st.text(alphabet=" \t\n+-0123456789xXabcdefgAF.,=", max_size=24))
def test_c_strtoll_is_the_c_librarys(text: str) -> None:
    assert STRTOLL is not None
    raw = text.encode()
    end = ctypes.c_char_p()
    ctypes.set_errno(0)
    value = STRTOLL(raw, ctypes.byref(end), 0)
    errno = ctypes.get_errno()
    consumed = len(raw) - len(end.value or b"")
    mine, used, rest, overflow = nccl_env.c_strtoll(text)
    assert (mine, overflow) == (value, errno == ERANGE)
    assert len(text) - len(rest) == (consumed if used else 0)


@pytest.mark.parametrize(
    ("raw", "level"),
    [
        ("INFO", "INFO"),
        ("info", "INFO"),  # strcasecmp
        ("Warn", "WARN"),
        ("VERSION", "VERSION"),
        ("ABORT", "ABORT"),
        ("trace", "TRACE"),
        ("verbose", ""),  # unknown: NCCL prints nothing
        ("1", ""),
        ("", ""),
        (" INFO", ""),  # strcasecmp up to 2.29: no trimming
        (None, None),
    ],
)
def test_nccl_debug_levels(raw: str | None, level: str | None) -> None:
    assert nccl_env.debug_level(raw) == level


# NCCL_IB_HCA value -> the devices:ports of a node with mlx5_0..mlx5_1, mlx5_10 (port 1 each)
# and mlx5_2 with ports 1 and 2 that NCCL uses.
PORTS = ["mlx5_0:1", "mlx5_1:1", "mlx5_10:1", "mlx5_2:1", "mlx5_2:2"]
HCA = [
    ("mlx5", PORTS),  # a prefix: every mlx5_*
    ("", PORTS),  # empty: all
    ("mlx5_1", ["mlx5_1:1", "mlx5_10:1"]),  # prefix: mlx5_1 is also mlx5_10's
    ("=mlx5_1", ["mlx5_1:1"]),  # exact
    ("^mlx5_1", ["mlx5_0:1", "mlx5_2:1", "mlx5_2:2"]),  # exclude the prefix
    ("^=mlx5_1", ["mlx5_0:1", "mlx5_10:1", "mlx5_2:1", "mlx5_2:2"]),  # exclude, exact
    ("mlx5_2:2", ["mlx5_2:2"]),  # a port
    ("=mlx5_0:1,mlx5_2:1", ["mlx5_0:1", "mlx5_2:1"]),
    ("mlx5_0,,mlx5_2:2", ["mlx5_0:1", "mlx5_2:2"]),  # an empty item is skipped
    (" mlx5", []),  # never trimmed
    ("^", []),  # nothing after ^: excludes everything
    ("=^mlx5_0", []),  # the exact name "^mlx5_0"
    ("mlx4", []),
]


@pytest.mark.parametrize(("raw", "ports"), HCA)
def test_ib_hca_selects_as_matchIfList(raw: str, ports: list[str]) -> None:
    assert nccl_env.selected_ports(raw, PORTS) == ports


def test_socket_ifname_lists() -> None:
    ifaces = ["lo", "eth0", "net1", "net10", "docker0"]
    assert nccl_env.selected("net1", ifaces) == ["net1", "net10"]
    assert nccl_env.selected("=net1", ifaces) == ["net1"]
    assert nccl_env.selected("^lo,docker", ifaces) == ["eth0", "net1", "net10"]
    assert nccl_env.selected("net1:1", ifaces) == ["net1", "net10"]  # the port is ignored
    assert nccl_env.gloo_interfaces("eth1,eth2") == ["eth1", "eth2"]
    assert nccl_env.gloo_interfaces("eth1,") == ["eth1"]  # std::getline: no trailing item
    assert nccl_env.gloo_interfaces("eth1,,eth2") == ["eth1", "", "eth2"]  # torch refuses ""
    assert nccl_env.gloo_interfaces("e") == []  # one character: ignored


def test_values_read_alike() -> None:
    assert nccl_env.same_reading("NCCL_IB_DISABLE", "1", "0x1")
    assert nccl_env.same_reading("NCCL_IB_DISABLE", "true", "0")
    assert not nccl_env.same_reading("NCCL_IB_DISABLE", "true", "1")
    assert nccl_env.same_reading("NCCL_DEBUG", "info", "INFO")
    assert not nccl_env.same_reading("NCCL_SOCKET_IFNAME", "net1", "=net1")


# -- every reader agrees -----------------------------------------------------------------------


def shipped(name: str, *sets: str) -> Profile:
    return ProfileStore([shipped_profiles_dir()]).load(name, list(sets))


def _probe(disable: str) -> str:
    return "\n".join(
        [
            "@@pf memlock unlimited",
            "@@pf rdma mlx5_0 mlx5_1 ",
            "@@pf netifs lo eth0 net1 ",
            f"@@pf env NCCL_IB_DISABLE={disable}",
            "@@pf env NCCL_IB_HCA=mlx5",
            "@@pf end ok",
        ]
    )


# A profile value and a probe line carry no empty value and no newline.
CARRIED = [row for row in IB_DISABLE if row[0].strip() and "\n" not in row[0]]


@pytest.mark.parametrize(("raw", "value", "how"), CARRIED)
def test_lint_plan_preflight_and_diagnose_agree_with_nccl(raw: str, value: int, how: str) -> None:
    profile = shipped("retinanet-rdma", f"env.NCCL_IB_DISABLE={raw}")
    ib_off = value != 0
    assert profile_link(profile) == ("tcp_25gbps" if ib_off else "ib_200gbps")
    codes = [f.code for f in lint(profile)]
    assert ("rdma-resource-unused" in codes) is ib_off
    items = {i.code: i for i in checklist("p", _probe(raw)).items}
    assert items["rdma"].ok is not ib_off  # skipped (IB off) or passed (mlx5 matches mlx5_0)
    assert ("IB is off" in items["rdma"].message) is ib_off
    # NCCL echoes the integer it read; the entry script's settings line, the value as written.
    echo = f"h:1:1 [0] NCCL INFO NCCL_IB_DISABLE set by environment to {value}."
    assert PodDiagnoser("p").feed_all([echo]).ib_wanted is (not ib_off)
    if raw == raw.strip():
        said = f"trainer: NCCL settings: NCCL_DEBUG=INFO NCCL_IB_DISABLE={raw}"
        assert PodDiagnoser("p").feed_all([said]).ib_wanted is (not ib_off)


def test_preflight_reads_the_shipped_rdma_profiles_prefix() -> None:
    items = {i.code: i for i in checklist("p", _probe("0")).items}
    assert items["rdma"].ok and "NCCL_IB_HCA=mlx5" in items["rdma"].message
    exact = _probe("0").replace("NCCL_IB_HCA=mlx5", "NCCL_IB_HCA==mlx5")
    items = {i.code: i for i in checklist("p", exact).items}
    assert not items["rdma"].ok and "matches none" in items["rdma"].message


def test_a_socket_remedy_is_not_offered_when_the_value_already_picks_the_interface() -> None:
    seen = ["lo", "eth0", "net1"]
    assert nccl_env.names_only("NCCL_SOCKET_IFNAME", "=eth0", "eth0", seen)
    assert nccl_env.names_only("NCCL_SOCKET_IFNAME", "eth", "eth0", seen)  # the only eth*
    assert not nccl_env.names_only("NCCL_SOCKET_IFNAME", "eth", "eth0", [*seen, "eth1"])
    assert not nccl_env.names_only("NCCL_SOCKET_IFNAME", "^lo", "eth0", seen)  # net1 too
    assert nccl_env.names_only("GLOO_SOCKET_IFNAME", "eth0", "eth0", seen)
    assert not nccl_env.names_only("GLOO_SOCKET_IFNAME", "eth", "eth0", seen)  # exact names
    assert not nccl_env.names_only("NCCL_SOCKET_IFNAME", None, "eth0", seen)


# -- lint says when NCCL will not read a value as written --------------------------------------


def lint_codes(*sets: str) -> dict[str, list[str]]:
    """code -> messages of lint on retinanet-tcp with the overrides."""
    out: dict[str, list[str]] = {}
    for f in lint(shipped("retinanet-tcp", *sets)):
        out.setdefault(f.code, []).append(f"{f.field}: {f.message} (fix: {f.fix})")
    return out


def test_lint_warns_the_user_who_wrote_true_that_ib_stays_on() -> None:
    found = lint_codes("env.NCCL_IB_DISABLE=true")
    [said] = found["nccl-int-misread"]
    assert said.startswith("env.NCCL_IB_DISABLE: NCCL_IB_DISABLE='true': NCCL reads 0")
    assert "InfiniBand/RoCE stays on although it was meant off" in said
    assert "--set env.NCCL_IB_DISABLE=1" in said
    assert "ib-ipc-lock" in found  # and lint, like NCCL, now treats IB as on
    assert "NCCL_IB_DISABLE=true (NCCL reads 0)" in found["ib-ipc-lock"][0]


@pytest.mark.parametrize("raw", ["1", "2", "0x1", " 1", "-1", "false", "0"])
def test_values_nccl_reads_as_written_raise_nothing(raw: str) -> None:
    assert "nccl-int-misread" not in lint_codes(f"env.NCCL_IB_DISABLE={raw}")


@pytest.mark.parametrize(
    ("sets", "said"),
    [
        (("env.NCCL_IB_DISABLE=1abc",), "NCCL reads 1 (strtoll stops before 'abc')"),
        (("env.NCCL_IB_DISABLE=010",), "NCCL reads 8 (010 is octal)"),
        (("env.NCCL_SOCKET_NTHREADS=4 threads",), "NCCL reads 4 (strtoll stops before ' threads')"),
        (("master_env.NCCL_IB_DISABLE=yes",), "master_env.NCCL_IB_DISABLE: NCCL_IB_DISABLE='yes'"),
    ],
)
def test_lint_says_what_nccl_reads(sets: tuple[str, ...], said: str) -> None:
    assert any(said in m for m in lint_codes(*sets).get("nccl-int-misread", [])), said


@pytest.mark.parametrize(
    ("sets", "code", "said"),
    [
        (("env.NCCL_DEBUG=verbose",), "nccl-debug-unknown", "is no level NCCL knows"),
        (("env.NCCL_DEBUG= INFO",), "nccl-debug-unknown", "only NCCL 2.30 trims them"),
        (("env.NCCL_SOCKET_IFNAME==^lo",), "nccl-list-misread", "not an exclusion (write `^=`)"),
        (("env.NCCL_SOCKET_IFNAME=net1:2",), "nccl-list-misread", "ignores a port"),
        (("env.NCCL_SOCKET_IFNAME=^",), "nccl-list-misread", "excludes everything"),
        (("env.GLOO_SOCKET_IFNAME=^lo",), "nccl-list-misread", "Gloo takes exact names"),
        (("env.GLOO_SOCKET_IFNAME=eth0,,eth1",), "nccl-list-misread", "an empty name"),
        (("env.GLOO_SOCKET_IFNAME=e",), "nccl-list-misread", "ignores a value of one character"),
    ],
)
def test_lint_on_debug_levels_and_lists(sets: tuple[str, ...], code: str, said: str) -> None:
    assert any(said in m for m in lint_codes(*sets).get(code, [])), lint_codes(*sets)


@pytest.mark.parametrize(
    "sets",
    [("env.NCCL_DEBUG=info",), ("env.NCCL_SOCKET_IFNAME=^=lo,docker",),
     ("env.NCCL_SOCKET_IFNAME=net1,net2",), ("env.GLOO_SOCKET_IFNAME=eth0,eth1",),
     ("env.GLOO_SOCKET_IFNAME=eth0,",)],
)  # fmt: skip
def test_values_read_as_written_raise_no_misread(sets: tuple[str, ...]) -> None:
    assert not {"nccl-debug-unknown", "nccl-list-misread"} & set(lint_codes(*sets))


def test_the_master_differs_only_when_nccl_reads_it_otherwise() -> None:
    assert "master-differs" not in lint_codes("master_env.NCCL_IB_DISABLE=0x1")  # workers: 1
    found = lint_codes("master_env.NCCL_IB_DISABLE=true")  # NCCL reads 0: IB on rank 0
    assert "master-differs" in found
