# Copyright: ascend-orchestrator contributors
# Apache-2.0 (see the repository's pyproject.toml)
"""A secret reference of the site spec, resolved on the controller, failing closed.

``ref | ascend.npu.secret(field, inventory_dir)``: the value of ``env:NAME`` (the controller's
environment) or ``file:PATH`` (absolute, ``~``, or relative to the spec's folder, which is the rendered
inventory's folder: pass ``inventory_dir``), blanks stripped. An unset or empty variable, a missing,
unreadable or empty file is an error naming ``field`` and the fix, never an empty string:
``lookup('env', NAME)`` returns '' for an unset variable, and vLLM started with an empty API key serves
without authentication. The value is never part of an error message. Use it in tasks with ``no_log``.
"""

from __future__ import annotations

import os
from typing import Any

from ansible.errors import AnsibleFilterError


def _fail(field: str, ref: str, why: str, fix: str) -> AnsibleFilterError:
    return AnsibleFilterError(
        f"{field}: {ref} does not resolve: {why}; refusing to continue without it. Fix: {fix}"
    )


def secret(ref: Any, field: str, inventory_dir: str) -> str:
    text = str(ref or "")
    kind, _, target = text.partition(":")
    if kind == "env" and target:
        value = os.environ.get(target)
        if value is None or not value.strip():
            state = "not set" if value is None else "set but empty"
            raise _fail(
                field,
                text,
                f"the environment variable {target} is {state} on the controller",
                f"export {target} with the secret where ansible-playbook runs, or reference a 0600 file "
                "(file:/PATH)",
            )
        return value.strip()
    if kind == "file" and target:
        path = os.path.expanduser(target)
        if not os.path.isabs(path):
            path = os.path.join(inventory_dir, path)
        try:
            with open(path, encoding="utf-8") as fh:
                value = fh.read().strip()
        except (OSError, UnicodeDecodeError) as exc:
            why = getattr(exc, "strerror", None) or type(exc).__name__
            fix = f"write the secret into {path}"
            raise _fail(field, text, f"{path} cannot be read ({why})", fix) from None
        if not value:
            raise _fail(field, text, f"{path} is empty", f"write the secret into {path}")
        return value
    raise _fail(field, "the reference", "it is neither env:NAME nor file:PATH", "render the inventory again")


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {"secret": secret}
