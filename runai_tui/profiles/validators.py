"""The value checks of profile fields. Each returns the normalised value or raises Invalid with
what is expected (e.g. 3846 -> "3846"). The field table (fields.py) says which field uses which."""

from __future__ import annotations

import re
from collections.abc import Callable

from runai_tui.util.quantity import QuantityError, parse_quantity

DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
ENV_NAME = re.compile(r"^[-._a-zA-Z][-._a-zA-Z0-9]*$")
# Kubernetes qualified name with an optional DNS prefix: `example.com/name`.
QUALIFIED_KEY = re.compile(
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$"
)
PROFILE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")
CAPABILITY = re.compile(r"^[A-Z][A-Z0-9_]*$")


class Invalid(Exception):
    def __init__(self, expected: str) -> None:
        self.expected = expected


def show(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "...'"


def string(value: object) -> str:
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise Invalid("expected a text value")
    text = str(value)
    if "\x00" in text:
        raise Invalid("expected text without NUL characters")
    return text


def nonempty(value: object) -> str:
    text = string(value)
    if not text.strip():
        raise Invalid("expected a non-empty value")
    return text


def no_space(value: object) -> str:
    text = nonempty(value)
    if any(c.isspace() for c in text):
        raise Invalid("expected a value without spaces")
    return text


def dns_label(value: object) -> str:
    text = string(value)
    if len(text) > 63 or not DNS1123_LABEL.match(text):
        raise Invalid(
            "expected a Kubernetes DNS-1123 label: at most 63 characters of lower-case letters, "
            "digits and '-', starting and ending with a letter or digit (e.g. 'retinanet-tcp')"
        )
    return text


def int_range(lo: int, hi: int) -> Callable[[object], int]:
    def check(value: object) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise Invalid(f"expected a whole number from {lo} to {hi}")
        if not lo <= value <= hi:
            raise Invalid(f"expected a whole number from {lo} to {hi}")
        return value

    return check


def cores(hi: float) -> Callable[[object], float | int]:
    """CPU cores: a number or a Kubernetes quantity (`0.5`, `4`, `500m`), above 0 and at most
    `hi`; normalised to the number of cores (`500m` -> 0.5), which the runai flags take."""
    expected = f"expected CPU cores above 0 and at most {hi:g}, e.g. 0.5, 4 or 500m"

    def check(value: object) -> float | int:
        try:
            amount = parse_quantity(value).value
        except QuantityError:
            raise Invalid(expected) from None
        if not 0 < amount <= hi:
            raise Invalid(expected)
        return int(amount) if amount.denominator == 1 else float(amount)

    return check


def quantity(value: object) -> str:
    """A memory quantity above 0 bytes, kept as written (`512Mi`, `16Gi`, `4G`; a bare number is
    bytes). Lint warns about the legal but surprising ones (`512m`, `3846`)."""
    expected = "expected a memory quantity such as 512Mi, 4G or 16Gi (a bare number is bytes)"
    try:
        parsed = parse_quantity(value)
    except QuantityError:
        raise Invalid(expected) from None
    if parsed.value <= 0:
        raise Invalid(expected)
    return str(value)


def one_of(*choices: str) -> Callable[[object], str]:
    def check(value: object) -> str:
        text = str(value) if isinstance(value, str) else None
        if text not in choices:
            raise Invalid("expected one of: " + ", ".join(choices))
        return text

    return check


def abs_path(value: object) -> str:
    text = no_space(value)
    if not text.startswith("/"):
        raise Invalid("expected an absolute path inside the container, e.g. /data/work")
    return text


def boolean(value: object) -> bool:
    if not isinstance(value, bool):
        raise Invalid("expected true or false")
    return value


def argv_list(value: object) -> list[str]:
    # A single string is one argv element, exactly as written: we never split on spaces.
    if isinstance(value, str):
        return [value]
    if not isinstance(value, list):
        raise Invalid("expected a list of words, e.g. [python, train.py, --lr, '0.01']")
    out = []
    for item in value:
        if isinstance(item, bool) or not isinstance(item, str | int | float):
            raise Invalid("expected a list of text words, e.g. [python, train.py]")
        out.append(str(item))
    return out


def list_of(check_item: Callable[[object], str], example: str) -> Callable[[object], list[str]]:
    def check(value: object) -> list[str]:
        if not isinstance(value, list):
            raise Invalid(f"expected a list, e.g. {example}")
        return [check_item(v) for v in value]

    return check


def capability(value: object) -> str:
    text = string(value)
    if not CAPABILITY.match(text):
        raise Invalid("expected a POSIX capability name in upper case, e.g. IPC_LOCK")
    return text


def env_key(value: object) -> str:
    if not isinstance(value, str) or not ENV_NAME.match(value):
        raise Invalid(
            "expected an environment variable name of letters, digits, '_', '-' or '.', "
            "not starting with a digit and without '=' or spaces (e.g. NCCL_DEBUG)"
        )
    return value


def qualified_key(value: object) -> str:
    if not isinstance(value, str) or len(value) > 316 or not QUALIFIED_KEY.match(value):
        raise Invalid(
            "expected a Kubernetes key such as 'team' or 'k8s.v1.cni.cncf.io/networks' "
            "(letters, digits, '-', '_', '.', an optional DNS prefix and '/')"
        )
    return value


def annotation_value(value: object) -> str:
    return string(value)


def label_value(value: object) -> str:
    text = string(value)
    if len(text) > 63 or not re.match(r"^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$", text):
        raise Invalid("expected a label value: at most 63 letters, digits, '-', '_' or '.'")
    return text


def resource_amount(value: object) -> str:
    """An extended resource amount: a whole, non-negative quantity (`1`, `2`)."""
    expected = "expected a whole quantity such as 1"
    if isinstance(value, float):
        raise Invalid(expected)
    try:
        amount = parse_quantity(value).value
    except QuantityError:
        raise Invalid(expected) from None
    if amount < 0 or amount.denominator != 1:
        raise Invalid(expected)
    return str(value)


def env_value(value: object) -> str:
    # YAML turns `1` into an int and `true` into a bool; env values are text, written as given.
    if isinstance(value, bool):
        return "true" if value else "false"
    return string(value)


def pvcs(value: object) -> list[dict[str, str]]:
    example = "[{claim: project-001, path: /data}]"
    if not isinstance(value, list):
        raise Invalid(f"expected a list of claims, e.g. {example}")
    out = []
    for item in value:
        if not isinstance(item, dict) or set(item) != {"claim", "path"} or not item.get("claim"):
            raise Invalid(f"expected entries with 'claim' and 'path', e.g. {example}")
        claim = str(item["claim"])
        if len(claim) > 253 or not re.match(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$", claim):
            raise Invalid(f"expected a PVC claim name in DNS-1123 form, e.g. {example}")
        path = item.get("path")
        if not isinstance(path, str) or not path.startswith("/") or "," in path or "=" in path:
            raise Invalid(f"expected an absolute mount path without ',' or '=', e.g. {example}")
        out.append({"claim": claim, "path": path})
    return out
