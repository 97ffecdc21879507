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
    links = []
    for rank in _dicts(record.get("ranks")):
        link = rank.get("link")
        said = link if isinstance(link, dict) else {}
        links.append(
            (str(said.get("kind", "?")), _number(said.get("gbps")), str(said.get("note", "")))
        )
    world = _number(record.get("world_size"))
    return WireCheck(
        str(record.get("backend", "?")), str(record.get("algorithm", "?")),
        str(record.get("transport", "?")), int(world) if world else len(links),
        tuple(sizes), tuple(pairs), tuple(links), _number(record.get("seconds")) or 0.0,
    )  # fmt: skip


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
    slower than the upper median of the others (three pairs or more: a slow node is in two of
    three pairs, and the upper median of the other two is then the fast one), else None. The
    node: that of the pair's rank whose pairs are slower on average (a rank is in two pairs)."""
    if len(check.pairs) < 3:
        return None
    ordered = sorted(check.pairs, key=lambda p: p.gbs)
    slowest = ordered[0]
    others = statistics.median_high(p.gbs for p in ordered[1:])
    if slowest.gbs * PAIR_FACTOR > others:
        return None

    def mean_of(rank: int) -> float:
        return statistics.fmean(p.gbs for p in check.pairs if rank in p.ranks)

    a, b = slowest.ranks
    rank = a if mean_of(a) < mean_of(b) else b
    node = slowest.nodes[0] if rank == a else slowest.nodes[1]
    evidence = (
        f"pair {slowest.text()}, {others / max(slowest.gbs, 1e-9):.1f}x slower than the "
        f"upper median {others:g} GB/s of the other pairs; rank {rank} (node {node}) has the "
        f"slower pairs: {mean_of(rank):.3g} GB/s on average"
    )
    return slowest, node, evidence
