"""Image, rollout, monitoring and drift rules as whole findings; the drift schedule against cron's field
ranges (crontab(5): minute 0-59, hour 0-23, day of month 1-31, month 1-12, day of week 0-7)."""

from __future__ import annotations

from typing import Any

import pytest

from orchestrator.spec.drift_schedule import cron_problem
from tests.helpers import validate_data
from tests.spec_text import Described, described


def _findings(data: dict[str, Any]) -> list[Described]:
    return [described(f) for f in validate_data(data).findings]


def _bad_field(text: str, name: str, low: int, high: int) -> str:
    return f"cron field '{text}' ({name}) is not valid: use *, N, N-M, lists and /STEP in {low}-{high}"


@pytest.mark.parametrize(
    "schedule",
    [
        "59 23 31 12 7",  # every upper bound
        "0 0 1 1 0",  # every lower bound
        "*/15 2-5 1,15 * 0",
        "*/1 * * * *",
        "1-1 * * * *",  # a range of one value
        "0-59/5 * * * *",
    ],
)
def test_valid_cron_expressions(schedule: str) -> None:
    assert cron_problem(schedule) is None


@pytest.mark.parametrize(
    ("schedule", "problem"),
    [
        ("0 */6 * *", "a cron expression has 5 fields (minute hour day month weekday); '0 */6 * *' has 4"),
        ("60 * * * *", _bad_field("60", "minute", 0, 59)),
        ("* 24 * * *", _bad_field("24", "hour", 0, 23)),
        ("* * 0 * *", _bad_field("0", "day of month", 1, 31)),
        ("* * 32 * *", _bad_field("32", "day of month", 1, 31)),
        ("* * * 0 *", _bad_field("0", "month", 1, 12)),
        ("* * * 13 *", _bad_field("13", "month", 1, 12)),
        ("* * * * 8", _bad_field("8", "day of week", 0, 7)),
        ("*/0 * * * *", _bad_field("*/0", "minute", 0, 59)),
        ("*/x * * * *", _bad_field("*/x", "minute", 0, 59)),
        ("5-1 * * * *", _bad_field("5-1", "minute", 0, 59)),
        ("1-x * * * *", _bad_field("1-x", "minute", 0, 59)),
        ("a * * * *", _bad_field("a", "minute", 0, 59)),
        ("1,60 * * * *", _bad_field("1,60", "minute", 0, 59)),
        ("1-60 * * * *", _bad_field("1-60", "minute", 0, 59)),
    ],
)
def test_invalid_cron_expressions(schedule: str, problem: str) -> None:
    assert cron_problem(schedule) == problem


def test_batch_size_as_number_and_percentage(single: dict[str, Any]) -> None:
    single["rollout"]["batch_size"] = 0
    assert _findings(single) == [
        ("rollout.batch_size", "batch_size must be at least 1", "write e.g. 1", "rollout", [])
    ]
    single["rollout"]["batch_size"] = "0%"
    assert _findings(single) == [
        (
            "rollout.batch_size",
            "batch_size '0%' is neither a number nor a percentage",
            "write e.g. 2 or '25%'",
            "rollout",
            [],
        )
    ]
    # the limits: 100%, a canary of every replica (2) and min_available one less than the replicas
    single["rollout"].update({"batch_size": "100%", "canary": 2, "min_available": 1})
    assert _findings(single) == []


def test_registry_password_needs_a_username(single: dict[str, Any]) -> None:
    single["image"] = {"registry": {"url": "r.example.com/ai", "password": "env:REG_PW"}}
    assert _findings(single) == [
        (
            "image.registry.username",
            "a registry password without a username",
            "set image.registry.username",
            "image",
            [],
        )
    ]


