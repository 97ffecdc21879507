"""The one redaction (runai_tui/util/redaction.py, runai_tui/util/secret_scan.py) on a corpus of fake
secrets in their real shapes (tests/secret_corpus.py): which names say secret, every spelling of
`-e`, documents that stay JSON, free text that loses secrets as whole tokens only, and a bundle
whose every member still parses."""

from __future__ import annotations

import json
import string
from urllib.parse import quote

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runai_tui.knowledge.compare import argv_diff, run_json_fields
from runai_tui.util import secret_scan
from runai_tui.util.redaction import REDACTED, SHORT, Redactor, redact_argv, secret_name
from runai_tui.workflows.bundle import Bundle
from tests import secret_corpus as corpus


@pytest.mark.parametrize(
    ("name", "secret"),
    [
        ("DB_PASS", True), ("DB_PASSWORD", True), ("PASSPHRASE", True), ("GITHUB_PAT", True),
        ("MY_CREDENTIALS", True), ("GOOGLE_CREDENTIAL", True), ("API_KEY", True),
        ("AWS_SECRET_ACCESS_KEY", True), ("AWS_ACCESS_KEY_ID", True), ("HF_TOKEN", True),
        ("HFTOKEN", True), ("SLACK_BOT_TOKEN", True), ("JWT_SECRET", True), ("DB_PWD", True),
        ("env.HF_TOKEN", True), ("master_env.DB_PASSWORD", True), ("apiKey", True),
        ("accessToken", True), ("NCCL_IB_PKEY", False), ("API_KEY_FILE", False),
        ("HF_TOKEN_PATH", False), ("SSH_KEY_DIR", False), ("SSH_PUBLIC_KEY", False),
        ("TOKENIZERS_PARALLELISM", False), ("BYPASS_PROXY", False), ("PATH", False),
        ("PWD", False), ("DATABASE_URL", False), ("SECRET_NAME", False), ("key", False),
        ("runai-tui.io/submission", False), ("MONKEY_PATCH", False), ("NCCL_DEBUG", False),
        ("MAX_TOKEN_LENGTH", False), ("API_KEY_ENABLED", False), ("primary_key", True),
    ],
)  # fmt: skip
def test_which_names_say_secret(name: str, secret: bool) -> None:
    assert secret_name(name) is secret


def test_every_spelling_of_an_env_flag_is_redacted() -> None:
    token = corpus.HF_TOKEN
    argv = ["runai", "training", "pytorch", "submit", "j",
            "-e", f"HF_TOKEN={token}", f"-e=DB_PASS={token}x",
            "--environment", f"GITHUB_PAT={token}y", f"--environment=PASSPHRASE={token}z",
            "--master-environment-variable", f"MY_CREDENTIALS={token}w",
            "-e", "NCCL_IB_PKEY=0", "-e", "API_KEY=1", "-e", "NCCL_DEBUG=INFO",
            "-e", f"DATABASE_URL={corpus.DATABASE_URL}",
            "--env-secret", "HF_TOKEN=hf-secret,key=token",
            "--command", "--", "python", "train.py", corpus.DATABASE_URL, "--hf-token", f"{token}v",
            f"--db-password={token}u"]  # fmt: skip
    shown = redact_argv(argv)
    assert not [w for w in shown if token in w], shown
    assert shown[5:10] == ["-e", f"HF_TOKEN={REDACTED}", f"-e=DB_PASS={REDACTED}",
                           "--environment", f"GITHUB_PAT={REDACTED}"]  # fmt: skip
    assert f"--environment=PASSPHRASE={REDACTED}" in shown
    assert f"MY_CREDENTIALS={REDACTED}" in shown
    assert "NCCL_IB_PKEY=0" in shown and f"API_KEY={SHORT}" in shown and "NCCL_DEBUG=INFO" in shown
    assert f"DATABASE_URL=postgres://trainer:{REDACTED}@db.internal:5432/runs" in shown
    assert "HF_TOKEN=hf-secret,key=token" in shown  # a reference to a Kubernetes Secret
    assert shown[-4:] == [f"postgres://trainer:{REDACTED}@db.internal:5432/runs", "--hf-token",
                          REDACTED, f"--db-password={REDACTED}"]  # fmt: skip
    assert corpus.DB_PASSWORD not in " ".join(redact_argv(argv[-4:]))  # a URL alone, no -e
    assert len(shown) == len(argv)


