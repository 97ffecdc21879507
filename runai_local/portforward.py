"""`runai-local training pytorch port-forward JOB --port LOCAL:REMOTE [--pod POD]`.

A local pod is a process group of this machine and shares its network: the pod's port REMOTE
already is 127.0.0.1:REMOTE. So there is nothing to tunnel, and pretending otherwise would lie:

- LOCAL == REMOTE: the pod's own port is the local address. The command says so in kubectl's
  words (`Forwarding from 127.0.0.1:6006 -> 6006`, plus a note that it is already local) and then
  waits like a forward, so callers see one behaviour on both backends.
- LOCAL != REMOTE (LOCAL 0 picks a free port): a small TCP relay listens on LOCAL and opens
  127.0.0.1:REMOTE for each connection, bytes copied both ways as they come.

Either way it runs until it is killed, or until the pod stops running (`lost connection to
pod`, exit 1, as kubectl's forward ends with its pod). A LOCAL port in use fails at once with
kubectl's `address already in use` wording.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import sys
from dataclasses import dataclass
from pathlib import Path

from runai_local import jobs
from runai_local.errors import LocalError

POD_CHECK_SECONDS = 1.0
_CHUNK = 65536


class ForwardError(LocalError):
    """Printed as `Error: <message>`; exit 1."""


@dataclass(frozen=True)
class PortPair:
    local: int
    remote: int


def parse_ports(specs: list[str]) -> list[PortPair]:
    """`--port` values: LOCAL:REMOTE, or REMOTE alone (LOCAL = REMOTE)."""
    if not specs:
        raise ForwardError("at least one --port LOCAL:REMOTE is required")
    pairs = []
    for spec in specs:
        local_text, _, remote_text = spec.rpartition(":")
        try:
            remote = int(remote_text)
            local = int(local_text) if local_text else remote
        except ValueError:
            raise ForwardError(f"invalid port '{spec}': expected LOCAL:REMOTE numbers") from None
        if not (0 <= local <= 65535 and 1 <= remote <= 65535):
            raise ForwardError(f"invalid port '{spec}': ports are 1-65535 (LOCAL 0: any free)")
        pairs.append(PortPair(local, remote))
    return pairs


def listen_host(address: str | None) -> str:
    """`localhost` (the default) is 127.0.0.1 here: one loopback listener, no IPv6 surprise."""
    return "127.0.0.1" if not address or address == "localhost" else address


def _say(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


async def _pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while chunk := await reader.read(_CHUNK):
            writer.write(chunk)
            await writer.drain()
        if writer.can_write_eof():
            writer.write_eof()
    except (ConnectionError, OSError):
        pass


def _relay(remote: int) -> object:
    async def connected(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", remote)
        except OSError as exc:
            # kubectl logs this and drops the one connection; the forward goes on.
            print(
                f"error forwarding port {remote} to pod: dial tcp4 127.0.0.1:{remote}: "
                f"{exc.strerror or exc}",
                file=sys.stderr,
                flush=True,
            )
            writer.close()
            return
        try:
            await asyncio.gather(_pump(reader, up_writer), _pump(up_reader, writer))
        finally:
            for w in (writer, up_writer):
                w.close()
                with contextlib.suppress(ConnectionError, OSError):
                    await w.wait_closed()

    return connected


async def _listen(host: str, pair: PortPair) -> asyncio.Server:
    try:
        return await asyncio.start_server(_relay(pair.remote), host, pair.local)  # type: ignore[arg-type]
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            raise ForwardError(
                f"unable to listen on port {pair.local}: listen tcp4 {host}:{pair.local}: "
                "bind: address already in use"
            ) from None
        raise ForwardError(f"unable to listen on {host}:{pair.local}: {exc.strerror}") from None


def _pod_running(jobdir: Path, pod: str) -> bool:
    if not jobdir.exists():
        return False
    view = jobs.load(jobdir)
    phase = next(
        (p.get("phase") for p in view.status.get("pods") or [] if p.get("name") == pod), ""
    )
    return view.phase == "Running" and phase == "Running"


async def serve(jobdir: Path, pod: str, host: str, pairs: list[PortPair]) -> int:
    servers = []
    try:
        for pair in pairs:
            if pair.local == pair.remote and host == "127.0.0.1":
                _say(f"Forwarding from {host}:{pair.local} -> {pair.remote}")
                _say(f"(local cluster: pod {pod}'s port {pair.remote} is already local)")
                continue
            server = await _listen(host, pair)
            servers.append(server)
            bound = server.sockets[0].getsockname()[1]
            _say(f"Forwarding from {host}:{bound} -> {pair.remote}")
        while True:
            await asyncio.sleep(POD_CHECK_SECONDS)
            if not _pod_running(jobdir, pod):
                raise ForwardError(f"lost connection to pod {pod}: it is no longer running")
    finally:
        for server in servers:
            server.close()


def forward(jobdir: Path, pod: str, address: str | None, specs: list[str]) -> int:
    pairs = parse_ports(specs)
    if not _pod_running(jobdir, pod):
        view = jobs.load(jobdir)
        raise ForwardError(
            f"pod '{pod}' is not running (workload {view.phase}); port-forward needs a running pod"
        )
    return asyncio.run(serve(jobdir, pod, listen_host(address), pairs))