def test_without_a_build_server_the_first_npu_server_builds(single: dict[str, Any]) -> None:
    single["servers"][0]["roles"] = ["npu", "monitoring"]
    assert _findings(single) == [
        (
            "image.build_host",
            "no server has role 'build'; the image is built on the first NPU server",
            "add 'build' to the roles of the server that should build",
            "image",
            [],
        )
    ]
    # naming a build host replaces the warning; the host must then have the role
    single["image"] = {"build_host": "a2-01"}
    assert _findings(single) == [
        (
            "image.build_host",
            "server 'a2-01' does not have role 'build'",
            "add 'build' to servers[0].roles",
            "reference",
            [],
        )
    ]


def test_drift_outputs_need_their_target(single: dict[str, Any]) -> None:
    single["drift"] = {"outputs": [{"type": "file"}, {"type": "webhook"}]}
    assert _findings(single) == [
        ("drift.outputs[0].path", "a file output needs a path", "set path", "drift", []),
        (
            "drift.outputs[1].url",
            "a webhook output needs a url reference",
            "set url: env:DRIFT_WEBHOOK_URL",
            "drift",
            [],
        ),
    ]


def test_derived_build_arg_is_a_warning_when_unsupported_is_allowed(single: dict[str, Any]) -> None:
    single["software"]["allow_unsupported"] = True
    single["image"] = {"build_args": {"SOC_VERSION": "ascend910b4"}}
    assert _findings(single) == [
        (
            "image.build_args.SOC_VERSION",
            "build arg SOC_VERSION is derived from the chip and the compatibility matrix (overridden: "
            "allow_unsupported)",
            None,
            "image",
            [],
        )
    ]


@pytest.mark.parametrize("schedule", ["daily", "02:00", "6h", "0 3 * * 1"])
def test_drift_schedule_takes_the_words_of_every(single: dict[str, Any], schedule: str) -> None:
    """One vocabulary with `drift schedule --every` (before, 'daily' and '02:00' were refused here)."""
    single["drift"] = {"schedule": schedule}
    assert [f for f in _findings(single) if f[0] == "drift.schedule"] == []


def test_a_drift_schedule_outside_the_vocabulary_says_what_it_may_be(single: dict[str, Any]) -> None:
    single["drift"] = {"schedule": "every tuesday"}
    assert _findings(single) == [
        (
            "drift.schedule",
            "'every tuesday' is not a drift schedule",
            "use five cron fields (e.g. '0 */6 * * *'), hourly, daily, weekly, monthly (at a minute derived "
            "from the site name), a daily time such as 02:00, or a time span of 5 minutes or more (30min, "
            "6h, 1d)",
            "drift",
            [],
        )
    ]


MONITORING_FIX = (
    "set monitoring: {enabled: false} (and scrape the servers from a Prometheus of your own), or run "
    "Ubuntu 20.04 / 22.04 servers"
)


@pytest.mark.parametrize(
    ("distro", "version"), [("openeuler", "22.03"), ("openeuler", "24.03"), ("kylin", "v10")]
)
def test_monitoring_needs_a_debian_family_os(single: dict[str, Any], distro: str, version: str) -> None:
    """The monitoring roles install with apt from the Debian / Ubuntu archive (prometheus-node-exporter,
    prometheus, unzip) into /etc/default paths: on an RPM distribution they would fail on every server, so
    validation fails closed, at monitoring.enabled when the spec writes it, else at os.distro."""
    single["os"] = {"distro": distro, "version": version}
    single.pop("monitoring", None)
    what = (
        f"and the servers run {distro} {version}: the monitoring roles install node_exporter, Prometheus and "
        "npu-exporter's unzip with apt from the Debian / Ubuntu archive and configure their /etc/default "
        f"files, which {distro} does not have"
    )
    assert _findings(single) == [
        ("os.distro", f"monitoring is on (the default) {what}", MONITORING_FIX, "monitoring", [])
    ]
    single["monitoring"] = {"enabled": True}
    assert _findings(single) == [
        ("monitoring.enabled", f"monitoring is on {what}", MONITORING_FIX, "monitoring", [])
    ]
    single["monitoring"] = {"enabled": False}
    assert _findings(single) == []