def described() -> dict[str, object]:
    """A describe document as the local cluster writes it: the argv, the flags, the record."""
    record = {
        "v": 2,
        "profile": "leaky",
        "sets": [f"env.HF_TOKEN={corpus.HF_TOKEN}"],
        "data": {"env": {**corpus.ENV, "SLACK_TOKEN": REDACTED}},
        "values": {"env.DB_PASS": corpus.ENV["DB_PASS"]},
    }
    annotation = "runai-tui.io/submission=" + json.dumps(record, separators=(",", ":"))
    env_words = [w for k, v in corpus.ENV.items() for w in ("-e", f"{k}={v}")]
    return {
        "name": "leaky",
        "message": f"started with {corpus.ENV['DB_PASS']}",
        "spec": {
            "submitArgv": ["runai-local", "training", "pytorch", "submit", "leaky",
                           "--annotation", annotation, *env_words, "--command", "--", "sh", "-c",
                           f"echo {corpus.AWS_KEY_ID}; echo {corpus.MARKER}"],
            "flags": {"environment-variable": [f"{k}={v}" for k, v in corpus.ENV.items()],
                      "annotation": [annotation]},
            "annotations": {"runai-tui.io/submission": annotation.partition("=")[2]},
            "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists"}],
        },
        "pods": [{"name": "leaky-worker-0",
                  "env": [{"name": k, "value": v} for k, v in corpus.ENV.items()]}],
        "run": {"env": {"NCCL_IB_PKEY": 0, "API_KEY": 1, "OMP_NUM_THREADS": 1}},
    }  # fmt: skip


def test_a_document_loses_every_secret_and_stays_json() -> None:
    doc = described()
    redactor = Redactor()
    redactor.learn(doc)
    shown = json.dumps(redactor.document(doc))
    back = json.loads(shown)
    assert not [s for s in corpus.SECRET_VALUES if s in shown]
    record = json.loads(back["spec"]["annotations"]["runai-tui.io/submission"])
    assert record["data"]["env"]["HF_TOKEN"] == REDACTED
    assert record["data"]["env"]["API_KEY"] == SHORT
    assert record["data"]["env"]["NCCL_IB_PKEY"] == "0"
    assert record["sets"] == [f"env.HF_TOKEN={REDACTED}"]
    assert record["values"] == {"env.DB_PASS": REDACTED}
    pod_env = {e["name"]: e["value"] for e in back["pods"][0]["env"]}
    assert pod_env["DATABASE_URL"] == f"postgres://trainer:{REDACTED}@db.internal:5432/runs"
    assert back["spec"]["tolerations"] == [{"key": "nvidia.com/gpu", "operator": "Exists"}]
    assert back["run"]["env"] == {"NCCL_IB_PKEY": 0, "API_KEY": SHORT, "OMP_NUM_THREADS": 1}
    assert corpus.MARKER in back["spec"]["submitArgv"][-1]
    assert "<redacted:aws-access-key>" in back["spec"]["submitArgv"][-1]
    assert redactor.short == {"API_KEY"}


@pytest.mark.parametrize("kind", sorted(corpus.SCANNED))
def test_the_scanner_finds_what_no_name_announces(kind: str) -> None:
    text = corpus.SCANNED[kind]
    redactor = Redactor()
    shown = redactor.text(text)
    assert corpus.SCANNED_SECRETS[kind] not in shown, shown
    assert f"<redacted:{kind}>" in shown
    assert redactor.counts[kind] == 1


