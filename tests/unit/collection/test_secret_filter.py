"""ascend.npu.secret, what the roles resolve serving.api_key and the registry password with: a value, or an
error that names the field and the fix and never holds the value; never the empty string that
lookup('ansible.builtin.env') returns for an unset variable (vLLM would then serve without a key)."""

from __future__ import annotations

from pathlib import Path

import pytest
from ansible.errors import AnsibleFilterError
from ansible_collections.ascend.npu.plugins.filter.secret import FilterModule, secret


def test_values_resolve_stripped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SITE_KEY", " k3y\n")
    assert secret("env:SITE_KEY", "serving.api_key", str(tmp_path)) == "k3y"
    (tmp_path / "key").write_text("f1le\n")
    assert secret(f"file:{tmp_path / 'key'}", "serving.api_key", "/elsewhere") == "f1le"
    assert secret("file:key", "serving.api_key", str(tmp_path)) == "f1le"  # the inventory's = spec's folder
    assert FilterModule().filters()["secret"] is secret


@pytest.mark.parametrize(
    ("ref", "env", "file", "why"),
    [
        ("env:SITE_KEY", None, None, "the environment variable SITE_KEY is not set on the controller"),
        ("env:SITE_KEY", "", None, "the environment variable SITE_KEY is set but empty on the controller"),
        ("env:SITE_KEY", " \t", None, "the environment variable SITE_KEY is set but empty on the controller"),
        ("file:key", None, None, "key cannot be read (No such file or directory)"),
        ("file:key", None, "\n", "key is empty"),
    ],
    ids=["unset", "empty", "blank", "missing-file", "empty-file"],
)
def test_unresolved_references_fail_closed(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    ref: str,
    env: str | None,
    file: str | None,
    why: str,
) -> None:
    monkeypatch.delenv("SITE_KEY", raising=False)
    if env is not None:
        monkeypatch.setenv("SITE_KEY", env)
    if file is not None:
        (tmp_path / "key").write_text(file)
    with pytest.raises(AnsibleFilterError) as exc:
        secret(ref, "serving.api_key", str(tmp_path))
    text = str(exc.value)
    assert text.startswith(f"serving.api_key: {ref} does not resolve: ")
    assert why in text and "refusing to continue without it. Fix: " in text
