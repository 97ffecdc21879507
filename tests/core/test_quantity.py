"""The one quantity reader (runai_tui/util/quantity.py): every unit of Kubernetes' quantity grammar, the
number forms, what is refused, and the rounding Kubernetes applies to memory."""

from __future__ import annotations

from fractions import Fraction

import pytest

from runai_tui.util.quantity import (
    BINARY_SI,
    DECIMAL_SI,
    QuantityError,
    memory_bytes,
    parse_quantity,
    plain,
    quantity_or_none,
)

# (text, exact value in base units, has a unit for memory)
GRAMMAR = [
    # binarySI: powers of 1024
    ("1Ki", 2**10, True),
    ("1Mi", 2**20, True),
    ("1Gi", 2**30, True),
    ("1Ti", 2**40, True),
    ("1Pi", 2**50, True),
    ("1Ei", 2**60, True),
    ("1.5Gi", 3 * 2**29, True),
    # decimalSI: powers of 1000, lower-case m is milli
    ("1n", Fraction(1, 10**9), False),
    ("1u", Fraction(1, 10**6), False),
    ("512m", Fraction(512, 1000), False),
    ("500m", Fraction(1, 2), False),
    ("3846", 3846, False),
    ("1k", 10**3, True),
    ("1M", 10**6, True),
    ("4G", 4 * 10**9, True),
    ("1T", 10**12, True),
    ("1P", 10**15, True),
    ("1E", 10**18, True),
    # decimalExponent: e or E and a signed whole number
    ("1e3", 10**3, False),
    ("1E3", 10**3, False),
    ("1e+3", 10**3, False),
    ("5e-1", Fraction(1, 2), False),
    ("2.5E6", 2_500_000, False),
    # the number forms: digits, digits.digits, digits., .digits, signed
    ("0.5", Fraction(1, 2), False),
    ("2.", 2, False),
    (".5", Fraction(1, 2), False),
    ("+2", 2, False),
    ("-2", -2, False),
    (" 16Gi ", 16 * 2**30, True),
]


@pytest.mark.parametrize(("text", "value", "has_unit"), GRAMMAR)
def test_every_form_of_the_grammar(text: str, value: Fraction | int, has_unit: bool) -> None:
    quantity = parse_quantity(text)
    assert quantity.value == value
    assert quantity.has_unit is has_unit
    assert quantity.text == text.strip()


def test_the_table_covers_every_suffix() -> None:
    suffixes = {parse_quantity(text).suffix for text, _, _ in GRAMMAR}
    assert set(BINARY_SI) | set(DECIMAL_SI) <= suffixes


@pytest.mark.parametrize(
    "text",
    ["", "Mi", "1K", "1KB", "1MB", "1mi", "1gi", "1 Gi", "1e", "1e1.5", "1Mie3", ".", "1..2",
     "++1", "0x10", "1,5Gi", "lots"],
)  # fmt: skip
def test_refused(text: str) -> None:
    with pytest.raises(QuantityError, match="expected a quantity such as 512Mi"):
        parse_quantity(text)
    assert quantity_or_none(text) is None


def test_yaml_numbers_read_as_their_text_and_bools_refused() -> None:
    assert parse_quantity(3846).value == 3846
    assert parse_quantity(0.5).value == Fraction(1, 2)
    with pytest.raises(QuantityError):
        parse_quantity(True)
    assert quantity_or_none(None) is None


def test_memory_bytes_round_up_as_kubernetes_does() -> None:
    assert memory_bytes("8996") == 8996
    assert memory_bytes("512Mi") == 512 * 2**20
    assert memory_bytes("512m") == 1  # 0.512 bytes: Quantity.Value() rounds up
    assert memory_bytes("1.5k") == 1500
    assert memory_bytes("junk") is None and memory_bytes(None) is None


def test_plain_shows_a_value_for_a_message() -> None:
    assert [plain(Fraction(512, 1000)), plain(Fraction(3846)), plain(1.5e18)] == [
        "0.512",
        "3846",
        "1.5e+18",
    ]
