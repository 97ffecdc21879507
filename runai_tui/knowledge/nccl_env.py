"""NCCL's environment (and Gloo's interface list), read as NCCL and torch read it: the one place
runai-tui asks what an `NCCL_*` or `GLOO_SOCKET_IFNAME` value means (lint, plan, preflight,
remedies, diagnose, the wire check).

Integers. `NCCL_PARAM(name, "X", default)` variables are read by ncclLoadParam (NVIDIA/nccl
`src/misc/param.cc`; before it, the macro in `src/include/param.h`): unset or empty is the default;
anything else is `strtoll(value, NULL, 0)`, which skips leading white space, takes a sign,
reads `0x`/`0X` as hexadecimal and a leading `0` as octal, and stops at the first character that
is no digit (the rest is ignored). A value with no digits at all (`true`, `yes`) is 0: glibc's
strtoll sets no errno for it, so NCCL logs "set by environment to 0", not the default. Only an
out-of-range value (ERANGE) falls back to the default. So `NCCL_IB_DISABLE=true` keeps IB on,
`2`, `-1` and `0x1` turn it off (`src/transport/net_ib/init.cc`: `if (ncclParamIbDisable())`).

NCCL_DEBUG (`src/debug.cc`): one of VERSION, WARN, INFO, ABORT, TRACE in any case (strcasecmp;
2.30 also trims white space). Anything else leaves NCCL silent: up to 2.29 the level stays -1,
from 2.30 it is the default NONE; either way not even its WARN lines are printed.

Interface and HCA lists (NCCL_SOCKET_IFNAME: `src/misc/socket.cc` findInterfaces, from 2.30
`src/os/linux.cc`; NCCL_IB_HCA: `src/transport/net_ib.cc`, from 2.29 `src/transport/net_ib/
init.cc`; both parse with parseStringList and match with matchIfList, `src/misc/utils.cc`): a
leading `^` excludes what the list names, then a leading `=` makes the names exact (`^=mlx5_1`
both; `=^x` is the exact name `^x`); otherwise each item is a prefix (`mlx5` selects `mlx5_0`,
`mlx5_10`...). Items are split at `,`, empty ones skipped, nothing trimmed (` mlx5` names
nothing); `:N` after an HCA selects its port N (interfaces ignore it). An empty list selects
everything; `^` alone therefore selects nothing.

GLOO_SOCKET_IFNAME (torch's ProcessGroupGloo, `torch/csrc/distributed/c10d/init.cpp`; the
behaviour tests/trainer/test_gloo_ifname.py checks against the installed torch): a value of one
character or none is ignored (the host name's address is used); otherwise it is split at `,`
(a trailing empty item dropped, an inner one refused) into exact interface names, one Gloo
device each (gloo's tcp device: `strcmp`); no prefix, no `^`, nothing trimmed.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

INT64_MAX = (1 << 63) - 1
INT64_MIN = -(1 << 63)
C_SPACE = " \t\n\v\f\r"  # isspace() in the C locale

# The NCCL_PARAM integers runai-tui reads or proposes, with NCCL's default (2.21-2.30 sources).
INT_DEFAULTS: dict[str, int] = {
    "NCCL_IB_DISABLE": 0,  # src/transport/net_ib(.cc|/init.cc)
    "NCCL_IB_GID_INDEX": -1,  # -1: detected (src/transport/net_ib(.cc|/connect.cc))
    "NCCL_SOCKET_NTHREADS": -2,  # -2: auto (src/transport/net_socket.cc)
    "NCCL_NSOCKS_PERTHREAD": -2,
    "NCCL_P2P_DISABLE": 0,  # src/transport/p2p.cc
    "NCCL_SHM_DISABLE": 0,  # src/transport/shm.cc
}
DEBUG_LEVELS = ("VERSION", "WARN", "INFO", "ABORT", "TRACE")  # src/debug.cc, least verbose first
LIST_VARIABLES = ("NCCL_SOCKET_IFNAME", "NCCL_IB_HCA")
GLOO_IFNAME = "GLOO_SOCKET_IFNAME"
MAX_IB_DEVS, MAX_IFS = 32, 16  # how many items NCCL keeps (net_ib: MAX_IB_DEVS, socket.h)

# Words that say "on" / "off": what a person who wrote one meant an integer switch to be.
TRUE_WORDS = frozenset({"true", "yes", "on", "y", "t", "enable", "enabled"})
FALSE_WORDS = frozenset({"false", "no", "off", "n", "f", "disable", "disabled", "none"})

_DIGITS = {8: "01234567", 10: "0123456789", 16: "0123456789abcdefABCDEF"}


@dataclass(frozen=True)
class IntReading:
    """An integer variable as NCCL reads it: `value`, and `how` ("unset", "empty", "read",
    "no digits", "out of range"); `used` is the part strtoll consumed (white space excluded),
    `rest` what it ignored."""

    raw: str | None
    value: int
    how: str
    used: str = ""
    rest: str = ""

    @property
    def plain(self) -> bool:
        """Written as NCCL reads it: a decimal (or 0x) integer, nothing after it but spaces."""
        return self.how == "read" and not self.rest.strip() and not _octal(self.used)

    def meant(self) -> int | None:
        """What the writer evidently meant: an on/off word as 1/0, a decimal number with a
        leading zero in decimal; None when nothing else is evident."""
        text = (self.raw or "").strip().lower()
        if text in TRUE_WORDS:
            return 1
        if text in FALSE_WORDS:
            return 0
        if re.fullmatch(r"[+-]?\d+", text):
            return int(text)
        return None


def _octal(used: str) -> bool:
    digits = used.lstrip("+-")
    return len(digits) > 1 and digits.startswith("0") and digits[1] not in "xX"


def c_strtoll(text: str) -> tuple[int, str, str, bool]:
    """glibc's strtoll(text, &end, 0): (value, the part read, the rest, out of range). No digits:
    (0, "", text, False), and the whole text is the rest."""
    i = len(text) - len(text.lstrip(C_SPACE))
    start = i
    sign = -1 if text[i : i + 1] == "-" else 1
    i += 1 if text[i : i + 1] in ("+", "-") else 0
    base = 10
    if text[i : i + 1] == "0":
        hexa = text[i + 2 : i + 3]
        if text[i + 1 : i + 2] in ("x", "X") and hexa and hexa in _DIGITS[16]:
            base, i = 16, i + 2
        else:
            base = 8
    j = i
    while j < len(text) and text[j] in _DIGITS[base]:
        j += 1
    if j == i:
        return 0, "", text, False
    value = sign * int(text[i:j], base)
    overflow = not INT64_MIN <= value <= INT64_MAX
    if overflow:
        value = INT64_MAX if sign > 0 else INT64_MIN
    return value, text[start:j], text[j:], overflow


def read_int(name: str, env: Mapping[str, str], default: int | None = None) -> IntReading:
    """An NCCL_PARAM integer as ncclLoadParam reads it (the default: INT_DEFAULTS, else 0)."""
    fallback = INT_DEFAULTS.get(name, 0) if default is None else default
    raw = env.get(name)
    if raw is None:
        return IntReading(None, fallback, "unset")
    if raw == "":
        return IntReading(raw, fallback, "empty")
    value, used, rest, overflow = c_strtoll(raw)
    if overflow:
        return IntReading(raw, fallback, "out of range", used, rest)
    if not used:
        return IntReading(raw, 0, "no digits", "", rest)
    return IntReading(raw, value, "read", used, rest)


def ib_disabled(env: Mapping[str, str]) -> bool:
    """NCCL_IB_DISABLE read as NCCL reads it is non-zero: NCCL skips InfiniBand/RoCE."""
    return read_int("NCCL_IB_DISABLE", env).value != 0


def int_text(name: str, value: str) -> str:
    """`NAME=VALUE` as NCCL reads it, for a message: `NCCL_IB_DISABLE=true (NCCL reads 0)`."""
    reading = read_int(name, {name: value})
    shown = f"{name}={value}"
    return shown if reading.plain else f"{shown} (NCCL reads {reading.value})"


# -- NCCL_DEBUG --------------------------------------------------------------------------------


def debug_level(value: str | None) -> str | None:
    """NCCL_DEBUG's level (VERSION ... TRACE, upper case); "" for a value NCCL does not know
    (NCCL prints nothing then); None when unset. Surrounding white space: only 2.30 trims it,
    so a value with it counts as unknown."""
    if value is None:
        return None
    upper = value.upper()
    return upper if upper in DEBUG_LEVELS else ""


# -- NCCL_SOCKET_IFNAME, NCCL_IB_HCA -----------------------------------------------------------


@dataclass(frozen=True)
class NameList:
    """A parsed NCCL_SOCKET_IFNAME / NCCL_IB_HCA: exclude (`^`), exact (`=`), and the items as
    (name or prefix, port: -1 for any)."""

    exclude: bool
    exact: bool
    items: tuple[tuple[str, int], ...]

    def selects(self, name: str, port: int = -1) -> bool:
        """matchIfList(name, port, ...) ^ exclude: does NCCL use this interface / HCA port?"""
        if not self.items:
            return not self.exclude
        hit = any(
            (name == ref if self.exact else name.startswith(ref))
            and (port == -1 or want == -1 or port == want)
            for ref, want in self.items
        )
        return hit != self.exclude

    def names(self) -> list[str]:
        return [ref for ref, _ in self.items]


def parse_list(value: str, most: int = MAX_IFS) -> NameList:
    """NCCL's list syntax (parseStringList after the `^` and `=` prefixes)."""
    exclude = value.startswith("^")
    rest = value[1:] if exclude else value
    exact = rest.startswith("=")
    rest = rest[1:] if exact else rest
    items = []
    for entry in rest.split(","):
        name, _, after = entry.partition(":")
        if not name:
            continue
        port_text = after.split(":")[0]
        items.append((name, _atoi(port_text) if port_text else -1))
        if len(items) == most:
            break
    return NameList(exclude, exact, tuple(items))


