"""Amounts as upstream's scoring reads them: whole units rounded up (Go `Quantity.Value()`), scores out of 100."""

from __future__ import annotations

from knuma.api.resources import CPU

__all__ = ["MAX_SCORE", "whole_units"]

MAX_SCORE = 100


def whole_units(name: str, amount: int) -> int:
    """Go `Quantity.Value()` of an amount in knuma's base unit (ceil for milli-CPU)."""
    return -(-amount // 1000) if name == CPU else amount
