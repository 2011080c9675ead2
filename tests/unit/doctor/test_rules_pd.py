"""The prefill/decode disaggregation rules (orchestrator/doctor/rules_pd*.py) on saved public logs
(tests/data/doctor/pd*.log) and on the lines that must NOT name them: vLLM's own ZMQ port conflicts, a bare
"Mooncake transfer failed, ret: -1", module paths that are not a removed connector."""

from __future__ import annotations

import pytest
import yaml

from orchestrator.doctor.logscan import read_log, scan_file, scan_lines
from orchestrator.doctor.rules import BY_ID
from orchestrator.doctor.rules_pd import PD_CONFIG_RULES
from orchestrator.doctor.rules_pd_transfer import PD_TRANSFER_RULES
from orchestrator.doctor.troubleshooting import troubleshooting_reference
from tests.helpers import ROOT

DATA = ROOT / "tests/data/doctor"

PD_IDS = {r.id for r in (*PD_CONFIG_RULES, *PD_TRANSFER_RULES)}

# vllm-ascend#8938 (the handshake port bind at startup), vllm-ascend#7401 (the decode side's connect timeout,
# followed by the transfer failure the thread's title quotes)
EXPECTED = {
    "pd1-kv-port-zmq-8938.log": ("pd-kv-port-in-transport-range", "zmq_ctx(zmq.ROUTER, path)"),
    "pd2-connect-timeout-7401.log": ("pd-ascend-direct-connect-timeout", "Mooncake transfer failed for"),
}


def test_every_pd_fixture_is_in_the_table_and_names_its_source() -> None:
    assert sorted(p.name for p in DATA.glob("pd*.log")) == sorted(EXPECTED)
    for name in EXPECTED:
        assert read_log(DATA / name)[0].startswith("# source: https://github.com/"), name


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_pd_log_is_named_by_its_earliest_distinctive_line(name: str) -> None:
    rule_id, misleading = EXPECTED[name]
    lines = read_log(DATA / name)
    scan = scan_file(DATA / name)
    assert scan.match is not None and scan.match.rule.id == rule_id
    assert misleading not in scan.match.line
    assert any(misleading in line for line in lines)


def test_kv_port_hint_reads_the_taken_port() -> None:
    scan = scan_file(DATA / "pd1-kv-port-zmq-8938.log")
    assert scan.match is not None
    assert scan.match.details == {"host": "33.215.119.7", "port": "20013"}
    assert scan.match.hint is not None and "20013" in scan.match.hint and "36000" in scan.match.hint


def test_connect_timeout_names_the_prefill_address() -> None:
    scan = scan_file(DATA / "pd2-connect-timeout-7401.log")
    assert scan.match is not None and scan.match.details == {"target": "10.2:20033"}


def test_vllm_own_zmq_port_conflict_is_not_a_kv_port_problem() -> None:
    # vllm#7196: vLLM's own RPC socket, no Mooncake connector anywhere near it
    line = "zmq.error.ZMQError: Address already in use (addr='tcp://127.0.0.1:5570')"
    alone = scan_lines([line])
    assert alone.match is None or alone.match.rule.id not in PD_IDS
    # the same exception in the Mooncake sending thread's traceback (vllm-ascend#8938's frames) is the
    # handshake port
    mooncake = scan_lines(
        [
            '  File "/usr/local/python3.11.14/lib/python3.11/site-packages/vllm_ascend/distributed/'
            'kv_transfer/kv_p2p/mooncake_connector.py", line 242, in run',
            "    with zmq_ctx(zmq.ROUTER, path) as sock:  # type: ignore",
            "zmq.error.ZMQError: Address already in use (addr='tcp://10.235.53.16:20012')",
        ]
    )
    assert mooncake.match is not None and mooncake.match.rule.id == "pd-kv-port-in-transport-range"
    assert mooncake.match.line_no == 3


def test_bare_mooncake_transfer_failure_names_no_cause() -> None:
    # vllm-ascend#7846: the connector's own failure line says only "ret: -1"
    lines = [
        "(Worker pid=783493) (Worker_DP0_TP3_EP3 pid=783493) ERROR 03-31 02:49:30 "
        "[mooncake_connector.py:441] Failed to transfer KV cache for request "
        "chatcmpl-ba310df4-f600-441c-a0b5-0cb772aaf8ed-8b8ee10a: "
        "Mooncake transfer failed, ret: -1",
        "(Worker pid=783493) (Worker_DP0_TP3_EP3 pid=783493) ERROR 03-31 02:49:30 "
        "[mooncake_connector.py:441] RuntimeError: Mooncake transfer failed, ret: -1",
    ]
    scan = scan_lines(lines)
    assert scan.match is None
    assert scan.key_lines  # what an operator reads instead of a guess