def test_a_private_key_block_goes_whole_even_cut_off() -> None:
    redactor = Redactor()
    pkcs8 = corpus.PRIVATE_KEY.replace("RSA PRIVATE", "ENCRYPTED PRIVATE")
    shown = redactor.text(f"a\n{corpus.PRIVATE_KEY}\nb\n{corpus.OPENSSH_KEY}\nc\n{pkcs8}")
    assert (
        shown == "a\n<redacted:private-key>\nb\n<redacted:private-key>\nc\n<redacted:private-key>"
    )
    cut = "\n".join(corpus.PRIVATE_KEY.splitlines()[:5])  # the log ended mid-key
    shown = redactor.text(f"x\n{cut}\nTraceback (most recent call last):")
    assert shown == "x\n<redacted:private-key>\nTraceback (most recent call last):"
    escaped = json.dumps({"key": corpus.PRIVATE_KEY})  # a key printed inside a JSON log line
    shown = redactor.text(escaped)
    assert not [line for line in corpus.KEY_BODY if line in shown] and "END" not in shown


def test_evidence_survives_and_short_values_are_never_searched_for() -> None:
    doc = described()
    redactor = Redactor()
    redactor.learn(doc)
    text = "\n".join(corpus.EVIDENCE)
    assert redactor.text(text) == text
    assert redactor.counts == {}


def test_known_values_go_as_whole_tokens_only() -> None:
    redactor = Redactor(known={"s3cr3t-value"})
    text = "a s3cr3t-value b, x-s3cr3t-value, s3cr3t-valueZ, 's3cr3t-value', =s3cr3t-value;"
    assert redactor.text(text) == (
        f"a {REDACTED} b, x-{REDACTED}, s3cr3t-valueZ, '{REDACTED}', ={REDACTED};"
    )


_WORDS = st.text(string.ascii_letters + string.digits + " -_.:/{}[]\"'\\\n", max_size=30)
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | _WORDS,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(
            st.sampled_from(
                ["a", "env", "HF_TOKEN", "API_KEY", "key", "value", "name", "NCCL_IB_PKEY"]
            )
            | _WORDS,
            inner,
            max_size=4,
        )
    ),  # fmt: skip
    max_leaves=20,
)


@settings(max_examples=150, deadline=None)
@given(doc=_JSON, secret=st.sampled_from(corpus.SECRET_VALUES))
def test_any_document_stays_json_and_loses_a_planted_secret(doc: object, secret: str) -> None:
    planted = {"doc": doc, "env": {"HF_TOKEN": secret}, "log": f"saw {secret} here"}
    redactor = Redactor()
    redactor.learn(planted)
    shown = json.dumps(redactor.document(planted))
    json.loads(shown)
    assert secret not in shown


def test_every_member_of_a_bundle_parses_and_the_manifest_counts_by_kind() -> None:
    bundle = Bundle("leaky")
    doc = described()
    bundle.redactor.learn(doc)
    bundle.add_json("describe.json", doc)
    bundle.add_json("events.json", [{"message": f"pulled with {corpus.GITLAB_PAT}"}])
    log = "\n".join([*corpus.EVIDENCE, *corpus.SCANNED.values(), corpus.ENV["PASSPHRASE"]])
    bundle.add_text("logs/leaky-worker-0.log", log + "\n")
    bundle.add_text("run/metrics.jsonl", json.dumps({"step": 10, "loss": 0.5}) + "\nnot json\n")
    bundle.add_json("run/run.json", {"env": {"RUNAI_TOKEN": "runai-" + "x" * 12}})
    clean_dump, leaky_dump = b"\x80\x04" + b"frames" * 20, b"\x80\x04" + corpus.HF_TOKEN.encode()
    bundle.members["run/flight-recorder/rank-0"] = clean_dump
    bundle.members["run/flight-recorder/rank-1"] = leaky_dump
    members = bundle.redacted()
    for name, data in members.items():
        if name.endswith(".json"):
            json.loads(data)
        assert not [s for s in [*corpus.SECRET_VALUES, corpus.GITLAB_PAT] if s.encode() in data]
    assert b"runai-xxxx" not in members["run/run.json"]  # learned from run.json itself
    assert members["run/flight-recorder/rank-0"] == clean_dump
    assert "run/flight-recorder/rank-1" not in members
    assert json.loads(members["run/metrics.jsonl"].splitlines()[0]) == {"step": 10, "loss": 0.5}
    log_out = members["logs/leaky-worker-0.log"].decode()
    assert all(line in log_out for line in corpus.EVIDENCE)
    manifest = json.loads(members["manifest.json"])
    kinds = manifest["redactions"]["by_kind"]
    assert {"env-value", "short", "url-password", "known-value", "private-key",
            "aws-access-key", "gitlab-token", "slack-token", "json-web-token"} <= set(kinds)  # fmt: skip
    assert manifest["redactions"]["short"] == ["API_KEY"]
    # Six env values, DATABASE_URL's password, run.json's token; not the record's `<redacted>`.
    assert manifest["redactions"]["known_values"] == 8
    assert any(m["what"] == "run/flight-recorder/rank-1" for m in manifest["missing"])


