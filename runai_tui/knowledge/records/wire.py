"""The trainer's `comm` record (trainer/comm_check.py): what the wire delivered, read once for
`burnin`'s table, `diagnose`'s slow-wire findings and `plan --wire-from`.

The record holds, per all-reduce size, the time and nccl-tests' two bandwidths (algbw = bytes /
time; busbw = algbw x 2(n-1)/n), the one-way GB/s of each pair of neighbouring ranks with their
pods and nodes, and each rank's link as its pod read it (TCP: /sys/class/net/IF/speed; RDMA:
/sys/class/infiniband/*/ports/*/rate), in Gb/s. Bandwidths are bytes (GB/s) as nccl-tests prints
them; link speeds are bits (Gb/s) as the kernel and NICs say them.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from runai_tui.knowledge import nccl_env
from runai_tui.knowledge.records.progress import parse_metric_line
from runai_tui.trainer_flags import records

COMM_MARK = records.kind_mark(records.COMM)  # on every wire check record line

WIRE_SHARE = 0.5  # busbw below this share of the link's speed is a slow wire
PAIR_FACTOR = 3.0  # a pair this many times slower than the others' upper median: a slow link
MiB = 1 << 20


@dataclass(frozen=True)
class SizeRow:
    bytes: int
    time_ms: float
    algbw_gbs: float
    busbw_gbs: float


@dataclass(frozen=True)
class Pair:
    ranks: tuple[int, int]
    pods: tuple[str, str]
    nodes: tuple[str, str]
    gbs: float  # one-way GB/s of the pair's exchange

    @property
    def between_pods(self) -> bool:
        """The pair crosses the network (two pods); inside one pod it is NVLink/PCIe/shm."""
        return self.pods[0] != self.pods[1]

    def text(self) -> str:
        a, b = self.ranks
        return (
            f"ranks {a}-{b} (pods {self.pods[0]} / {self.pods[1]}, nodes {self.nodes[0]} / "
            f"{self.nodes[1]}): {self.gbs:g} GB/s"
        )


@dataclass(frozen=True)
class WireCheck:
    """A `comm` record, read."""

    backend: str
    algorithm: str
    transport: str
    world_size: int
    sizes: tuple[SizeRow, ...]
    pairs: tuple[Pair, ...]
    links: tuple[tuple[str, float | None, str], ...]  # per rank: (kind, Gb/s or None, note)
    seconds: float

    @property
    def busbw_gbs(self) -> float:
        """The bus bandwidth at the largest size (the gradient's, or the bucket's)."""
        return self.sizes[-1].busbw_gbs if self.sizes else 0.0

    @property
    def slowest_pair(self) -> Pair | None:
        return min(self.pairs, key=lambda p: p.gbs) if self.pairs else None

    def link(self) -> tuple[str, float] | None:
        """(kind, Gb/s) of the slowest link a rank read (None when no rank read one)."""
        known = [(kind, gbps) for kind, gbps, _ in self.links if gbps]
        return min(known, key=lambda k: k[1]) if known else None

    def with_nodes(self, nodes: Mapping[str, str]) -> WireCheck:
        """The pairs' unknown nodes ("?": the pod was not told its node) from pod -> node."""
        pairs = tuple(
            Pair(
                p.ranks,
                p.pods,
                (_node(p.nodes[0], p.pods[0], nodes), _node(p.nodes[1], p.pods[1], nodes)),
                p.gbs,
            )  # fmt: skip
            for p in self.pairs
        )
        return WireCheck(self.backend, self.algorithm, self.transport, self.world_size,
                         self.sizes, pairs, self.links, self.seconds)  # fmt: skip


def _node(said: str, pod: str, nodes: Mapping[str, str]) -> str:
    return nodes.get(pod) or said if said in ("", "?") else said


def read_check(record: Mapping[str, object]) -> WireCheck | None:
    """A `comm` record as a WireCheck (None: not one, or one without sizes)."""
    if record.get(records.KIND) != records.COMM:
        return None
    sizes = []
    for r in _dicts(record.get("sizes")):
        row = [_number(r.get(k)) for k in ("bytes", "time_ms", "algbw_gbs", "busbw_gbs")]
        if all(v is not None for v in row):
            size, time_ms, algbw, busbw = (v or 0.0 for v in row)
            sizes.append(SizeRow(int(size), time_ms, algbw, busbw))
    if not sizes:
        return None
    pairs = []
    for p in _dicts(record.get("pairs")):
        ranks, pods, nodes = (_words(p.get(k)) for k in ("ranks", "pods", "nodes"))
        gbs = _number(p.get("gbs"))
        if gbs is not None:
            pair_ranks = (int(ranks[0]) if ranks[0].isdigit() else -1,
                          int(ranks[1]) if ranks[1].isdigit() else -1)  # fmt: skip
            pairs.append(Pair(pair_ranks, pods, nodes, gbs))
    backend = str(record.get("backend", "?"))
    read = [rank_link(rank, backend) for rank in _dicts(record.get("ranks"))]
    links = [link for _, link in read]
    transport = read[0][0] if read and read[0][0] else str(record.get("transport", "?"))
    world = _number(record.get("world_size"))
    return WireCheck(
        backend, str(record.get("algorithm", "?")), transport,
        int(world) if world else len(links),
        tuple(sizes), tuple(pairs), tuple(links), _number(record.get("seconds")) or 0.0,
    )  # fmt: skip


