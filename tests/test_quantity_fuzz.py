"""Fuzzing `knuma.quantity`: any input either parses or raises `QuantityError` (a `knuma.errors.InvalidInput`), fast."""

from __future__ import annotations

import time
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from knuma.errors import InvalidInput
from knuma.quantity import MAX_QUANTITY_LENGTH, QuantityError, parse_quantity
from tests.strategies import JSON_VALUES

_QUANTITY_LIKE = st.from_regex(
    r"[+-]?[0-9٣²]{0,12}(\.[0-9]{0,6})?(Ki|Mi|Gi|[numkMGTPE]|[eE][+-]?[0-9]{1,4})?", fullmatch=True
)


@settings(max_examples=400, deadline=None)
@given(st.one_of(JSON_VALUES, _QUANTITY_LIKE, st.text(max_size=30)))
def test_any_value_parses_or_raises_quantity_error(value: Any) -> None:
    try:
        quantity = parse_quantity(value)
    except QuantityError as err:
        assert isinstance(err, InvalidInput)
        assert "quantity" in str(err)
    else:
        assert parse_quantity(str(quantity)).nanos == quantity.nanos


@pytest.mark.parametrize("text", ["9" * 4400, "1" + "0" * 5000 + "Ki", "." + "9" * 10**5])
def test_huge_numbers_are_refused_quickly_with_a_quantity_error(text: str) -> None:
    started = time.perf_counter()
    with pytest.raises(QuantityError, match=f"at most {MAX_QUANTITY_LENGTH} characters"):
        parse_quantity(text)
    assert time.perf_counter() - started < 0.5


def test_other_scripts_digits_are_not_quantities() -> None:
    for text in ("٣", "²", "3٣"):
        with pytest.raises(QuantityError):
            parse_quantity(text)