def test_tp_rule_reads_both_sizes() -> None:
    scan = scan_lines(
        ["ValueError: prefill_tp_size: 2 must be greater than or equal to the decode_tp_size: 4"]
    )
    assert scan.match is not None and scan.match.details == {"prefill_tp": "2", "decode_tp": "4"}
    assert scan.match.hint == "prefill tp_size 2 < decode tp_size 4 in kv_connector_extra_config"


def test_missing_extra_config_names_the_key() -> None:
    scan = scan_lines(['    assert "dp_size" in decode_parallel_config', "AssertionError"])
    assert scan.match is not None and scan.match.rule.id == "pd-extra-config-missing-sizes"
    assert scan.match.details == {"key": "dp_size", "pool": "decode"}


def test_unsupported_ascend_transport_is_named_before_the_generic_init_failure() -> None:
    unsupported = "Unsupported transport ascend, please rebuild Mooncake"
    init = "RuntimeError: TransferEngine initialization failed with ret_value: -1"
    both = scan_lines([unsupported, init])
    assert both.match is not None and both.match.rule.id == "pd-mooncake-built-without-ascend"
    alone = scan_lines([init])
    assert alone.match is not None and alone.match.rule.id == "pd-transfer-engine-init-failed"
    assert BY_ID["pd-transfer-engine-init-failed"].generic


def test_kv_freed_on_prefill_gives_way_to_the_decode_cause() -> None:
    freed = (
        "Force freed expired request: <request_id>. Reason: Request exceeded timeout threshold "
        "(480 seconds). Action: Resources have been forcibly released to prevent memory leak."
    )
    alone = scan_lines([freed])
    assert alone.match is not None and alone.match.rule.id == "pd-kv-never-pulled"
    assert alone.match.details == {"timeout": "480"}
    decode = read_log(DATA / "pd2-connect-timeout-7401.log")[1:]
    both = scan_lines([freed, *decode])  # prefill and decode logs diagnosed together
    assert both.match is not None and both.match.rule.id == "pd-ascend-direct-connect-timeout"


def test_missing_mooncake_is_named_at_the_original_import_error() -> None:
    lines = [
        "ModuleNotFoundError: No module named 'mooncake'",
        "The above exception was the direct cause of the following exception:",
        "ImportError: Please install mooncake by following the instructions at "
        "https://github.com/kvcache-ai/Mooncake/blob/main/doc/en/build.md "
        "to run vLLM with MooncakeConnector.",
    ]
    scan = scan_lines(lines)
    assert scan.match is not None and scan.match.rule.id == "pd-mooncake-not-installed"
    assert scan.match.line_no == 1


@pytest.mark.parametrize(
    "module",
    [
        "vllm_ascend.distributed.kv_transfer.kv_p2p.mooncake_connector",  # the current path (an old release)
        "vllm_ascend.distributed.device_communicators",  # not a KV connector
        "vllm_ascend.distributed.weight_transfer",
    ],
)
def test_other_missing_vllm_ascend_modules_are_not_a_removed_connector(module: str) -> None:
    scan = scan_lines([f"ModuleNotFoundError: No module named '{module}'"])
    assert scan.match is None or scan.match.rule.id != "pd-connector-removed-or-moved"


def test_old_module_path_is_named_with_the_module() -> None:
    scan = scan_lines(["ModuleNotFoundError: No module named 'vllm_ascend.distributed.mooncake_connector'"])
    assert scan.match is not None and scan.match.rule.id == "pd-connector-removed-or-moved"
    assert scan.match.details == {"module": "vllm_ascend.distributed.mooncake_connector"}


def test_pd_rules_are_checked_before_launch_where_the_spec_decides() -> None:
    """The configuration rules are what a PD spec's validation can refuse before launch."""
    for rule in PD_CONFIG_RULES:
        assert rule.preflight.value in {"yes", "partly"}, rule.id
        assert rule.area == "PD disaggregation"
    assert all(r.area == "PD disaggregation" for r in PD_TRANSFER_RULES)


def test_pd_examples_say_where_they_come_from() -> None:
    """A PD rule's example is a line a public thread quotes (an issue) unless the rule says it is the message
    a cited source file prints (example_from_code); the guide then says so instead of "verbatim from a public
    report"."""
    samples = yaml.safe_load((DATA / "verbatim-lines.yaml").read_text(encoding="utf-8"))["samples"]
    text = troubleshooting_reference()
    for rule in (*PD_CONFIG_RULES, *PD_TRANSFER_RULES):
        origins = [s["source"] for s in samples[rule.id] if any(rule.example in line for line in s["lines"])]
        assert origins, rule.id
        from_code = all("/blob/" in source for source in origins)
        assert rule.example_from_code == from_code, (rule.id, origins)
        section = text.split(f'<a id="{rule.id}"></a>')[1].split("<a id=")[0]
        assert ("verbatim from a public report" in section) != rule.example_from_code, rule.id
