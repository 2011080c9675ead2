"""Boundaries of the software rules, as whole findings: the Python range of a vllm-ascend release, a driver
at the lowest HDK its CANN supports, and a driver that CANN accepts but vllm-ascend does not.

The ranges are the release notes' (vllm-ascend's release notes and installation docs):
vllm-ascend v0.23.0 runs on Python >=3.10,<3.13 and builds its image with Python 3.12 on CANN 9.1.0, which
supports HDK drivers from 25.2; v0.13.0 (CANN 8.5.0, HDK 25.0 .. 25.5) needs HDK 25.5.0."""

from __future__ import annotations

from typing import Any

import pytest

from tests.helpers import validate_data
from tests.spec_text import Described, described

ACCEPT = ", or set software.allow_unsupported: true to accept the risk"


def _findings(data: dict[str, Any]) -> list[Described]:
    return [described(f) for f in validate_data(data).findings]


def _python_pinned(python: str) -> Described:
    return (
        "software.vllm_ascend.python",
        f"vllm-ascend v0.23.0 is built and tested with python 3.12, not {python}",
        "remove 'python' to use the derived 3.12" + ACCEPT,
        "compat",
        [],
    )


def _python_range(python: str) -> Described:
    return (
        "software.vllm_ascend.python",
        f"vllm-ascend v0.23.0 supports Python >=3.10,<3.13, not {python}",
        "use Python 3.12" + ACCEPT,
        "compat",
        [],
    )


@pytest.mark.parametrize(
    ("python", "expected"),
    [
        ("3.9", [_python_pinned("3.9"), _python_range("3.9")]),  # below the range
        ("3.10", [_python_pinned("3.10")]),  # the lowest supported: only "not the image's Python"
        ("3.12", []),  # the image's Python
        ("3.13", [_python_pinned("3.13"), _python_range("3.13")]),  # the range's upper bound is exclusive
    ],
)
def test_python_outside_the_release_range(
    pair: dict[str, Any], python: str, expected: list[Described]
) -> None:
    pair["software"]["vllm_ascend"]["python"] = python
    assert _findings(pair) == expected


def _hdk(data: dict[str, Any], driver: str, firmware: str, release: str) -> None:
    sw = data["software"]
    sw["vllm_ascend"]["version"] = release
    sw["driver"] = {
        "version": driver,
        "path": f"/srv/ascend/Ascend-hdk-910b-npu-driver_{driver}_linux-aarch64.run",
        "sha256": "0" * 64,
    }
    sw["firmware"] = {
        "version": firmware,
        "path": f"/srv/ascend/Ascend-hdk-910b-npu-firmware_{firmware}.run",
        "sha256": "1" * 64,
    }


def test_driver_at_the_lowest_hdk_of_the_cann_is_accepted(pair: dict[str, Any]) -> None:
    # CANN 9.1.0 supports HDK 25.2.X and newer; 25.2.0 + firmware 7.7.0.6.236 is an HDK release pair
    _hdk(pair, "25.2.0", "7.7.0.6.236", "v0.23.0")
    assert _findings(pair) == []


def test_driver_the_cann_accepts_but_vllm_ascend_does_not(pair: dict[str, Any]) -> None:
    # CANN 8.5.0 runs on HDK 25.0 .. 25.5, so 25.3.rc1 passes the CANN check; vllm-ascend v0.13.0 needs 25.5.0
    _hdk(pair, "25.3.rc1", "7.8.0.2.212", "v0.13.0")
    assert _findings(pair) == [
        (
            "software.driver.version",
            "vllm-ascend v0.13.0 needs HDK driver 25.5.0 or newer; driver is 25.3.rc1",
            "upgrade the driver and firmware to HDK 25.5.0 or newer" + ACCEPT,
            "compat",
            [],
        )
    ]
    pair["software"]["allow_unsupported"] = True
    assert _findings(pair) == [
        (
            "software.driver.version",
            "vllm-ascend v0.13.0 needs HDK driver 25.5.0 or newer; driver is 25.3.rc1 "
            "(allowed by software.allow_unsupported)",
            "upgrade the driver and firmware to HDK 25.5.0 or newer",
            "compat",
            [],
        )
    ]


def test_driver_above_the_vllm_ascend_minimum_is_accepted(pair: dict[str, Any]) -> None:
    _hdk(pair, "25.5.1", "7.8.0.6.201", "v0.13.0")
    assert _findings(pair) == []
