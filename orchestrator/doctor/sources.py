"""Addresses the rules cite (helpers, so the rule modules stay readable).

The vllm-ascend repository files were read at commit 182b75ea84ff (2026-08-22); the links point at main.
"""

from __future__ import annotations

VA_REPO = "https://github.com/vllm-project/vllm-ascend"
FAQ = f"{VA_REPO}/blob/main/docs/source/faqs.md"
INSTALL = f"{VA_REPO}/blob/main/docs/source/installation.md"
VERSIONS = f"{VA_REPO}/blob/main/docs/source/community/versioning_policy.md"
HIASCEND_CONTAINER = "https://hiascend.com/document/detail/zh/Atlas%2520200I%2520A2/24.1.RC3/ep/installationguide/Install_52.html"


def va(*numbers: int) -> tuple[str, ...]:
    """vllm-ascend issues by number."""
    return tuple(f"{VA_REPO}/issues/{n}" for n in numbers)


def vap(*numbers: int) -> tuple[str, ...]:
    """vllm-ascend pull requests by number."""
    return tuple(f"{VA_REPO}/pull/{n}" for n in numbers)


def va_file(path: str) -> str:
    """A file of the vllm-ascend repository."""
    return f"{VA_REPO}/blob/main/{path}"


def va_at(tag: str, path: str) -> str:
    """A file of the vllm-ascend repository at a release tag (the text a rule's log line was read from)."""
    return f"{VA_REPO}/blob/{tag}/{path}"


MOONCAKE_REPO = "https://github.com/kvcache-ai/Mooncake"


def mooncake_at(commit: str, path: str) -> str:
    """A file of the Mooncake repository at a commit."""
    return f"{MOONCAKE_REPO}/blob/{commit}/{path}"
