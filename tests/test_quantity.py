"""Kubernetes quantities: parsing every suffix, canonical strings as `resource.Quantity.String()` prints them, Go's
rounding (up to the nano unit, `Value()` away from zero) and int64 cap, and round trips."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from knuma.quantity import Quantity, QuantityError, QuantityFormat, format_quantity, parse_quantity

DEC, BIN, EXP = QuantityFormat.DECIMAL_SI, QuantityFormat.BINARY_SI, QuantityFormat.DECIMAL_EXPONENT
MAX_INT64 = 2**63 - 1


@pytest.mark.parametrize(
    ("text", "exact"),
    [
        ("1n", Fraction(1, 10**9)),
        ("1u", Fraction(1, 10**6)),
        ("1m", Fraction(1, 1000)),
        ("1", 1),
        ("1k", 10**3),
        ("1M", 10**6),
        ("1G", 10**9),
        ("1T", 10**12),
        ("1P", 10**15),
        ("1E", 10**18),
        ("1Ki", 1024),
        ("1Mi", 1024**2),
        ("1Gi", 1024**3),
        ("1Ti", 1024**4),
        ("1Pi", 1024**5),
        ("1Ei", 1024**6),
        ("1e3", 1000),
        ("1E3", 1000),
        ("1e+3", 1000),
        ("1e-3", Fraction(1, 1000)),
        ("2.5e2", 250),
        ("+5", 5),
        ("-5", -5),
        ("-1.5Gi", -(3 * 1024**3) // 2),
        ("0.5", Fraction(1, 2)),
        (".5", Fraction(1, 2)),
        ("5.", 5),
        ("007", 7),
        ("1.5Gi", 3 * 1024**3 // 2),
    ],
)
def test_parse_every_suffix_exponent_and_sign(text, exact):
    assert parse_quantity(text).exact() == exact


@pytest.mark.parametrize(
    ("text", "fmt"),
    [("1Ki", BIN), ("1.5Gi", BIN), ("1e3", EXP), ("1E3", EXP), ("1E", DEC), ("100m", DEC), ("1", DEC)],
)
def test_format_follows_the_suffix(text, fmt):
    assert parse_quantity(text).format is fmt


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        # from apimachinery's quantity_test.go and kubectl output
        ("0", "0"),
        ("-0", "0"),
        ("0Ki", "0"),
        ("0.0", "0"),
        ("1", "1"),
        ("1000", "1k"),
        ("1000m", "1"),
        ("1000k", "1M"),
        ("1100m", "1100m"),
        ("1.1", "1100m"),
        ("0.1", "100m"),
        ("0.001", "1m"),
        ("0.0001", "100u"),
        ("1.001", "1001m"),
        ("7.5", "7500m"),
        ("1.5k", "1500"),
        ("10k", "10k"),
        ("1024", "1024"),
        ("1Ki", "1Ki"),
        ("1024Ki", "1Mi"),
        ("1023Ki", "1023Ki"),
        ("1025Ki", "1025Ki"),
        ("1.5Gi", "1536Mi"),
        ("-1.5Gi", "-1536Mi"),
        ("0.5Ki", "512"),  # below 1024 a BinarySI quantity prints as DecimalSI
        ("1023", "1023"),
        ("-1Ki", "-1Ki"),
        ("1.5Ki", "1536"),
        ("0.1Ki", "102400m"),  # not an integer: DecimalSI so as not to lose precision
        ("1e3", "1e3"),
        ("1E3", "1e3"),
        ("12e6", "12e6"),
        ("1e1", "10"),
        ("1e19", "10e18"),
        ("1e21", "1e21"),  # DecimalExponent is not capped
        ("1.5e3", "1500"),
        ("1.0001e3", "1000100e-3"),
        ("1.5e-3", "1500e-6"),
        ("1e-20", "1e-9"),
        ("1E", "1E"),
        ("1000P", "1E"),
        ("5G", "5G"),
        ("100Mi", "100Mi"),
        ("0.0000000001", "1n"),  # below the nano unit: rounded up
        ("-0.0000000001", "-1n"),  # away from zero, as Go's inf.RoundUp
        ("1.0000000001", "1000000001n"),
    ],
)
def test_canonical_strings(text, canonical):
    assert str(parse_quantity(text)) == canonical


def test_int64_cap_for_decimal_and_binary_si():
    """resource.ParseQuantity caps DecimalSI and BinarySI at the largest int64; DecimalExponent is not capped."""
    assert parse_quantity("10E").value() == MAX_INT64
    assert str(parse_quantity("10E")) == "9223372036854775807"
    assert parse_quantity("1024Ei").value() == MAX_INT64
    assert parse_quantity("-10E").value() == -MAX_INT64
    assert parse_quantity("9223372036854775807").value() == MAX_INT64
    assert parse_quantity("9223372036854775808").value() == MAX_INT64
    assert parse_quantity(2**70).value() == MAX_INT64
    assert parse_quantity("1e21").value() == 10**21


@pytest.mark.parametrize(
    ("text", "value", "milli"),
    [
        ("1", 1, 1000),
        ("1.5", 2, 1500),
        ("0.1", 1, 100),
        ("100m", 1, 100),
        ("1n", 1, 1),
        ("1001u", 1, 2),  # 1.001m -> 2m
        ("-1.5", -2, -1500),  # Go rounds away from zero
        ("-1n", -1, -1),
        ("1Ki", 1024, 1024000),
        ("0", 0, 0),
    ],
)
def test_value_and_milli_value_round_like_go(text, value, milli):
    q = parse_quantity(text)
    assert q.value() == value
    assert q.milli_value() == milli


def test_numbers_from_yaml():
    assert parse_quantity(2).exact() == 2
    assert parse_quantity(0.5).milli_value() == 500
    assert parse_quantity(0.1).milli_value() == 100  # shortest decimal text of the float, not its binary value
    assert parse_quantity(1e-10).nanos == 1
    assert parse_quantity(-2).value() == -2


INVALID = ["", " ", "1 Gi", "1Gb", "1K", "1ki", "Ki", "abc", "1.5.5", "1e", "1e3.5", "1e++3", "--1", "0x10", "1_000"]
INVALID += ["1Ki2", "1iK", "\u0661", "1e31", " 1", "1 ", ".", "1\n", "1Mi\n"]  # U+0661: ARABIC-INDIC DIGIT ONE


@pytest.mark.parametrize("text", INVALID)
def test_invalid_strings_name_the_value(text):
    with pytest.raises(QuantityError) as err:
        parse_quantity(text)
    assert repr(text) in str(err.value)


@pytest.mark.parametrize("value", [True, None, [1], float("nan"), float("inf")])
def test_invalid_types(value):
    with pytest.raises(QuantityError) as err:
        parse_quantity(value)
    assert repr(value) in str(err.value)


def test_quantity_error_is_a_value_error():
    assert issubclass(QuantityError, ValueError)


def test_constructors():
    assert Quantity.from_milli(1500).milli_value() == 1500
    assert str(Quantity.from_milli(1500)) == "1500m"
    assert str(Quantity.from_int(2 * 1024**3, BIN)) == "2Gi"
    assert Quantity.parse("2Gi") == Quantity.from_int(2 * 1024**3, BIN)


# -- properties ------------------------------------------------------------------------------------------------------

amounts = st.integers(min_value=-(10**27), max_value=10**27)  # nanos: up to 10^18 base units
formats = st.sampled_from([DEC, BIN, EXP])


@settings(max_examples=300)
@given(nanos=amounts, fmt=formats)
def test_canonical_string_round_trips(nanos, fmt):
    text = format_quantity(nanos, fmt)
    parsed = parse_quantity(text)
    assert parsed.nanos == nanos
    # A BinarySI amount that is not a multiple of 1024 prints without a suffix, as Go does, and reads back as
    # DecimalSI ("15625000" -> "15625k"); from then on the canonical string is a fixed point.
    again = parse_quantity(str(parsed))
    assert again.nanos == nanos
    assert str(parse_quantity(str(again))) == str(again)


def test_binary_si_without_a_binary_suffix_prints_like_go() -> None:
    assert format_quantity(15_625_000 * 10**9, QuantityFormat.BINARY_SI) == "15625000"
    assert str(parse_quantity("15625000")) == "15625k"


@settings(max_examples=300)
@given(
    sign=st.sampled_from(["", "+", "-"]),
    whole=st.integers(0, 10**6),
    fraction=st.one_of(st.none(), st.from_regex(r"\A[0-9]{0,12}\Z")),
    suffix=st.sampled_from(["", "n", "u", "m", "k", "M", "G", "T", "Ki", "Mi", "Gi", "Ti", "e0", "e3", "e-3", "E6"]),
)
def test_parse_is_exact_then_rounds_up_to_nano(sign, whole, fraction, suffix):
    text = f"{sign}{whole}" + ("" if fraction is None else f".{fraction}") + suffix
    mantissa = Fraction(f"{whole}.{fraction or 0}")
    scales: dict[str, Fraction | int] = {
        "": 1,
        "n": Fraction(1, 10**9),
        "u": Fraction(1, 10**6),
        "m": Fraction(1, 1000),
        "k": 10**3,
        "M": 10**6,
        "G": 10**9,
        "T": 10**12,
        "Ki": 1024,
        "Mi": 1024**2,
        "Gi": 1024**3,
        "Ti": 1024**4,
        "e0": 1,
        "e3": 1000,
        "e-3": Fraction(1, 1000),
        "E6": 10**6,
    }
    scale = scales[suffix]
    exact = mantissa * scale
    nanos = -((-exact * 10**9).numerator // (exact * 10**9).denominator) if exact else 0
    q = parse_quantity(text)
    assert q.nanos == (-nanos if sign == "-" else nanos)
    assert parse_quantity(str(q)).nanos == q.nanos


@settings(max_examples=200)
@given(milli=st.integers(0, 10**12))
def test_cpu_milli_round_trip(milli):
    assert parse_quantity(str(Quantity.from_milli(milli))).milli_value() == milli


@settings(max_examples=200)
@given(units=st.integers(0, 2**62), fmt=formats)
def test_integer_round_trip(units, fmt):
    assert parse_quantity(format_quantity(units * 10**9, fmt)).value() == units
