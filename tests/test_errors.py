"""The exception root: every branch is a `KnumaError`, and input errors stay `ValueError`s for existing callers."""

from __future__ import annotations

import pytest

from knuma.duration import DurationError, parse_duration
from knuma.errors import ConfigError, InvalidInput, KnumaError, OperationFailed, SpecError


@pytest.mark.parametrize("cls", [InvalidInput, ConfigError, SpecError, OperationFailed])
def test_every_branch_is_a_knuma_error(cls: type[Exception]) -> None:
    assert issubclass(cls, KnumaError)


def test_input_errors_are_value_errors_and_failures_are_runtime_errors() -> None:
    assert issubclass(ConfigError, ValueError) and issubclass(SpecError, ValueError)
    assert issubclass(OperationFailed, RuntimeError) and not issubclass(OperationFailed, ValueError)


def test_a_bad_duration_is_caught_as_invalid_input() -> None:
    with pytest.raises(InvalidInput, match="expected a number with a unit"):
        parse_duration("15")
    assert issubclass(DurationError, KnumaError)