def test_displays_of_a_submission_show_no_secret() -> None:
    # resubmit's difference: a changed secret is said to change, its values never shown.
    before = ["runai", "training", "pytorch", "submit", "j", "-e", f"HF_TOKEN={corpus.HF_TOKEN}",
              "-e", "NCCL_DEBUG=INFO"]  # fmt: skip
    after = [*before[:6], f"HF_TOKEN={corpus.GITHUB_PAT}", "-e", "NCCL_DEBUG=WARN"]
    rows = {(r.key, r.a, r.b) for r in argv_diff(before, after)}
    assert rows == {("-e HF_TOKEN", REDACTED, f"{REDACTED} (changed)"),
                    ("-e NCCL_DEBUG", "INFO", "WARN")}  # fmt: skip
    # compare's run.json fields: the env the trainer recorded.
    fields = dict(
        run_json_fields({"env": {"RUNAI_JOB_TOKEN": corpus.HF_TOKEN, "NCCL_IB_PKEY": "0"}})
    )
    assert fields == {"env.RUNAI_JOB_TOKEN": REDACTED, "env.NCCL_IB_PKEY": "0"}


def test_a_known_value_is_found_escaped_as_json_or_a_url_carries_it() -> None:
    secret = 'p@ss "w/rd"\nline2'
    redactor = Redactor(scan=False, known={secret})
    logged = json.dumps({"pw": secret}) + " https://h/?pw=" + quote(secret, safe="")
    shown = redactor.text(logged)
    assert shown == '{"pw": "<redacted>"} https://h/?pw=<redacted>'
    assert redactor.counts["known-value"] == 2


def test_every_detector_used_is_in_this_detect_secrets() -> None:
    # A detector detect-secrets renamed would drop out of the scan without a word.
    names = {d.secret_type for d in secret_scan.detectors()}
    assert set(secret_scan.USED) | {"Hugging Face Token"} == names


_SEPARATORS = st.sampled_from([" ", "=", ":", "'", '"', ",", "\n", "(", "[", "/", "@"])


@settings(max_examples=150, deadline=None)
@given(
    step=st.integers(0, 10**9),
    loss=st.floats(0, 100, allow_nan=False),
    before=_SEPARATORS,
    after=_SEPARATORS,
    glued=st.sampled_from(["x", "Z", "_", "7"]),
)
def test_short_values_never_touch_a_log_and_known_ones_go_only_whole(
    step: int, loss: float, before: str, after: str, glued: str
) -> None:
    redactor = Redactor()
    redactor.learn({"env": corpus.ENV})  # NCCL_IB_PKEY=0 and API_KEY=1 among them
    line = f"MARKER-{step}00{step} step {step} loss {loss} rank 1 of 10"
    assert redactor.text(line) == line
    secret = corpus.ENV["DB_PASS"]
    assert redactor.text(f"a{before}{secret}{after}b") == f"a{before}{REDACTED}{after}b"
    inside = f"{glued}{secret}{glued}"  # another token that holds the value: not the secret
    assert redactor.text(inside) == inside
