"""The trainer's gloo line (trainer/distributed.gloo_network): where Gloo's TCP transport is,
found as ProcessGroupGloo finds it, in the words `runai-tui diagnose` reads for TRANSPORT."""

from __future__ import annotations

import socket

from runai_tui.knowledge.diagnose import TRANSPORT_GLOO, diagnose_lines
from trainer.distributed import gloo_network


def transport_of(line: str) -> tuple[str, str]:
    [pod] = diagnose_lines({"p": ["x", f"trainer: rank 0: {line}", "y"]}).pods
    return pod.transport, pod.device


def test_the_interface_gloo_socket_ifname_names_is_the_one_said() -> None:
    line = gloo_network({"GLOO_SOCKET_IFNAME": "eth1,eth2"})
    assert line == "Using network gloo/TCP on eth1,eth2 (GLOO_SOCKET_IFNAME)"
    assert transport_of(line) == (TRANSPORT_GLOO, "eth1,eth2")


def test_without_it_the_host_name_s_address_and_the_interface_holding_it() -> None:
    line = gloo_network({}, host="127.0.0.1")
    assert line == "Using network gloo/TCP on lo (127.0.0.1, the address of 127.0.0.1)"
    assert transport_of(line) == (TRANSPORT_GLOO, "lo")
    # This machine's own name, as a pod's trainer sees its own: an interface or the address.
    host = socket.gethostname()
    mine = gloo_network({}, host=host)
    assert mine.startswith("Using network gloo/TCP on ") and f"the address of {host})" in mine
    assert transport_of(mine)[1] not in ("", "unknown")


def test_a_name_that_resolves_to_nothing_usable_is_the_loopback() -> None:
    line = gloo_network({}, host="no-such-host.invalid")
    assert line == "Using network gloo/TCP on lo (no-such-host.invalid resolves to no address to bind)"  # fmt: skip
    assert transport_of(line) == (TRANSPORT_GLOO, "lo")
