"""The one redaction of secrets: what every place that shows a submission uses (the bundle,
describe's raw document in the TUI, `compare`'s submitted settings, `resubmit`'s difference) and
what the submission record and lint's `secret-in-env` decide with (`literal_secret`).

Where a secret is known to live, it is replaced by structure, never by bytes in serialized text:
- an env variable whose NAME says secret (`secret_name`) holding a literal VALUE: a mapping's
  `NAME: VALUE` (a profile's or record's `env`, run.json's `env`), a Kubernetes `{"name": NAME,
  "value": VALUE}` entry, a `NAME=VALUE` word (`--set env.NAME=VALUE`, describe's flag lists)
  and a submit argv's `-e NAME=VALUE` in every spelling (`-e N=V`, `-e=N=V`, `--environment N=V`,
  `--environment=N=V`, `--master-environment-variable`): the value becomes REDACTED;
- any value that is a URL with a password (`DATABASE_URL=postgres://u:PASS@db/app`): the password
  becomes REDACTED, the rest of the URL stays (it is evidence);
- a JSON document held in a string (the record annotation): parsed, redacted, serialized again.
A JSON member is parsed, redacted value by value and serialized again, so it stays JSON.

A value under 6 characters (`API_KEY=1`) is replaced where it lives, by SHORT, and never searched
for in free text: `0` or `1` would be replaced inside every number of a log. Its name is listed
(`Redactor.short`) so the reader knows the key held a secret.

Free text (logs, events, messages, any string of a document) then loses every known secret value
as a whole token (`(?<![A-Za-z0-9_])VALUE(?![A-Za-z0-9_])`), never inside another token, and
whatever the scanner finds (runai_tui/util/secret_scan.py): private key blocks whole, BEGIN to END,
AWS access keys, GitHub, GitLab, Hugging Face and Slack tokens, JWTs, URLs with a password.

Why detect-secrets for the scanner: its detectors are maintained against the providers' token
formats (GitLab's seven prefixes, Slack's webhooks, JWTs checked by decoding) by people who follow
them, and a hand-written list of patterns goes stale silently. Its entropy and keyword detectors
are not used: they flag checksums, IDs and `password:` prompts, which are a post-mortem's evidence,
and the named secrets are known by value anyway. The scanner is imported only when free text is
scanned: detect-secrets loads `requests` (about 0.1 s), which no start-up path should pay.
"""

from __future__ import annotations

import json
import re
import string
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from urllib.parse import quote, urlsplit

REDACTED = "<redacted>"
SHORT = "<redacted:short>"
MIN_FREE_TEXT = 6  # a shorter secret is replaced where it lives, never searched for in text

# Words that say a secret wherever they end a part of the name (DB_PASSWORD, HFTOKEN)...
SECRET_SUFFIXES = ("PASSWORD", "PASSWD", "PASSPHRASE", "SECRET", "SECRETS", "TOKEN",
                   "CREDENTIAL", "CREDENTIALS", "APIKEY", "ACCESSKEY", "SECRETKEY",
                   "PRIVATEKEY")  # fmt: skip
# ...short ones only as a whole part: KEY but not NCCL_IB_PKEY, PASS but not BYPASS, PAT not PATH.
SECRET_PARTS = frozenset({"PASS", "PAT", "KEY", "PWD", "CREDS"})
# A name whose last part says where the secret lives, names it or says something about it holds
# no secret (HF_TOKEN_PATH, SSH_KEY_FILE, SECRET_NAME, TOKEN_URL, MAX_TOKEN_LENGTH,
# API_KEY_ENABLED), and a public key is no secret (SSH_PUBLIC_KEY).
WHERE_WORDS = frozenset({"PATH", "FILE", "DIR", "NAME", "URL", "URI", "ENDPOINT", "LENGTH",
                         "LEN", "SIZE", "COUNT", "LIMIT", "TTL", "TYPE", "MODE", "ENABLED",
                         "ENABLE", "DISABLED", "DISABLE"})  # fmt: skip
PUBLIC_WORDS = frozenset({"PUBLIC", "PUB"})
# A value that refers to the secret instead of holding it: `$(cat …)`, `${VAR}`, runai's SECRET:.
REFERENCES = ("$(", "${", "SECRET:")

# Submit flags whose value is NAME=VALUE of an env variable (runai CLI v2 and v1 spellings).
ENV_FLAGS = frozenset({"-e", "--environment", "--environment-variable",
                       "--master-environment-variable", "--master-environment"})  # fmt: skip
REFERENCE_FLAGS = frozenset({"--env-secret", "--master-env-secret"})
_ENV_LIKE = re.compile(r"^[A-Z_][A-Z0-9_]*$")
_ASSIGNMENT = re.compile(r"^([A-Za-z_][A-Za-z0-9_.\-/]*)=(.*)$", re.DOTALL)
_MARKER = re.compile(r"<redacted(:[a-z0-9-]+)?>")
_WORD = frozenset(string.ascii_letters + string.digits + "_")  # a token's characters
_CAMEL = re.compile(r"([a-z0-9])([A-Z])")