def rank_link(
    rank: Mapping[str, object], backend: str
) -> tuple[str, tuple[str, float | None, str]]:
    """(the transport in words, (kind, Gb/s or None, why none)) of one rank. An NCCL rank that
    recorded its facts (the NCCL_* it ran with, every RDMA port's and interface's speed) is
    read here as NCCL reads them (nccl_env): NCCL_IB_DISABLE through strtoll, NCCL_IB_HCA and
    NCCL_SOCKET_IFNAME as prefix lists (`mlx5` is every mlx5_N). Otherwise the rank's own
    "link" (gloo's, or a record from before the facts: transport "" then)."""
    env = rank.get("env")
    if backend == "nccl" and isinstance(env, dict) and ("rdma" in rank or "net" in rank):
        said = {str(k): str(v) for k, v in env.items()}
        return _nccl_link(said, _speeds(rank.get("rdma")), _speeds(rank.get("net")))
    link = rank.get("link")
    got = link if isinstance(link, dict) else {}
    kind, note = str(got.get("kind", "?")), str(got.get("note", ""))
    return "", (kind, _number(got.get("gbps")), note)


def _speeds(value: object) -> dict[str, float | None]:
    """[[name, Gb/s or null], ...] as name -> Gb/s (None: unknown)."""
    out: dict[str, float | None] = {}
    for item in value if isinstance(value, list) else []:
        if isinstance(item, list) and len(item) == 2 and isinstance(item[0], str):
            gbps = _number(item[1])
            out[item[0]] = gbps if gbps and gbps > 0 else None
    return out


def _nccl_link(
    env: dict[str, str], rdma: dict[str, float | None], net: dict[str, float | None]
) -> tuple[str, tuple[str, float | None, str]]:
    hca = env.get("NCCL_IB_HCA")
    if not nccl_env.ib_disabled(env):
        ports = nccl_env.selected_ports(hca, rdma)
        rates = [rate for p in ports if (rate := rdma[p])]
        if rates:
            return f"nccl NET/IB asked ({','.join(ports)})", ("rdma", min(rates), "")
        if hca is not None:
            seen = ", ".join(rdma) or "none"
            why = f"no port rate readable for NCCL_IB_HCA={hca} (RDMA ports: {seen})"
            return "nccl NET/IB asked", ("rdma", None, why)
    ifname = env.get("NCCL_SOCKET_IFNAME")
    if ifname is None:
        return "nccl NET/Socket on the interface NCCL picks", ("tcp", None, "no interface named")
    chosen = nccl_env.selected(ifname, net)
    where = ",".join(chosen) or "no interface"
    speeds = [speed for i in chosen if (speed := net[i])]
    if speeds:
        return f"nccl NET/Socket on {where}", ("tcp", min(speeds), "")
    if chosen:
        why = f"NCCL_SOCKET_IFNAME={ifname} selects {where}, none with a readable speed"
    else:
        why = f"NCCL_SOCKET_IFNAME={ifname} selects none of {', '.join(net) or 'no interfaces'}"
    return f"nccl NET/Socket on {where}", ("tcp", None, why)


