"""port-forward's argv (the client is the one place that spells it) and its output lines."""

from __future__ import annotations

import pytest

from runai_tui.cli.port_forward_commands import parse_ports
from runai_tui.runai.backend import select_backend
from runai_tui.runai.client import RunaiClient
from runai_tui.runai.parse import parse_forwarding, says_port_in_use
from runai_tui.shapes.errors import UsageError


def test_argv_follows_the_reference() -> None:
    client = RunaiClient(select_backend("local"), project="team-a")
    assert client.port_forward_args("job", 8080, 6006) == [
        "training", "pytorch", "port-forward", "job", "-p", "team-a", "--port", "8080:6006",
    ]  # fmt: skip
    assert client.port_forward_args("job", 0, 6006, pod="job-worker-0")[-2:] == [
        "--pod",
        "job-worker-0",
    ]


def test_forwarding_lines_and_port_in_use() -> None:
    assert parse_forwarding("Forwarding from 127.0.0.1:41234 -> 6006") == ("127.0.0.1", 41234, 6006)
    assert parse_forwarding("Forwarding from [::1]:8080 -> 6006") == ("[::1]", 8080, 6006)
    assert parse_forwarding("Handling connection for 8080") is None
    kubectl = (
        "Unable to listen on port 6006: Listeners failed to create with the following errors: "
        "[unable to create listener: Error listen tcp4 127.0.0.1:6006: bind: address already in use]"
    )
    assert says_port_in_use(kubectl) and not says_port_in_use("pod not found")


@pytest.mark.parametrize(
    ("text", "ports"), [("6006", (6006, 6006)), ("8080:6006", (8080, 6006)), ("0:6006", (0, 6006))]
)
def test_port_specs(text: str, ports: tuple[int, int]) -> None:
    assert parse_ports(text) == ports


@pytest.mark.parametrize("text", ["", "x", "80:", "70000", "1:0", "-1:80"])
def test_bad_port_specs_are_usage_errors(text: str) -> None:
    with pytest.raises(UsageError):
        parse_ports(text)
