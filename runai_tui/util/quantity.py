"""Kubernetes quantities (`512Mi`, `4G`, `500m`, `1e3`): the one reader of memory and CPU amounts,
used by profile validation, lint, plan, the local cluster and (through the local cluster's exec)
`top`.

The grammar is Kubernetes' (k8s.io/apimachinery/pkg/api/resource):

    quantity        ::= signedNumber suffix
    signedNumber    ::= [+-] (digits | digits "." digits | digits "." | "." digits)
    suffix          ::= binarySI | decimalSI | decimalExponent
    binarySI        ::= Ki | Mi | Gi | Ti | Pi | Ei                  (powers of 1024)
    decimalSI       ::= n | u | m | "" | k | M | G | T | P | E      (powers of 1000)
    decimalExponent ::= (e | E) [+-] digits                         (1e3 = 1000)

A bare number is in base units: bytes for memory, cores for CPU. A lower-case `m` is milli:
`500m` of CPU is half a core and `512m` of memory is 0.512 bytes (not 512 MB). There is no
upper-case `K`. Values are exact fractions; `whole()` rounds up to whole base units as
Kubernetes does (Quantity.Value()), so `512m` of memory is a limit of 1 byte.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from fractions import Fraction

BINARY_SI = {"Ki": 1, "Mi": 2, "Gi": 3, "Ti": 4, "Pi": 5, "Ei": 6}  # powers of 1024
DECIMAL_SI = {"n": -3, "u": -2, "m": -1, "": 0, "k": 1, "M": 2, "G": 3, "T": 4, "P": 5, "E": 6}
_QUANTITY = re.compile(
    r"^([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))"
    r"(Ki|Mi|Gi|Ti|Pi|Ei|[eE][+-]?[0-9]+|[numkMGTPE]?)$"
)
EXAMPLES = "512Mi, 16Gi, 4G, 500m or 2"


class QuantityError(ValueError):
    """Text that is not a Kubernetes quantity; str() says what is expected."""


@dataclass(frozen=True)
class Quantity:
    """A parsed quantity: the `text` as written, its `number` and `suffix`, and its exact
    `value` in base units (bytes, cores)."""

    text: str
    number: str
    suffix: str
    value: Fraction

    @property
    def has_unit(self) -> bool:
        """A binary or decimal SI suffix other than milli and smaller (`Mi`, `G`, `k`): a bare
        number or an exponent form (`1e3`) has none, and neither has `m`, `u` or `n`."""
        return self.suffix in BINARY_SI or self.suffix in ("k", "M", "G", "T", "P", "E")

    def whole(self) -> int:
        """The value rounded up to whole base units, as Kubernetes' Quantity.Value()."""
        return math.ceil(self.value)

    def __float__(self) -> float:
        return float(self.value)


def parse_quantity(text: object) -> Quantity:
    """`text` as a Kubernetes quantity; QuantityError when it is not one. A YAML number (an int
    or float) is read as its decimal text: 3846 is 3846 base units."""
    if isinstance(text, bool) or not isinstance(text, str | int | float):
        raise QuantityError(f"expected a quantity such as {EXAMPLES}")
    written = str(text).strip()
    match = _QUANTITY.match(written)
    if not match:
        raise QuantityError(f"expected a quantity such as {EXAMPLES}")
    number, suffix = match.groups()
    value = Fraction(number.removesuffix("."))
    if suffix in BINARY_SI:
        value *= 1024 ** BINARY_SI[suffix]
    elif suffix in DECIMAL_SI:
        value *= Fraction(1000) ** DECIMAL_SI[suffix]
    else:  # e3, E-3, e+3
        value *= Fraction(10) ** int(suffix[1:])
    return Quantity(written, number, suffix, value)


def quantity_or_none(text: str | int | float | None) -> Quantity | None:
    """parse_quantity, or None for an unset or unreadable value."""
    if text is None:
        return None
    try:
        return parse_quantity(text)
    except QuantityError:
        return None


def memory_bytes(text: str | int | float | None) -> int | None:
    """A memory quantity in whole bytes (rounded up, as Kubernetes does), or None if unset or
    unreadable: `8996` -> 8996, `512Mi` -> 536870912, `512m` -> 1."""
    quantity = quantity_or_none(text)
    return None if quantity is None else quantity.whole()


def plain(value: Fraction | float) -> str:
    """A value for a message: `0.512`, `3846`, `1.5e+12`."""
    number = float(value)
    return str(int(number)) if number.is_integer() and abs(number) < 1e15 else f"{number:g}"


KIB, MIB, GIB = 1024, 1024**2, 1024**3


def bytes_text(num_bytes: float) -> str:
    """A byte count for people: `1.5 GiB`, `512 MiB`, `3.8 KiB`, `1 B` (top, plan)."""
    if num_bytes >= GIB:
        return f"{num_bytes / GIB:.1f} GiB"
    if num_bytes >= MIB:
        return f"{num_bytes / MIB:.0f} MiB"
    if num_bytes >= KIB:
        return f"{num_bytes / KIB:.1f} KiB"
    return f"{num_bytes:.0f} B"