def name_parts(name: str) -> list[str]:
    """`awsSecretKey` and `AWS_SECRET_KEY` alike as ["AWS", "SECRET", "KEY"]."""
    return [p for p in re.split(r"[^A-Za-z0-9]+", _CAMEL.sub(r"\1_\2", name).upper()) if p]


def secret_name(name: str) -> bool:
    """A name that says its value is a secret: HF_TOKEN, DB_PASS, GITHUB_PAT, PASSPHRASE,
    MY_CREDENTIALS, API_KEY, AWS_SECRET_ACCESS_KEY; not NCCL_IB_PKEY, TOKENIZERS_PARALLELISM,
    HF_TOKEN_PATH, SSH_PUBLIC_KEY, nor PWD (the shell's folder) alone."""
    name = name.rpartition(".")[2] if "." in name and "/" not in name else name
    parts = name_parts(name)
    if not parts or parts[-1] in WHERE_WORDS or PUBLIC_WORDS & set(parts) or parts == ["PWD"]:
        return False
    if len(parts) == 1 and parts[0] in SECRET_PARTS and not name.isupper():
        return False  # a document's own `key` (a toleration's, a selector's) names no secret
    return any(p in SECRET_PARTS or p.endswith(SECRET_SUFFIXES) for p in parts)


def literal_secret(name: str, value: str) -> bool:
    """An env variable whose name says secret and whose value is the secret itself, not a
    reference to it (`$(…)`, `${…}`, `SECRET:…`): what lint's `secret-in-env` flags, what the
    submission record never copies and what every display replaces."""
    return secret_name(name) and bool(value.strip()) and not value.startswith(REFERENCES)


def url_password(value: str) -> str | None:
    """The password of a URL that carries one (`scheme://user:PASSWORD@host`), else None."""
    if "://" not in value or "@" not in value:
        return None
    try:
        password = urlsplit(value.strip()).password
    except ValueError:
        return None
    return password or None


