"""A wrong GLOO_SOCKET_IFNAME, diagnosed and fixed by a resubmit on the local cluster."""

from __future__ import annotations

import pytest

from tests.local.resubmit_loop import loop, tiny, user_profile
from tests.local.test_through_runai_tui import tui


@pytest.mark.slow
def test_a_wrong_gloo_interface_is_diagnosed_and_fixed_by_a_resubmit() -> None:
    user_profile("ifbad", tiny("ifbad", extra="env: {GLOO_SOCKET_IFNAME: bad0}"))
    try:
        loop("ifbad", "socket-ifname", "env.GLOO_SOCKET_IFNAME=lo")
    finally:
        for name in ("ifbad", "ifbad-2"):
            tui("delete", name, "--yes")