def _atoi(text: str) -> int:
    value, _, _, _ = c_strtoll(text)
    return value


def hca_list(value: str) -> NameList:
    return parse_list(value, MAX_IB_DEVS)


def selected(value: str | None, names: Iterable[str]) -> list[str]:
    """The interfaces of `names` NCCL_SOCKET_IFNAME selects, in their order."""
    wanted = parse_list(value or "")
    return [n for n in names if wanted.selects(n)]


def selected_ports(value: str | None, ports: Iterable[str]) -> list[str]:
    """The `device:port` names NCCL_IB_HCA selects, in their order."""
    wanted = hca_list(value or "")
    out = []
    for item in ports:
        device, _, port = item.partition(":")
        if wanted.selects(device, int(port) if port.isdigit() else -1):
            out.append(item)
    return out


def gloo_interfaces(value: str | None) -> list[str]:
    """GLOO_SOCKET_IFNAME's interfaces: exact names split at `,` as c10d::split does
    (std::getline: no item after a trailing `,`); [] when torch ignores the value (one
    character or none). An empty item is kept: torch refuses it."""
    if value is None or len(value) <= 1:
        return []
    items = value.split(",")
    return items[:-1] if items[-1] == "" else items


def names_only(variable: str, value: str | None, iface: str, seen: Iterable[str]) -> bool:
    """The socket variable (NCCL_SOCKET_IFNAME or GLOO_SOCKET_IFNAME) already picks `iface` and
    nothing else among the interfaces `seen` (`=eth0`, or `eth` where eth0 is the only eth*)."""
    if value is None:
        return False
    if variable == GLOO_IFNAME:
        return gloo_interfaces(value) == [iface]
    return selected(value, list(dict.fromkeys([*seen, iface]))) == [iface]


