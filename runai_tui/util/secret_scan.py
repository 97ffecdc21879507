"""The free-text scanner of the redaction (runai_tui/util/redaction.py says why detect-secrets): where
in a text a secret no name announces sits, as (start, end, kind) spans.

detect-secrets' regex detectors are used for their patterns (`denylist`) and their own checks
(`analyze_string`: a JWT must decode), but the spans are found here: `analyze_string` yields a
pattern's first group where it has one, which for GitHub's `(ghp|gho|…)_…` is the prefix alone.
A match whose group ends where the match does (bar a closing quote or `@`) wraps its secret in
context (`://user:PASSWORD@`, `aws_secret = "…"`): the group is the span; any other group is a
prefix and the match is the span, carried on to the end of its token. Private keys are found by
the detector's BEGIN lines and replaced whole, through their END line (or, cut off, through the
last line of base64).

Left out: the entropy and keyword detectors (they flag checksums, IDs and prompts, a
post-mortem's evidence) and the others `USED` says. Added: Hugging Face tokens (`hf_…`), which
detect-secrets 1.5 lacks.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import cast

from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
from detect_secrets.plugins.base import BasePlugin, RegexBasedDetector
from detect_secrets.plugins.private_key import PrivateKeyDetector

Span = tuple[int, int, str]


class HuggingFaceTokenDetector(RegexBasedDetector):
    """Hugging Face user access tokens: `hf_` and 34 letters and digits (older ones `api_org_`)."""

    secret_type = "Hugging Face Token"
    denylist = (
        # Starting with the literal prefix lets the engine skip to it (a lookbehind first costs
        # 20 times as much on a long log).
        re.compile(r"hf_[A-Za-z0-9]{30,40}(?![A-Za-z0-9_])"),
        re.compile(r"api_org_[A-Za-z0-9]{30,40}(?![A-Za-z0-9_])"),
    )


# A pattern may stop short of its token's end (the JWT one matches its signature lazily): the span
# runs on to the token's end.
_TOKEN_TAIL = re.compile(r"[A-Za-z0-9_\-+/=]+")
# The detectors used, by detect-secrets' name for them: tokens an ML job's env, command or log
# may carry. Left out besides entropy and keyword: public IPs (evidence); the keyword-assignment
# detectors of IBM Cloud, Cloudant and SoftLayer and the loose Artifactory (`AP…`), Telegram
# (`DIGITS:…`), Discord and Mailchimp patterns, services a training job does not talk to, which
# took 37 of the 41 seconds that all of them took on a 10 MB trainer log.
USED = (
    "AWS Access Key", "Azure Storage Account access key", "Basic Auth Credentials",
    "GitHub Token", "GitLab Token", "JSON Web Token", "NPM tokens", "OpenAI Token",
    "PyPI Token", "SendGrid API Key", "Slack Token", "Square OAuth Secret",
    "Stripe Access Key", "Twilio API Key",
)  # fmt: skip
# The detector's BEGIN lines, and any PEM private key's (PKCS#8 `ENCRYPTED PRIVATE KEY` too).
_BEGINS = (
    *PrivateKeyDetector.denylist,
    re.compile(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY[A-Z ]*-----"),
)
# No detector matches fewer characters than `a://u:p@`.
SHORTEST = 8
CACHED = 4096
# An RSA 4096 key in PEM is about 3.3 KB; with a log prefix on each of its lines, under 8 KB.
MAX_BLOCK = 16 * 1024
_END = re.compile(r"-----END[A-Z0-9 ]*-----|Private-MAC: *[0-9a-fA-F]*")
_BASE64_LINE = re.compile(r"[ \t]*([A-Za-z0-9+/=]+|[A-Za-z-]+: .*)?[ \t]*\r?$")


def kind_of(secret_type: str) -> str:
    """`GitHub Token` as `github-token`, `JSON Web Token` as `json-web-token`."""
    return re.sub(r"[^a-z0-9]+", "-", secret_type.lower()).strip("-")


@lru_cache(maxsize=1)
def detectors() -> tuple[RegexBasedDetector, ...]:
    """The detectors `USED` (as this detect-secrets names them), and the Hugging Face one."""
    classes = cast("dict[str, type[BasePlugin]]", get_mapping_from_secret_type_to_class())
    found = [classes[name]() for name in USED if name in classes]
    return (*[d for d in found if isinstance(d, RegexBasedDetector)], HuggingFaceTokenDetector())


def find(text: str) -> list[Span]:
    """Every secret the detectors find in `text`, private key blocks whole."""
    if len(text) < SHORTEST:
        return []
    if len(text) <= CACHED:  # a document's strings, shown again at every refresh of describe
        return list(_find_cached(text))
    return _find(text)


@lru_cache(maxsize=4096)
def _find_cached(text: str) -> tuple[Span, ...]:
    return tuple(_find(text))


def _find(text: str) -> list[Span]:
    spans = private_keys(text)
    for detector in detectors():
        kind = kind_of(str(detector.secret_type))
        for pattern in detector.denylist:
            for match in pattern.finditer(text):
                span = _span(match)
                if span is not None and any(detector.analyze_string(match.group(0))):
                    spans.append((*span, kind))
    return spans


def _span(match: re.Match[str]) -> tuple[int, int] | None:
    """The secret's place in a match (see the module's docstring)."""
    if match.end() == match.start():
        return None
    for group in range(match.re.groups, 0, -1):
        if match.group(group) and match.end() - match.end(group) <= 1:
            return match.start(group), match.end(group)
    tail = _TOKEN_TAIL.match(match.string, match.end())
    return match.start(), tail.end() if tail else match.end()


def private_keys(text: str) -> list[Span]:
    """Each private key block: from the `-----BEGIN … PRIVATE KEY-----` line (or PuTTY's header)
    through its END line; a block cut off ends after its last line of base64 or PEM header."""
    spans: list[Span] = []
    at = 0
    while True:
        begins = [m for p in _BEGINS if (m := p.search(text, at))]
        if not begins:
            return spans
        first = min(begins, key=lambda m: m.start())
        start = text.rfind("-----", max(0, first.start() - 5), first.start())
        start = first.start() if start < 0 else start
        end = _block_end(text, first.end())
        spans.append((start, end, "private-key"))
        at = max(end, first.end())


def _block_end(text: str, after: int) -> int:
    """Where a block that began before `after` ends: its END marker within MAX_BLOCK characters
    (log prefixes on the key's lines allowed); else, cut off, after its last line of base64."""
    ended = _END.search(text, after, after + MAX_BLOCK)
    if ended is not None:
        return ended.end()
    at = text.find("\n", after)
    if at < 0:
        return len(text)
    while at < len(text):
        nxt = text.find("\n", at + 1)
        line = text[at + 1 : nxt if nxt >= 0 else len(text)]
        if not line.strip() or not _BASE64_LINE.fullmatch(line):
            break
        at = nxt if nxt >= 0 else len(text)
    return at
