"""Shared building blocks for the site spec models: strict base model, names, secret references."""

from __future__ import annotations

import re
from ipaddress import IPv4Address, IPv4Network
from typing import Annotated, Any, NamedTuple

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, StringConstraints

NAME_PATTERN = r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$"

Name = Annotated[
    str,
    StringConstraints(pattern=NAME_PATTERN),
    Field(description="Lower-case DNS label: letters, digits and '-', 1-63 characters."),
]

_ENV_REF = re.compile(r"^env:[A-Za-z_][A-Za-z0-9_]*$")
_FILE_REF = re.compile(r"^file:\S.*$")


class SpecModel(BaseModel):
    """Base of every spec section: unknown keys are errors, values are immutable after validation."""

    model_config = ConfigDict(extra="forbid", frozen=True, validate_default=True)


def _check_secret_ref(value: str) -> str:
    if _ENV_REF.match(value) or _FILE_REF.match(value):
        return value
    # Never echo the value: it may be the secret itself.
    raise ValueError(
        "inline secrets are not allowed; reference the secret instead: 'env:NAME' (an environment "
        "variable on the controller) or 'file:PATH' (a file readable by the controller)"
    )


SecretRef = Annotated[
    str,
    AfterValidator(_check_secret_ref),
    Field(
        description="Reference to a secret: 'env:NAME' or 'file:PATH'. Inline values are rejected.",
        json_schema_extra={"pattern": r"^(env:[A-Za-z_][A-Za-z0-9_]*|file:\S.*)$"},
    ),
]


def _dotted(value: Any) -> Any:
    # pydantic turns a number into an address (1 -> 0.0.0.1, true -> 0.0.0.1/32): a YAML slip, never meant
    if isinstance(value, bool | int | float):
        raise ValueError(
            f"an address is written as text such as 10.0.0.1 (a subnet as 10.0.0.0/24), not as the number "
            f"{value!r}"
        )
    return value


IPv4 = Annotated[IPv4Address, BeforeValidator(_dotted)]
IPv4Net = Annotated[IPv4Network, BeforeValidator(_dotted)]

KernelInt = Annotated[int, Field(ge=-(2**63), le=2**64 - 1)]
"""An integer the kernel stores in 64 bits (sysctl and module parameter values)."""

SECRET_NAME = re.compile(r"(^|[_-])(KEY|TOKEN|PASSWORD|PASSWD|SECRET|CREDENTIALS?)$", re.IGNORECASE)
"""Names (field, env variable, flag) whose values are secrets: HF_TOKEN, api_key, --hf-token, ..."""

SECRET_FIELD_NAMES = frozenset({"api_key", "password", "token", "secret"})
"""Field names whose input must never be printed in an error message."""


def secret_kind(ref: str) -> tuple[str, str]:
    """Split a validated secret reference into ('env'|'file', target)."""
    kind, _, target = ref.partition(":")
    return kind, target


class Renamed(NamedTuple):
    """A value the spec used to accept: what `orchestrator migrate` writes instead, and why."""

    target: str
    why: str  # the error's explanation, naming the target (and the other choice, when there is one)
    note: str = ""  # what the migrate change line adds, e.g. why this target and not another