@dataclass
class Redactor:
    """Learns the secret values of a job (`learn`), then redacts documents (`document`), argvs
    (`argv`) and free text (`text`) with them; `counts` says how many were replaced, by kind,
    and `short` which names held a value too short to search for in free text."""

    scan: bool = True  # free text also goes through the scanner (runai_tui/util/secret_scan.py)
    known: set[str] = field(default_factory=set)
    short: set[str] = field(default_factory=set)
    counts: Counter[str] = field(default_factory=Counter)
    _learning: bool = field(default=False, repr=False)
    _pattern: re.Pattern[str] | None = field(default=None, repr=False)

    def learn(self, document: object) -> None:
        """Every secret value `document` holds where secrets live (see the module's docstring):
        the same walk as `document`, which records instead of replacing."""
        self._learning = True
        try:
            self.document(document)
        finally:
            self._learning = False
            self._pattern = None

    def document(self, document: object) -> object:
        """A copy of a JSON-shaped document with every secret replaced; strings that hold JSON
        stay JSON. Never serialized text: the result serializes to valid JSON."""
        if isinstance(document, Mapping):
            return self._mapping(document)
        if isinstance(document, list | tuple):
            if document and all(isinstance(item, str) for item in document):
                return self.argv(document)
            return [self.document(item) for item in document]
        if isinstance(document, str):
            return self.word(document)
        return document

    def _mapping(self, node: Mapping[object, object]) -> dict[object, object]:
        name, value = node.get("name"), node.get("value")
        entry = isinstance(name, str) and isinstance(value, str)  # a Kubernetes env entry
        out: dict[object, object] = {}
        for key, item in node.items():
            if entry and key == "value":
                out[key] = self.pair(str(name), str(value))
            elif isinstance(item, str):
                out[key] = self.pair(str(key), item)
            elif isinstance(item, int | float) and not isinstance(item, bool) and _env_key(key):
                shown = self.pair(str(key), str(item))
                out[key] = item if shown == str(item) else shown
            else:
                out[key] = self.document(item)
        return out

    def argv(self, argv: Sequence[str]) -> list[str]:
        """A submit argv (or any list of words) with the value of every env NAME=VALUE replaced
        where NAME says secret (`-e N=V`, `-e=N=V`, `--environment N=V`, `--environment=N=V`,
        a bare `N=V` or `env.N=V` word), and the value of a flag whose own name says secret
        (`--hf-token X`, `--api-key=X`); every other word as `word` redacts it."""
        out: list[str] = []
        secret_flag, previous = "", ""
        for item in argv:
            flag, eq, rest = item.partition("=")
            if previous in REFERENCE_FLAGS or (eq and flag in REFERENCE_FLAGS):
                out.append(self.text(item))  # NAME=SECRET,key=KEY names a Kubernetes Secret
            elif secret_flag and not item.startswith("-"):
                out.append(self.pair(secret_flag, item))
            elif eq and flag.startswith("-") and (flag in ENV_FLAGS or _secret_flag(flag)):
                shown = self.word(rest) if flag in ENV_FLAGS else self.pair(flag, rest)
                out.append(f"{flag}={shown}")
            else:
                out.append(self.word(item))
            secret_flag = item.lstrip("-") if not eq and _secret_flag(item) else ""
            previous = item
        return out

    def word(self, word: str) -> str:
        """One string: NAME=VALUE through `pair`; JSON (`{…}`, `[…]`) redacted as a document and
        written back compact; anything else as free text (`text`)."""
        match = _ASSIGNMENT.match(word)
        if match is not None:
            name, value = match.groups()
            return f"{self.text(name)}={self.pair(name, value)}"
        if word.startswith(("{", "[")):
            try:
                inner = json.loads(word)
            except ValueError:
                return self.text(word)
            shown = self.document(inner)
            if shown == inner:
                return word  # nothing to hide: the word as written, not as json writes it
            return json.dumps(shown, separators=(",", ":"), ensure_ascii=False)
        return self.pair("", word) if url_password(word) else self.text(word)

    def pair(self, name: str, value: str) -> str:
        """VALUE as shown under NAME: REDACTED (SHORT under MIN_FREE_TEXT characters) when NAME
        says secret; a URL's password replaced; else VALUE as `word` redacts it."""
        if _MARKER.fullmatch(value):
            return value  # redacted already (a submission record's `<redacted>`)
        if literal_secret(name, value):
            short = len(value) < MIN_FREE_TEXT
            if short:
                self.short.add(name)
            if self._learning:
                if not short:
                    self.known.add(value)
                return value
            self.counts["short" if short else "env-value"] += 1
            return SHORT if short else REDACTED
        password = url_password(value)
        if password is not None:
            if self._learning:
                if len(password) >= MIN_FREE_TEXT:
                    self.known.add(password)
                return value
            self.counts["url-password"] += 1
            return value.replace(f":{password}@", f":{REDACTED}@", 1)
        return self.word(value)

    def text(self, text: str) -> str:
        """Free text with every known secret value (whole tokens, MIN_FREE_TEXT characters or
        more) and, with `scan`, whatever the scanner finds replaced."""
        if not text or self._learning:
            return text
        spans: list[tuple[int, int, str]] = []
        pattern = self._known_pattern()
        at = 0
        while pattern is not None and (match := pattern.search(text, at)) is not None:
            # The boundary before is checked here: a leading lookbehind would make the engine
            # try it at every character of a long log (4 times slower).
            start = match.start()
            if start and text[start - 1] in _WORD:
                at = start + 1
                continue
            spans.append((start, match.end(), "known-value"))
            at = match.end()
        if self.scan:
            # The scanner loads detect-secrets (and requests): only what scans text pays for it.
            from runai_tui.util import secret_scan

            spans += secret_scan.find(text)
        return _replace(text, spans, self.counts)

    def _known_pattern(self) -> re.Pattern[str] | None:
        if self._pattern is None and self.known:
            # As written, and as a JSON string or a URL would carry it (`\n`, `%40`).
            forms = {f for v in self.known for f in (v, json.dumps(v)[1:-1], quote(v, safe=""))}
            values = sorted(forms, key=len, reverse=True)
            alternatives = "|".join(re.escape(v) for v in values)
            self._pattern = re.compile(rf"(?:{alternatives})(?![A-Za-z0-9_])")
        return self._pattern

    def summary(self) -> dict[str, object]:
        """What the manifest says: replacements by kind, the distinct values known, and the
        names whose values were too short to search for in free text."""
        return {
            "by_kind": dict(sorted(self.counts.items())),
            "known_values": len(self.known),
            "short": sorted(self.short),
        }


def _replace(text: str, spans: list[tuple[int, int, str]], counts: Counter[str]) -> str:
    """`text` with each span replaced (overlapping spans merged, the first one's kind kept)."""
    if not spans:
        return text
    merged: list[tuple[int, int, str]] = []
    for start, end, kind in sorted(spans, key=lambda s: (s[0], -s[1])):
        if merged and start < merged[-1][1]:
            last = merged[-1]
            merged[-1] = (last[0], max(last[1], end), last[2])
        else:
            merged.append((start, end, kind))
    out, at = [], 0
    for start, end, kind in merged:
        counts[kind] += 1
        out += [text[at:start], REDACTED if kind == "known-value" else f"<redacted:{kind}>"]
        at = end
    return "".join(out) + text[at:]


def _secret_flag(word: str) -> bool:
    """`--hf-token`, `--db-password`: a flag whose name says its value is a secret (runai's
    `--env-secret` names a Kubernetes Secret, it holds none)."""
    return word.startswith("-") and word not in REFERENCE_FLAGS and secret_name(word.lstrip("-"))


def _env_key(key: object) -> bool:
    return isinstance(key, str) and bool(_ENV_LIKE.match(key.rpartition(".")[2]))


def redact_document(document: object, scan: bool = False) -> object:
    """`document` (describe's raw JSON, a record) as a display shows it: every secret it holds
    replaced (`scan`: its free text through the scanner too)."""
    redactor = Redactor(scan=scan)
    redactor.learn(document)
    return redactor.document(document)


def redact_argv(argv: Sequence[str], scan: bool = False) -> list[str]:
    """A submit argv as a display shows it: every env secret's value replaced."""
    redactor = Redactor(scan=scan)
    redactor.learn(list(argv))
    return redactor.argv(argv)
