"""apimachinery's name checks (`k8s.io/apimachinery/pkg/util/validation`), with their messages word for word.

Each returns the messages kube-apiserver puts after `Invalid value: "<value>": `, empty when the value is valid.
Users paste these messages into search engines, so they are upstream's, examples and regular expressions included.

Pure.
"""

from __future__ import annotations

import re

__all__ = [
    "config_map_key_errors",
    "dns1123_label_errors",
    "dns1123_subdomain_errors",
    "max_len_error",
    "qualified_name_errors",
    "regex_error",
]

_DNS1123_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_SUBDOMAIN_FMT = _DNS1123_LABEL_FMT + "(\\." + _DNS1123_LABEL_FMT + ")*"
_QUALIFIED_NAME_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_CONFIG_MAP_KEY_FMT = "[-._a-zA-Z0-9]+"
_DNS1123_LABEL = re.compile(f"^{_DNS1123_LABEL_FMT}$")
_DNS1123_SUBDOMAIN = re.compile(f"^{_DNS1123_SUBDOMAIN_FMT}$")
_QUALIFIED_NAME = re.compile(f"^{_QUALIFIED_NAME_FMT}$")
_CONFIG_MAP_KEY = re.compile(f"^{_CONFIG_MAP_KEY_FMT}$")
_DNS1123_LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end "
    "with an alphanumeric character"
)
_DNS1123_SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start "
    "and end with an alphanumeric character"
)
_QUALIFIED_NAME_MSG = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"
)
_CONFIG_MAP_KEY_MSG = "a valid config key must consist of alphanumeric characters, '-', '_' or '.'"
DNS1123_LABEL_MAX_LENGTH = 63
DNS1123_SUBDOMAIN_MAX_LENGTH = 253
QUALIFIED_NAME_MAX_LENGTH = 63


def max_len_error(length: int) -> str:
    """`MaxLenError`."""
    return f"must be no more than {length} characters"


def regex_error(message: str, fmt: str, *examples: str) -> str:
    """`RegexError`: the message, the examples (`'a',  or 'b'`: upstream's double space) and the expression."""
    if not examples:
        return f"{message} (regex used for validation is '{fmt}')"
    shown = " or ".join(f"'{example}', " for example in examples)
    return f"{message} (e.g. {shown}regex used for validation is '{fmt}')"


def dns1123_label_errors(value: str) -> list[str]:
    """`IsDNS1123Label`: container names, namespaces, Service names."""
    errors = []
    if len(value) > DNS1123_LABEL_MAX_LENGTH:
        errors.append(max_len_error(DNS1123_LABEL_MAX_LENGTH))
    if not _DNS1123_LABEL.match(value):
        if _DNS1123_SUBDOMAIN.match(value):  # a subdomain, not a label, the length checked: it has dots
            errors.append("must not contain dots")
        else:
            errors.append(regex_error(_DNS1123_LABEL_MSG, _DNS1123_LABEL_FMT, "my-name", "123-abc"))
    return errors


def dns1123_subdomain_errors(value: str) -> list[str]:
    """`IsDNS1123Subdomain`: most object names, node names (`ValidateNodeName`)."""
    errors = []
    if len(value) > DNS1123_SUBDOMAIN_MAX_LENGTH:
        errors.append(max_len_error(DNS1123_SUBDOMAIN_MAX_LENGTH))
    if not _DNS1123_SUBDOMAIN.match(value):
        errors.append(regex_error(_DNS1123_SUBDOMAIN_MSG, _DNS1123_SUBDOMAIN_FMT, "example.com"))
    return errors


def qualified_name_errors(value: str) -> list[str]:
    """`IsQualifiedName` (`k8s.io/apimachinery/pkg/api/validate/content`): an optional DNS-subdomain prefix and `/`,
    then a name of at most 63 characters: label keys, resource names."""
    parts = value.split("/")
    if len(parts) > 2:
        return [
            f"a qualified name {regex_error(_QUALIFIED_NAME_MSG, _QUALIFIED_NAME_FMT, 'MyName', 'my.name', '123-abc')}"
            " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    errors = []
    if len(parts) == 2:
        prefix = parts[0]
        if not prefix:
            errors.append("prefix part must be non-empty")
        else:
            errors += [f"prefix part {message}" for message in dns1123_subdomain_errors(prefix)]
    name = parts[-1]
    if not name:
        errors.append("name part must be non-empty")
    elif len(name) > QUALIFIED_NAME_MAX_LENGTH:
        errors.append(f"name part {max_len_error(QUALIFIED_NAME_MAX_LENGTH)}")
    if not _QUALIFIED_NAME.match(name):
        errors.append(
            f"name part {regex_error(_QUALIFIED_NAME_MSG, _QUALIFIED_NAME_FMT, 'MyName', 'my.name', '123-abc')}"
        )
    return errors


def config_map_key_errors(value: str) -> list[str]:
    """`IsConfigMapKey`: the keys of a ConfigMap's or a Secret's data (they become file names in a volume)."""
    errors = []
    if len(value) > DNS1123_SUBDOMAIN_MAX_LENGTH:
        errors.append(max_len_error(DNS1123_SUBDOMAIN_MAX_LENGTH))
    if not _CONFIG_MAP_KEY.match(value):
        errors.append(regex_error(_CONFIG_MAP_KEY_MSG, _CONFIG_MAP_KEY_FMT, "key.name", "KEY_NAME", "key-name"))
    if value == ".":
        errors.append("must not be '.'")
    elif value == "..":
        errors.append("must not be '..'")
    elif value.startswith(".."):
        errors.append("must not start with '..'")
    return errors