def _dicts(value: object) -> list[dict[str, object]]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def _number(value: object) -> float | None:
    """A JSON number as a float (None for anything else, a bool included)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def _words(value: object) -> tuple[str, str]:
    """The first two items of a JSON list as text ("?" for a missing one)."""
    items = [str(v) for v in value[:2]] if isinstance(value, list) else []
    items += ["?"] * (2 - len(items))
    return items[0], items[1]


def find_check(lines: Iterable[str]) -> WireCheck | None:
    """The newest `comm` record among log lines (None without one)."""
    found = None
    for line in lines:
        if COMM_MARK not in line:  # a prefilter: the line is parsed below
            continue
        record = parse_metric_line(line)
        check = read_check(record) if record is not None else None
        found = check or found
    return found


def where_measured(check: WireCheck) -> str:
    return f"at {size_text(check.sizes[-1].bytes)} over {check.world_size} ranks"


def size_text(size: int) -> str:
    return f"{size / MiB:g} MiB" if size % (MiB // 4) == 0 else f"{size / MiB:.1f} MiB"


def table(check: WireCheck) -> str:
    """burnin's table: one row per size, then the slowest pair and what the link should give."""
    rows = [["SIZE", "TIME ms", "ALGBW GB/s", "BUSBW GB/s"]]
    rows += [[size_text(r.bytes), f"{r.time_ms:.2f}", f"{r.algbw_gbs:.3f}", f"{r.busbw_gbs:.3f}"]
             for r in check.sizes]  # fmt: skip
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    out = ["  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths, strict=True)))
           for r in rows]  # fmt: skip
    out.append("")
    out.append(
        f"{check.world_size} ranks, {check.backend} ({check.algorithm}), {check.transport}; "
        f"checked in {check.seconds:g} s"
    )
    slowest = check.slowest_pair
    if slowest is not None:
        out.append(f"slowest pair: {slowest.text()}")
    link = check.link()
    if link is not None:
        kind, gbps = link
        share = check.busbw_gbs * 8 / gbps
        out.append(
            f"link: {gbps:g} Gb/s ({kind}); busbw {check.busbw_gbs * 8:.1f} Gb/s is {share:.0%} of it"
        )
    else:
        note = next((n for _, g, n in check.links if n), "no rank read its link's speed")
        out.append(f"link: speed unknown ({note})")
    return "\n".join(out)


# -- judgements (diagnose) --------------------------------------------------------------------


def below_link(check: WireCheck) -> str | None:
    """Evidence when busbw is under WIRE_SHARE of the slowest link a rank read, else None."""
    link = check.link()
    if link is None or not check.sizes:
        return None
    kind, gbps = link
    got = check.busbw_gbs * 8
    if got >= WIRE_SHARE * gbps:
        return None
    slowest = check.slowest_pair
    pair = f"; slowest pair {slowest.text()}" if slowest is not None else ""
    return (
        f"all-reduce busbw {check.busbw_gbs:g} GB/s ({got:.1f} Gb/s) at "
        f"{size_text(check.sizes[-1].bytes)} is {got / gbps:.0%} of the {gbps:g} Gb/s {kind} "
        f"link the pods read (under {WIRE_SHARE:.0%}){pair}"
    )


def slow_pair(check: WireCheck) -> tuple[Pair, str, str] | None:
    """(the slowest pair, the node to suspect, evidence) when one pair is PAIR_FACTOR times
    slower than the upper median of the other pairs of its kind, else None. Pairs are compared
    like with like: pairs between pods (the network) among themselves, pairs inside a pod
    (NVLink, PCIe, shared memory) among themselves; a healthy 2 x 8 job's 2 network pairs are
    not slow next to its 14 NVLink pairs. A kind needs three pairs or more (a slow node is in
    two of three pairs, and the upper median of the other two is then the fast one). The
    node: inside a pod, the pod's; between pods, that of the pair's pod whose pairs of the kind
    are slower on average; "" when the two are alike (one slow link: either end)."""
    found = [hit for kind in (True, False) if (hit := _slow_of_kind(check, kind)) is not None]
    return min(found, key=lambda hit: hit[0].gbs) if found else None


def _slow_of_kind(check: WireCheck, between: bool) -> tuple[Pair, str, str] | None:
    pairs = [p for p in check.pairs if p.between_pods == between]
    if len(pairs) < 3:
        return None
    ordered = sorted(pairs, key=lambda p: p.gbs)
    slowest = ordered[0]
    others = statistics.median_high(p.gbs for p in ordered[1:])
    if slowest.gbs * PAIR_FACTOR > others:
        return None
    kind = "between pods" if between else "inside a pod"
    head = (
        f"pair {slowest.text()}, {others / max(slowest.gbs, 1e-9):.1f}x slower than the "
        f"upper median {others:g} GB/s of the other pairs {kind}"
    )
    if not between:
        node = slowest.nodes[0]
        return slowest, node, f"{head}; both ranks are on node {node}"

    def mean_of(pod: str) -> float:
        return statistics.fmean(p.gbs for p in pairs if pod in p.pods)

    means = [mean_of(pod) for pod in slowest.pods]
    if means[0] == means[1]:
        ends = " / ".join(slowest.nodes)
        return slowest, "", f"{head}; the other pairs of both pods are alike: the link {ends}"
    side = 0 if means[0] < means[1] else 1
    rank, node = slowest.ranks[side], slowest.nodes[side]
    return (
        slowest,
        node,
        (
            f"{head}; rank {rank} (node {node}) has the slower pairs: {means[side]:.3g} GB/s on "
            "average"
        ),
    )
