"""What a read-only probe prints inside a pod: `MARK KEY VALUE` lines among whatever else the
shell says (`@@pf` for preflight, `@@rs` for resources), read the same way for both."""

from __future__ import annotations


def parse_facts(output: str, mark: str) -> dict[str, list[str]]:
    """`MARK KEY VALUE` lines into {KEY: [VALUE, ...]} in order; every other line is ignored."""
    facts: dict[str, list[str]] = {}
    prefix = mark + " "
    for line in output.splitlines():
        if line.startswith(prefix):
            key, _, value = line[len(prefix) :].partition(" ")
            facts.setdefault(key, []).append(value.strip())
    return facts


def last_fact(facts: dict[str, list[str]], key: str) -> str:
    """The last value printed for `key`, "" when the probe printed none."""
    values = facts.get(key)
    return values[-1] if values else ""
