"""Schema `pattern`s compiled with RE2, the linear-time engine kube-apiserver uses (Go's `regexp` is RE2).

Why not Python's `re`: it backtracks, so a CRD author's `^(a+)+$` against 28 `a`s and a `!` takes seconds per
request and stalls the whole (single-threaded) server. RE2 (`google-re2`) matches in time linear in the input, and
speaks the same syntax as Go (`\\d` is ASCII digits only, no backreferences or lookaround), so a pattern means here
what it means on a real cluster and one kube-apiserver rejects is rejected here too.

Compiled patterns are cached (a CRD schema's handful of patterns is matched on every write of its objects).
"""

from __future__ import annotations

import functools
from typing import Any

import re2

from knuma.errors import InvalidInput

_OPTIONS = re2.Options()
_OPTIONS.log_errors = False  # RE2 would print every rejected pattern to stderr


class SchemaPatternError(InvalidInput):
    """A schema pattern RE2 cannot compile; the message is RE2's reason."""


@functools.lru_cache(maxsize=1024)
def compile_pattern(pattern: str) -> Any:
    """The compiled RE2 pattern; raises `SchemaPatternError` for syntax RE2 (and so kube-apiserver) rejects."""
    try:
        return re2.compile(pattern, _OPTIONS)
    except re2.error as exc:
        reason = exc.args[0] if exc.args else exc
        text = reason.decode(errors="replace") if isinstance(reason, bytes) else str(reason)
        raise SchemaPatternError(f"error parsing regexp: {text}") from None


def search(pattern: str, value: str) -> bool:
    """Whether `value` contains a match of `pattern` (JSON Schema `pattern` is unanchored, like Go's MatchString)."""
    return compile_pattern(pattern).search(value) is not None