def list_problems(name: str, value: str) -> list[str]:
    """What in a list NCCL will not read as a person likely meant: spaces (never trimmed), `=^`
    (an exact name starting with `^`), an empty list after `^` (selects nothing), a port on a
    socket interface (ignored), a port that is no positive number."""
    out = []
    if value != value.strip() or any(e != e.strip() for e in value.split(",")):
        out.append("NCCL does not trim spaces: a name with one around it matches nothing")
    if value.startswith("=^"):
        out.append("`=^` is the exact name `^...`, not an exclusion (write `^=`)")
    parsed = parse_list(value, MAX_IB_DEVS)
    if parsed.exclude and not parsed.items:
        out.append("`^` with nothing after it excludes everything")
    for entry in value.lstrip("^=").split(","):
        _, colon, port = entry.partition(":")
        if not colon:
            continue
        if name != "NCCL_IB_HCA":
            out.append(f"`{entry}`: NCCL ignores a port on an interface name")
        elif not port.split(":")[0].isdigit() or _atoi(port) < 1:
            out.append(f"`{entry}`: the port is not a number from 1 (NCCL reads {_atoi(port)})")
    return out


def same_reading(name: str, a: str | None, b: str | None) -> bool:
    """Two values of one variable that NCCL reads alike (`1` and `0x1` for an integer)."""
    if a is None or b is None:
        return a == b
    if name in INT_DEFAULTS:
        return read_int(name, {name: a}).value == read_int(name, {name: b}).value
    if name == "NCCL_DEBUG":
        return debug_level(a) == debug_level(b)
    return a == b
