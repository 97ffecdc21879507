"""End to end: the installed `runai-tui` in a real pseudo-terminal (pexpect), the screen read
with a terminal emulator (pyte), on the real local cluster: a submitted job shows up, its logs
open (hostile text stays inert), an exec round trip into the pod's shell, a profile edited with
$EDITOR, quit, and the terminal is left in its normal mode."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pexpect
import pyte
import pytest

from runai_tui.runai.backend import select_backend
from runai_tui.runai.client import RunaiClient
from runai_tui.shapes.errors import RunaiError

ROOT = Path(__file__).resolve().parents[2]
RUNAI_TUI = Path(sys.executable).parent / "runai-tui"
ROWS, COLS = 40, 130
DEADLINE_S = 60.0

POD_SCRIPT = r"""
echo "hello from the e2e pod"
printf '[bold red]inert[/] \033[2J \033]0;pwned\007 end\n'
echo '{"kind":"train","step":7,"epoch":1,"loss":0.4321,"lr":0.001,"images_per_sec":9.5}'
echo ready
exec sleep 600
"""


class AltScreen(pyte.Screen):
    """pyte ignores the alternate screen (mode 1049); clearing on each switch is enough to see
    the app step aside for the shell and come back."""

    def set_mode(self, *modes: int, **kwargs: object) -> None:
        if kwargs.get("private") and 1049 in modes:
            self.erase_in_display(2)
        super().set_mode(*modes, **kwargs)

    def reset_mode(self, *modes: int, **kwargs: object) -> None:
        if kwargs.get("private") and 1049 in modes:
            self.erase_in_display(2)
        super().reset_mode(*modes, **kwargs)


class Terminal:
    """A child on a pty plus a pyte screen fed with everything it prints."""

    def __init__(self, child: pexpect.spawn) -> None:
        self.child = child
        self.screen = AltScreen(COLS, ROWS)
        self.stream = pyte.ByteStream(self.screen)
        self.raw = bytearray()

    def pump(self, seconds: float = 0.1) -> None:
        try:
            data = self.child.read_nonblocking(65536, timeout=seconds)
        except pexpect.TIMEOUT:
            return
        except pexpect.EOF:
            time.sleep(seconds)
            return
        self.raw.extend(data)
        self.stream.feed(data)

    def text(self) -> str:
        return "\n".join(self.screen.display)

    def wait(self, condition: Callable[[str], bool], what: str) -> None:
        deadline = time.monotonic() + DEADLINE_S
        while not condition(self.text()):
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {what}; screen:\n{self.text()}")
            self.pump()

    def wait_for(self, needle: str) -> None:
        self.wait(lambda text: needle in text, repr(needle))

    def send(self, keys: str) -> None:
        self.child.send(keys)
        self.pump(0.05)


@pytest.fixture
def local_job(tmp_path: Path):
    script = tmp_path / "pod.sh"
    script.write_text(POD_SCRIPT)
    client = RunaiClient(select_backend("local"), timeout=30)
    client.submit(
        [
            "runai",
            "training",
            "pytorch",
            "submit",
            "e2e-job",
            "--workers",
            "1",
            "--image",
            "local/e2e:1",
            "--command",
            "--",
            "sh",
            str(script),
        ]
    )
    yield "e2e-job"
    for job in client.list_jobs():
        with contextlib.suppress(RunaiError):
            client.delete(job.name)


@pytest.mark.slow
def test_runai_tui_in_a_real_terminal(local_job: str, tmp_path: Path) -> None:
    # $EDITOR is a real program run on the real terminal while the app is suspended.
    editor = tmp_path / "editor.sh"
    editor.write_text(
        "#!/bin/sh\n"
        "echo 'editor running'\n"
        "sed -i 's/^description: .*/description: edited in a real editor/' \"$1\"\n"
    )
    editor.chmod(0o755)
    env = {
        **os.environ,
        "TERM": "xterm-256color",
        "RUNAI_TUI_BACKEND": "local",
        "LANG": "C.UTF-8",
        "EDITOR": str(editor),
    }
    env.pop("NO_COLOR", None)
    env.pop("VISUAL", None)
    # The shell reports the app's exit code and the terminal mode after the app is gone.
    child = pexpect.spawn(
        "/bin/sh",
        ["-c", f'"{RUNAI_TUI}" --refresh 1; echo "rc=$?"; stty -a'],
        env=env,
        cwd=str(tmp_path),
        dimensions=(ROWS, COLS),
    )
    term = Terminal(child)
    try:
        term.wait(lambda t: "e2e-job" in t and "Running" in t, "the job listed as Running")
        assert "LOCAL" in term.text()

        term.send("l")
        # The log lines and the training panel above them are painted in separate frames.
        term.wait(
            lambda t: "ready" in t and "step 7 · epoch 1 · loss 0.4321" in t,
            "the log lines and the training panel",
        )
        assert "[bold red]inert[/] ^[[2J ^[]0;pwned^G end" in term.text()
        assert b"pwned\x07" not in bytes(term.raw)  # the OSC never reached the terminal
        term.send("\x1b")  # back to the jobs screen
        term.wait(lambda t: "d/enter Describe" in t, "jobs footer")

        term.send("s")  # the app suspends; bash (or sh) in the pod owns the terminal
        term.wait(lambda t: "d/enter Describe" not in t and t.strip(), "the pod's shell prompt")
        term.send("echo marker-$((6 * 7)) in $POD_NAME\r")
        term.wait_for("marker-42 in e2e-job-master-0")
        term.send("exit\r")
        term.wait(lambda t: "exited with code 0" in t, "the app back after the shell")
        term.wait(lambda t: "e2e-job" in t, "the jobs table back")

        term.send("p")  # profiles; the first one is selected
        term.wait(lambda t: "e Edit" in t, "profiles screen")
        term.send("e")
        term.wait(lambda t: "Saved " in t, "the edited profile saved")
        edited = list((Path(env["XDG_CONFIG_HOME"]) / "runai-tui" / "profiles").glob("*.yaml"))
        assert len(edited) == 1
        assert "description: edited in a real editor" in edited[0].read_text()
        term.wait(lambda t: "edited in a real editor" in t, "the new description listed")
        term.send("\x1b")
        term.wait(lambda t: "d/enter Describe" in t, "jobs footer")

        term.send("q")
        term.wait(lambda t: "rc=0" in t, "the app to exit cleanly")
        term.wait(lambda t: "speed" in t or "icanon" in t, "stty output")
        child.expect(pexpect.EOF, timeout=DEADLINE_S)
        term.raw.extend(child.before or b"")
        stty = bytes(term.raw).rsplit(b"rc=0", 1)[1].decode(errors="replace")
        words = stty.split()
        assert "icanon" in words and "echo" in words  # cooked mode again, echo on
        assert "-icanon" not in words and "-echo" not in words
        assert b"\x1b[?1049l" in term.raw  # left the alternate screen
    finally:
        # The shell and the app share the pty's process group: end both, even on failure.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(child.pid, signal.SIGKILL)
        child.close(force=True)
