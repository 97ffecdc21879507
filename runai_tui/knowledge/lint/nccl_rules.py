"""Lint rules on NCCL and Gloo values NCCL (or torch) will not read as they were meant:
`NCCL_IB_DISABLE=true` (NCCL reads 0: InfiniBand stays on), `NCCL_DEBUG=verbose` (NCCL prints
nothing), `NCCL_IB_HCA= mlx5` (a space: no device matches). The readings are nccl_env's.

Listed in lint/registry.py's RULE_MODULES.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from runai_tui.knowledge import nccl_env
from runai_tui.knowledge.lint.checks import Facts, RuleBook, RuleFinding

BOOK = RuleBook()
rule = BOOK.rule


def _envs(f: Facts) -> Iterator[tuple[str, str, str]]:
    """(field, variable, value) of the workers' env, then the master's own."""
    for where, env in (("env", f.profile.env), ("master_env", f.profile.master_env)):
        for name, value in env.items():
            yield f"{where}.{name}", name, value


def _shown(value: str) -> str:
    return repr(value) if len(value) <= 40 else repr(value[:37] + "...")


@rule(
    "nccl-int-misread",
    "warning",
    "env",
    "an NCCL integer NCCL reads otherwise than written",
    fields="`env.NAME`, `master_env.NAME`",
    means=(
        "NCCL reads its integer variables with `strtoll(value, NULL, 0)`: a word is 0 "
        "(`NCCL_IB_DISABLE=true` keeps InfiniBand on), trailing text is dropped (`1.5` is 1), a "
        "leading 0 is octal (`010` is 8), an out-of-range number is the default"
    ),
    fix="write the number NCCL should read: `NCCL_IB_DISABLE=1`",
    example=("env.NCCL_SOCKET_NTHREADS=two",),
)
def _int_misread(f: Facts) -> Iterable[RuleFinding]:
    for field, name, value in _envs(f):
        if name not in nccl_env.INT_DEFAULTS:
            continue
        reading = nccl_env.read_int(name, {name: value})
        if reading.how in ("unset", "empty") or reading.plain:
            continue
        meant = reading.meant()
        if meant == reading.value:
            continue
        yield RuleFinding(
            f"{name}={_shown(value)}: NCCL reads {reading.value} ({_why(reading)})"
            f"{_consequence(name, reading.value, meant)}",
            _int_fix(field, name, meant),
            field=field,
        )


def _int_fix(field: str, name: str, meant: int | None) -> str:
    if meant is not None:
        return f"--set {field}={meant} (a decimal number, as NCCL reads it)"
    if name == "NCCL_IB_DISABLE":
        return f"--set {field}=1 for sockets, {field}=0 for InfiniBand/RoCE"
    return (
        f"--set {field}=N with a decimal number, or drop it for NCCL's default "
        f"({nccl_env.INT_DEFAULTS[name]})"
    )


def _why(reading: nccl_env.IntReading) -> str:
    if reading.how == "no digits":
        return "strtoll finds no digits in it"
    if reading.how == "out of range":
        return "out of range: NCCL falls back to its default"
    if reading.rest.strip():
        return f"strtoll stops before {_shown(reading.rest)}"
    return f"{reading.used.strip()} is octal"


def _consequence(name: str, value: int, meant: int | None) -> str:
    if name != "NCCL_IB_DISABLE":
        return ""
    if value == 0:
        return ": InfiniBand/RoCE stays on" + (" although it was meant off" if meant else "")
    return ": InfiniBand/RoCE is off, NCCL uses sockets"


@rule(
    "nccl-debug-unknown",
    "warning",
    "env.NCCL_DEBUG",
    "an NCCL_DEBUG level NCCL does not know",
    fields="`env.NCCL_DEBUG`, `master_env.NCCL_DEBUG`",
    means=(
        "NCCL knows VERSION, WARN, INFO, ABORT and TRACE (any case); for anything else "
        "(`verbose`, `1`, ` INFO`) it prints nothing at all, not even its WARN lines, and "
        "`diagnose` has no NCCL evidence"
    ),
    fix="`--set env.NCCL_DEBUG=WARN` (or INFO for a first run)",
    example=("env.NCCL_DEBUG=verbose",),
)
def _debug_unknown(f: Facts) -> Iterable[RuleFinding]:
    for field, name, value in _envs(f):
        if name != "NCCL_DEBUG" or nccl_env.debug_level(value) != "":
            continue
        near = value.strip().upper()
        known = near in nccl_env.DEBUG_LEVELS
        hint = f" (spaces around {near}: only NCCL 2.30 trims them)" if known else ""
        yield RuleFinding(
            f"NCCL_DEBUG={_shown(value)} is no level NCCL knows{hint}: it prints nothing at "
            "all, not even its WARN lines, so a failure leaves no NCCL evidence",
            f"--set {field}={near if hint else 'WARN'} (levels: "
            f"{', '.join(nccl_env.DEBUG_LEVELS)}; INFO shows the transport)",
            field=field,
        )


@rule(
    "nccl-list-misread",
    "warning",
    "env",
    "an interface or HCA list NCCL or Gloo reads otherwise than written",
    fields="`env.NCCL_SOCKET_IFNAME`, `env.NCCL_IB_HCA`, `env.GLOO_SOCKET_IFNAME`",
    means=(
        "NCCL's lists (`NCCL_SOCKET_IFNAME`, `NCCL_IB_HCA`) are prefixes, `=` exact, `^` "
        "excluding, never trimmed (` mlx5` matches nothing); `GLOO_SOCKET_IFNAME` takes exact "
        "names only (`^lo` is an interface named `^lo`, `eth` no prefix)"
    ),
    fix="write the names without spaces; `^=` for an exact exclusion; exact names for Gloo",
    example=("env.NCCL_SOCKET_IFNAME=net1, eth0",),
)
def _list_misread(f: Facts) -> Iterable[RuleFinding]:
    for field, name, value in _envs(f):
        if name in nccl_env.LIST_VARIABLES:
            problems = nccl_env.list_problems(name, value)
        elif name == nccl_env.GLOO_IFNAME:
            problems = _gloo_problems(value)
        else:
            continue
        if problems:
            yield RuleFinding(
                f"{name}={_shown(value)}: " + "; ".join(problems),
                f"--set {field}={_suggested(name, value)}",
                field=field,
            )


def _gloo_problems(value: str) -> list[str]:
    out = []
    names = nccl_env.gloo_interfaces(value)
    if len(value) <= 1:
        out.append("torch ignores a value of one character and binds the host name's address")
    if any(not n for n in names):
        out.append("an empty name between commas: torch refuses to start the process group")
    if any(n != n.strip() for n in names):
        out.append("Gloo does not trim: a name with spaces around it is no interface")
    if value.startswith(("^", "=")):
        out.append("Gloo takes exact names: `^` and `=` are part of the name, not NCCL's syntax")
    return out


def _suggested(name: str, value: str) -> str:
    items = [i.strip() for i in value.split(",") if i.strip()]
    if name == nccl_env.GLOO_IFNAME:
        items = [i.lstrip("^=") for i in items if not i.startswith("^")]
    elif value.startswith("=^"):
        items[0] = "^=" + items[0][2:]
    return ",".join(items) or "eth0"
