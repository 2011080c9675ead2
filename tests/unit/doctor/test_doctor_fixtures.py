"""Saved public logs (tests/data/doctor/f*.log, each naming its source on its first line) are diagnosed as
the research notes say they should be: the cause is the earliest distinctive line, not the last one."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.doctor.lines import first_code, strip_prefix
from orchestrator.doctor.logscan import read_log, scan_file, scan_lines
from tests.helpers import ROOT

DATA = ROOT / "tests/data/doctor"

# fixture -> (expected rule, the misleading line the diagnosis must NOT be taken from); the expected rule
# and the misleading line are the research notes' (section 3: F1-F7), read from the public reports
EXPECTED = {
    "f1-ray-visible-devices.log": ("visible-device-invalid-107001", "DistStoreError: Timed out"),
    "f2-hccl-buffsize.log": ("hccl-buffsize-too-small", "error code is 561002"),
    "f3-platform-info.log": ("cann-platform-init-failed", "OpCompileProcessor init failed!"),
    "f3b-platform-info-engine-prefix.log": ("cann-platform-init-failed", "GELib::InnerInitialize failed"),
    "f4-capture-stream-207005.log": ("aclgraph-stream-exhausted", "Failed to apply for memory"),
    "f4b-sqcq-shared-npu.log": ("npu-shared-sqcq-exhausted", "Setup stream failed"),
    "f5-get-socket-timeout.log": ("hccl-get-socket-timeout", "HcclAllocComResourceByTiling"),
    "f5b-get-socket-timeout-named.log": ("hccl-get-socket-timeout", "NnopbaseRunWithWorkspace"),
    "f6-vector-core-507035.log": ("aicore-vector-exception", "rtDeviceSynchronizeWithTimeout"),
    "f7-hccl-port-bound.log": ("hccl-port-in-use", "HcclGetRootInfo(&hcclID), error code is 11"),
    # the two logs the doctor used to name a WRONG cause for (see the tests below)
    "f8-ej0002-port-down.log": ("npu-nic-port-down", "and specific port[16666] fail"),
    "f9-device-order-207004.log": ("visible-devices-not-ascending", "The device is unavailable."),
}


def test_every_fixture_is_in_the_table_and_names_its_source() -> None:
    assert sorted(p.name for p in DATA.glob("f*.log")) == sorted(EXPECTED)
    for name in EXPECTED:
        first = (DATA / name).read_text(encoding="utf-8").splitlines()[0]
        assert first.startswith("# source: https://github.com/"), name


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_public_log_is_diagnosed_by_its_earliest_distinctive_line(name: str) -> None:
    rule_id, misleading = EXPECTED[name]
    lines = read_log(DATA / name)
    scan = scan_file(DATA / name)
    assert scan.match is not None, name
    assert scan.match.rule.id == rule_id
    assert scan.match.line == lines[scan.match.line_no - 1].rstrip()
    assert misleading not in scan.match.line
    assert any(misleading in line for line in lines)  # the misleading line is really there
    assert scan.first_code is not None


def test_hccl_buffsize_reads_the_needed_and_set_sizes_from_the_line() -> None:
    scan = scan_file(DATA / "f2-hccl-buffsize.log")
    assert scan.match is not None
    assert scan.match.details == {"needed": "609", "set": "200"}
    assert scan.match.hint is not None and "HCCL_BUFFSIZE=609" in scan.match.hint


def test_first_code_skips_generic_wrappers_and_is_reported_with_its_line() -> None:
    scan = scan_file(DATA / "f7-hccl-port-bound.log")
    assert scan.first_code is not None
    assert (scan.first_code.code.code, scan.first_code.code.kind, scan.first_code.line_no) == (
        "11",
        "hccl",
        2,
    )
    assert [c.code.code for c in scan.codes] == ["11", "EJ0003"]  # ERR02200 (a wrapper) is not listed
    f4b = scan_file(DATA / "f4b-sqcq-shared-npu.log")
    assert f4b.first_code is not None and f4b.first_code.code.code == "drvRetCode=14"


def _lines(name: str) -> list[str]:
    return read_log(DATA / name)[1:]  # without the "# source:" header


def test_two_causes_report_the_earlier_one() -> None:
    port, buff = _lines("f7-hccl-port-bound.log"), _lines("f2-hccl-buffsize.log")
    first = scan_lines([*port, *buff])
    second = scan_lines([*buff, *port])
    assert first.match is not None and first.match.rule.id == "hccl-port-in-use"
    assert second.match is not None and second.match.rule.id == "hccl-buffsize-too-small"


def test_a_generic_rule_loses_to_a_later_specific_one() -> None:
    # a vector-core fault (507035: a symptom several causes share) comes first, the 107001 visible-devices
    # error later; the specific one is the diagnosis (research notes 0.1, step 3)
    lines = _lines("f6-vector-core-507035.log") + _lines("f1-ray-visible-devices.log")
    scan = scan_lines(lines)
    assert scan.match is not None and scan.match.rule.id == "visible-device-invalid-107001"
    alone = scan_lines(_lines("f6-vector-core-507035.log"))
    assert alone.match is not None and alone.match.rule.id == "aicore-vector-exception"


def test_mte_out_of_range_is_the_hccl_buffer_only_next_to_a_moe_dispatch_op() -> None:
    # vllm-ascend#8818 (the line) and PR #5287 (the MoE dispatch op), research R22: the MTE error means
    # HCCL_BUFFSIZE only in the block of a MoE dispatch/combine op; otherwise it is a generic AICore fault
    mte = (
        "The extend info: errcode:(0x800000, 0, 0) errorStr: The DDR address of the MTE instruction is out "
        "of range."
    )
    moe = _lines("f2-hccl-buffsize.log")[0]
    with_moe = scan_lines([moe, mte])
    alone = scan_lines([mte])
    assert with_moe.match is not None and with_moe.match.rule.id == "hccl-buffsize-too-small"
    assert alone.match is not None and alone.match.rule.id == "aicore-vector-exception"


def test_source_header_is_ignored_only_at_the_top() -> None:
    line = "# source: libascend_hal.so: cannot open shared object file: No such file or directory"
    assert scan_lines([line]).match is None
    later = scan_lines(["INFO 12-05 01:00:00 [__init__.py:39] starting", line])
    assert later.match is not None and later.match.rule.id == "driver-lib64-not-mounted"


def test_clean_and_generic_only_logs_have_no_known_cause() -> None:
    head, tail = _generic("head"), _generic("tail")
    clean = scan_lines([*head, *_generic("serving")])
    assert clean.match is None and clean.first_code is None
    failed = scan_lines([*head, *tail])  # ERR99999 and "See root cause above" alone name no cause
    assert failed.match is None and failed.first_code is None


def _generic(part: str) -> list[str]:
    return (DATA / "generic" / f"{part}.log").read_text(encoding="utf-8").splitlines()


@pytest.mark.parametrize(
    ("line", "stripped"),
    [
        ("(Worker_TP3 pid=812) ERROR 11-07 06:32:37 [multiproc_executor.py:671] EI0006: x", "EI0006: x"),
        ("(EngineCore_DP0 pid=17833) EZ9999: Inner Error!", "EZ9999: Inner Error!"),
        ("[rank1]:         TraceBack (most recent call last):", "TraceBack (most recent call last):"),
        ("(RayWorkerWrapper pid=118835, ip=10.0.0.2) ERROR 02-26 09:45:37 worker_base.py:572]  x", "x"),
        ("2025-12-05T01:00:00.123456789Z (APIServer pid=1) INFO 12-05 01:00:00 [a.py:1] y", "y"),
        ("\x1b[1;31mERROR\x1b[0m 12-05 01:00:00 [a.py:1] z", "z"),
        (
            "(Worker_DP1_TP14_EP30 pid=2493) ERROR 2026-04-25 10:01:17.340 [mooncake_connector.py:246] w",
            "w",
        ),
    ],
)
def test_per_line_prefixes_are_stripped(line: str, stripped: str) -> None:
    assert strip_prefix(line) == stripped


def test_codes_of_each_kind() -> None:
    cases = {
        "Communication_Error_Get_Socket(EI0006): Getting socket times out.": ("EI0006", "cann"),
        "[ERROR] 2024-06-20-10:41:32 (PID:59450, Device:-1, RankID:-1) ERR00008 PTA resource not found": (
            "ERR00008",
            "pta",
        ),
        "open device 1 failed, runtime result = 107001.": ("107001", "acl"),
        "dcmi module initialize failed. ret is -8005": ("-8005", "dcmi"),
        "halSqCqAllocate failed: device_id=3, drvRetCode=14!": ("drvRetCode=14", "driver"),
    }
    for text, (code, kind) in cases.items():
        found = first_code(text)
        assert found is not None and (found.code, found.kind) == (code, kind), text


def test_unreadable_bytes_do_not_stop_the_scan(tmp_path: Path) -> None:
    log = tmp_path / "r1.log"
    log.write_bytes(
        b"\xff\xfe garbage\nlibatb.so: cannot open shared object file: No such file or directory\n"
    )
    scan = scan_file(log)
    assert scan.match is not None and scan.match.rule.id == "nnal-atb-missing" and scan.match.line_no == 2


def test_values_read_from_the_matched_block() -> None:
    """The hints quote what the public lines say (vllm-ascend#692: the SoC; #19: the NPU's HBM)."""
    platform = scan_file(DATA / "f3-platform-info.log")
    assert platform.match is not None and platform.match.details == {"soc": "Ascend910B2"}
    oom = scan_lines(
        [
            "RuntimeError: NPU out of memory. Tried to allocate 22.00 MiB (NPU 6; 60.97 GiB total capacity; "
            "10.24 GiB already allocated; 10.24 GiB current active; 19.79 MiB free; 10.65 GiB reserved in "
            "total by PyTorch)"
        ]
    )
    assert oom.match is not None
    assert oom.match.details == {"npu": "6", "total": "60.97", "allocated": "10.24", "free": "19.79 MiB"}


def test_ej0002_port_down_is_not_called_port_in_use() -> None:
    """vllm-ascend#1815: EJ0002 "The network port is down", then HCCP's RDMA init failures, then HCCL's
    "listen on ip[..] and specific port[16666] fail ... whether the port is being used by other process".
    The NIC never came up; the listen line is a consequence, and "port in use" is a wrong cause."""
    scan = scan_file(DATA / "f8-ej0002-port-down.log")
    assert scan.match is not None
    assert scan.match.rule.id != "hccl-port-in-use"
    assert scan.match.rule.id == "npu-nic-port-down"
    assert scan.match.details == {"device": "0", "ip": "192.168.20.148"}
    assert scan.first_code is not None and scan.first_code.code.code == "EJ0002"
    # the plog alone (without the EJ0002 line) is not a port conflict either
    plog = [line for line in _lines("f8-ej0002-port-down.log") if "EJ0002" not in line]
    alone = scan_lines(plog)
    assert alone.match is not None and alone.match.rule.id == "npu-nic-port-down"


def test_listen_failure_without_a_nic_failure_is_still_a_port_conflict() -> None:
    # vllm-ascend#4725 (prefill and decode on one host both listen on 16666): the same listen line, and no
    # NIC error beside it
    line = (
        "[ERROR] HCCL(60570,):2025-12-04-14:46:07.911.312 [hccl_socket.cc:106] [60570][HcclSocket][Listen] "
        "socket type[0], listen on ip[192.2.2.195] and specific port[16666] fail. Please check the port "
        "status and whether the port is being used by other process."
    )
    scan = scan_lines([line])
    assert scan.match is not None and scan.match.rule.id == "hccl-port-in-use"


def test_device_order_is_not_called_a_ray_device_count_problem() -> None:
    """gpustack#2527: aclrtGetDeviceCount fails with 207004 under the mp executor (no Ray) because
    ASCEND_RT_VISIBLE_DEVICES=0,2,4,6,1,3,5,7 is not ascending (EE1001 two lines later)."""
    scan = scan_file(DATA / "f9-device-order-207004.log")
    assert scan.match is not None
    assert scan.match.rule.id != "ray-device-count-207004"
    assert scan.match.rule.id == "visible-devices-not-ascending"
    assert scan.match.details == {"devices": "0,2,4,6,1,3,5,7"}
    assert "207004" in scan.match.line  # named from the earliest line, with the EE1001 line beside it


def test_207004_alone_is_no_known_cause_with_its_code_and_lines() -> None:
    """Without Ray or the EE1001 ordering line, 207004 names no cause: the doctor reports no known cause,
    the first error code and the lines that matter, rather than guessing Ray."""
    lines = [line for line in _lines("f9-device-order-207004.log") if "EE1001" not in line]
    scan = scan_lines(lines)
    assert scan.match is None
    assert scan.first_code is not None and scan.first_code.code.code == "207004"
    assert any("error code is 207004" in k.line for k in scan.key_lines)
    with_ray = scan_lines([*lines, "INFO 06-26 08:18:55 [ray_distributed_executor.py:128] Shutting down Ray"])
    assert with_ray.match is not None and with_ray.match.rule.id == "ray-device-count-207004"


def test_key_lines_skip_traceback_frames_and_generic_wrappers() -> None:
    lines = [
        'File "/vllm-workspace/vllm/vllm/v1/engine/core.py", line 709, in run_engine_core',
        "raise ValueError(",
        "[ERROR] 2025-07-17-08:06:53 (PID:112081, Device:-1, RankID:-1) ERR00100 PTA call acl api failed",
        "Check NnopbaseExecutorDoTiling(executor) failed",
        "Check NnopbaseExecutorDoTiling(executor) failed",
        "INFO 12-05 01:00:00 [core.py:1] all fine",
    ]
    scan = scan_lines(lines)
    assert [(k.line_no, k.line) for k in scan.key_lines] == [(4, lines[3])]
