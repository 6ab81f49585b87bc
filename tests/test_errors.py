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


def _exception_classes() -> list[type[BaseException]]:
    """Every exception class defined in a knuma module (generated protobuf code aside)."""
    import importlib
    import inspect
    import pkgutil

    import knuma

    found = []
    for info in pkgutil.walk_packages(knuma.__path__, "knuma."):
        if info.name.endswith("__main__") or "_pb2" in info.name:
            continue
        module = importlib.import_module(info.name)
        for obj in vars(module).values():
            if inspect.isclass(obj) and issubclass(obj, BaseException) and obj.__module__ == info.name:
                found.append(obj)
    return found


def test_every_exception_class_is_a_knuma_error_and_names_are_unique() -> None:
    classes = _exception_classes()
    assert len(classes) > 30
    assert [f"{c.__module__}.{c.__qualname__}" for c in classes if not issubclass(c, KnumaError)] == []
    names = [c.__name__ for c in classes]
    assert sorted({n for n in names if names.count(n) > 1}) == []
