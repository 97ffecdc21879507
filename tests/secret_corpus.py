"""Fake secrets in the shapes real ones have, for the redaction's tests (tests/core/test_redaction.py,
tests/local/test_bundle_redaction.py). None is a real credential: each is built here from pieces
(concatenation, base64 of JSON made on the spot), so no pre-commit secret scanner finds a literal
in the repository, and every run makes the same values.
"""

from __future__ import annotations

import base64
import json
import random

_RNG = random.Random(20261206)
_UPPER_DIGITS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
_ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
_B64 = _ALNUM + "+/"


def _pick(alphabet: str, n: int) -> str:
    return "".join(_RNG.choice(alphabet) for _ in range(n))


def _b64url(doc: dict[str, object]) -> str:
    return base64.urlsafe_b64encode(json.dumps(doc).encode()).decode().rstrip("=")


AWS_KEY_ID = "AK" + "IA" + _pick(_UPPER_DIGITS, 16)
AWS_SECRET = _pick(_B64, 40)
GITHUB_PAT = "gh" + "p_" + _pick(_ALNUM, 36)
GITLAB_PAT = "gl" + "pat-" + _pick(_ALNUM, 20)
HF_TOKEN = "h" + "f_" + _pick(_ALNUM, 34)
SLACK_TOKEN = (
    "xo" + "xb-" + "1234567890" + "12-" + "9876543210" + "123-" + _pick(_ALNUM.lower(), 24)
)
JWT = ".".join(
    [
        _b64url({"alg": "HS256", "typ": "JWT"}),
        _b64url({"sub": "1234567890", "name": "ops", "iat": 1516239022}),
        _pick(_ALNUM, 43),
    ]
)
DB_PASSWORD = "pg-" + _pick(_ALNUM, 14)
DATABASE_URL = f"postgres://trainer:{DB_PASSWORD}@db.internal:5432/runs"
KEY_BODY = [_pick(_B64, 64) for _ in range(6)] + [_pick(_B64, 20) + "=="]
PRIVATE_KEY = "\n".join(
    ["-----BEGIN " + "RSA PRIVATE KEY-----", *KEY_BODY, "-----END " + "RSA PRIVATE KEY-----"]
)
OPENSSH_KEY = "\n".join(
    [
        "-----BEGIN " + "OPENSSH PRIVATE KEY-----",
        *KEY_BODY[:3],
        "-----END " + "OPENSSH PRIVATE KEY-----",
    ]
)

# The job of the report: env values that say secret by name, and two that are no secret.
ENV = {
    "DB_PASS": "hunter2-" + _pick(_ALNUM, 8),
    "GITHUB_PAT": GITHUB_PAT,
    "MY_CREDENTIALS": "svc-trainer:" + _pick(_ALNUM, 16),
    "PASSPHRASE": "correct horse battery " + _pick(_ALNUM, 6),
    "DATABASE_URL": DATABASE_URL,
    "AWS_SECRET_ACCESS_KEY": AWS_SECRET,
    "HF_TOKEN": HF_TOKEN,
    "NCCL_IB_PKEY": "0",  # an InfiniBand partition key index: no secret
    "API_KEY": "1",  # a secret by name, too short to look for in free text
}
# What must never appear in a redacted member (DATABASE_URL's secret is its password).
SECRET_VALUES = [v for k, v in ENV.items() if k not in ("NCCL_IB_PKEY", "API_KEY", "DATABASE_URL")]
SECRET_VALUES += [DB_PASSWORD, AWS_KEY_ID]
MARKER = "MARKER-100200300 step 10 loss 0.5"

# Free text the scanner alone must catch (no name announces these), by the kind it reports.
SCANNED = {
    "private-key": f"loading key\n{PRIVATE_KEY}\nloaded",
    "aws-access-key": f"using access key id {AWS_KEY_ID} in eu-west-1",
    "github-token": f"pushing with token {GITHUB_PAT} to origin",
    "gitlab-token": f"GITLAB auth {GITLAB_PAT} ok",
    "hugging-face-token": f"login --token {HF_TOKEN}",
    "slack-token": f"posting with {SLACK_TOKEN}",
    "json-web-token": f"Authorization: Bearer {JWT}",
    "basic-auth-credentials": f"connecting to {DATABASE_URL}",
}
SCANNED_SECRETS = {
    "private-key": KEY_BODY[2],
    "aws-access-key": AWS_KEY_ID,
    "github-token": GITHUB_PAT,
    "gitlab-token": GITLAB_PAT,
    "hugging-face-token": HF_TOKEN,
    "slack-token": SLACK_TOKEN,
    "json-web-token": JWT,
    "basic-auth-credentials": DB_PASSWORD,
}
# Lines that hold no secret and must come through unchanged.
EVIDENCE = [
    MARKER,
    "NCCL INFO NET/IB : Using [0]mlx5_0:1/IB ; OOB ib0:10.0.0.12<0>",
    "checkpoint sha256 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
    "RuntimeError: NCCL error in: ProcessGroupNCCL.cpp:1970, unhandled system error (run with "
    "NCCL_DEBUG=INFO for details), NCCL version 2.21.5",
    '{"kind": "train", "step": 10, "loss": 0.5, "lr": 0.01, "images_per_s": 101.5}',
    "master_addr=10.0.0.12 master_port=29500 world_size=2 rank=1 api_key_present=1",
    "TOKENIZERS_PARALLELISM=false NCCL_IB_PKEY=0 OMP_NUM_THREADS=1",
]
