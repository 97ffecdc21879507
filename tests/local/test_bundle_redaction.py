"""The post-mortem bundle of a real job on the local cluster that carries secrets in its env and
prints them (and others no name announces) in both pods' logs: no secret value in any member,
every JSON member parses, and the evidence around them survives byte for byte."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from tests import secret_corpus as corpus
from tests.local.conftest import wait_phase

# Real jobs on the local cluster (several processes each): off `make check`'s quick loop.
pytestmark = pytest.mark.slow

JOB = "leaky"
# Both pods print the step line, their secrets by variable, an AWS key id and a key block that
# only the scanner knows, then exit: the job completes and its logs stay.
SCRIPT = (
    f'echo "{corpus.MARKER}"; echo "hf $HF_TOKEN pass $PASSPHRASE db $DATABASE_URL"; '
    f'echo "aws key id {corpus.AWS_KEY_ID} secret $AWS_SECRET_ACCESS_KEY"; '
    f"printf '%s\\n' '{corpus.PRIVATE_KEY}'; echo done"
)


def profile() -> str:
    env = "\n".join(f"  {k}: {json.dumps(v)}" for k, v in corpus.ENV.items())
    return (
        f"extends: retinanet-local\njob_name: {JOB}\nrestart_policy: Never\n"
        f"env:\n{env}\ncommand: [sh, -c, {json.dumps(SCRIPT)}]\nargs: []\n"
    )


def tui(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "RUNAI_TUI_BACKEND": "local"}
    return subprocess.run([sys.executable, "-m", "runai_tui.cli", *args], capture_output=True,
                          text=True, timeout=120, env=env)  # fmt: skip


def test_the_bundle_of_a_leaky_job_holds_no_secret_and_stays_parseable(tmp_path: Path) -> None:
    folder = Path(os.environ["XDG_CONFIG_HOME"]) / "runai-tui" / "profiles"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{JOB}.yaml").write_text(profile())
    done = tui("submit", "--profile", JOB)
    assert done.returncode == 0, done.stderr
    wait_phase(JOB, "Completed", "Failed")
    raw = tui("logs", JOB).stdout  # the secrets are there to be redacted
    assert corpus.HF_TOKEN in raw and corpus.AWS_KEY_ID in raw and corpus.KEY_BODY[0] in raw
    out = tmp_path / "leaky.tar.gz"
    done = tui("bundle", JOB, "-o", str(out))
    assert done.returncode == 0, done.stderr
    with tarfile.open(out) as tar:
        members = {
            m.name.removeprefix(f"{JOB}/"): tar.extractfile(m).read()  # type: ignore[union-attr]
            for m in tar.getmembers()
            if m.isfile()
        }
    pods = [f"logs/{JOB}-master-0.log", f"logs/{JOB}-worker-0.log"]
    assert {"describe.json", "submission.json", "manifest.json", *pods} <= set(members)
    secrets = [*corpus.SECRET_VALUES, *corpus.KEY_BODY]
    leaks = [(name, s) for name, data in members.items() for s in secrets if s.encode() in data]
    assert leaks == []
    for name, data in members.items():
        if name.endswith(".json"):
            json.loads(data)  # every JSON member is still JSON
    for pod in pods:
        log = members[pod].decode()
        assert log.splitlines()[0] == corpus.MARKER, log
        assert "<redacted:private-key>\ndone" in log and "BEGIN" not in log
        assert "<redacted:aws-access-key>" in log
    describe = json.loads(members["describe.json"])
    words = describe["spec"]["flags"]["environment-variable"]
    assert "NCCL_IB_PKEY=0" in words and "API_KEY=<redacted:short>" in words
    assert "HF_TOKEN=<redacted>" in words
    record = json.loads(members["submission.json"])
    assert record["data"]["env"]["PASSPHRASE"] == "<redacted>"
    manifest = json.loads(members["manifest.json"])
    kinds = manifest["redactions"]["by_kind"]
    assert kinds["private-key"] >= 2 and kinds["aws-access-key"] >= 2 and kinds["known-value"] >= 2
    assert manifest["redactions"]["short"] == ["API_KEY"]
