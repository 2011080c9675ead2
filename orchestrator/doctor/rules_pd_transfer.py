"""Rules: prefill/decode disaggregation with the Mooncake connector - the KV transfer itself (the transfer
engine's start, the decode worker's connection to and reads from the prefill worker, KV the decode side
never pulled).

A bare "Mooncake transfer failed, ret: -1" is not a cause: it follows whatever Mooncake printed just before
it, so no rule matches it and the doctor reports the earlier line (or no known cause)."""

from __future__ import annotations

from orchestrator.doctor.rule import Preflight, Rule, p
from orchestrator.doctor.rules_pd import CONNECTOR, HYBRID, PIN, TRANSFER_ENGINE, TUTORIAL
from orchestrator.doctor.sources import mooncake_at, va, va_at

ASCEND_DIRECT = mooncake_at(
    "030e8580160a710f8e4958833199fbff3cff08e8",
    "mooncake-transfer-engine/src/transport/ascend_transport/ascend_direct_transport/ascend_direct_transport.cpp",
)
KV_UTILS = va_at(PIN, "vllm_ascend/distributed/kv_transfer/utils/utils.py")
DSV4_PRO = va_at(PIN, "docs/source/tutorials/models/DeepSeek-V4-Pro.md")
DSV32 = va_at(PIN, "docs/source/tutorials/models/DeepSeek-V3.2.md")
MOONCAKE_DOC_PR = "https://github.com/kvcache-ai/Mooncake/pull/1534"

PD_TRANSFER_RULES = (
    Rule(
        id="pd-ascend-direct-connect-timeout",
        area="PD disaggregation",
        title="the decode worker's Mooncake transport timed out connecting to the prefill worker",
        patterns=p(r"Connect timeout to: \S+, you can increase the timeout duration"),
        codes=(),
        cause="before it reads a request's KV, the decode worker's Mooncake AscendDirectTransport connects "
        "to the prefill worker's ADXL engine (ip:port in the line) and gives up after ASCEND_CONNECT_TIMEOUT "
        "ms (Mooncake's default 3000); that request's transfer then fails ('Transfer slice failed', "
        "'Mooncake transfer failed for request'), which is the line usually quoted.",
        fix="export ASCEND_CONNECT_TIMEOUT=10000 and ASCEND_TRANSFER_TIMEOUT=10000 on the prefill and decode "
        "instances, as the DeepSeek-V4-Pro PD tutorial does; if it still times out, check that the address "
        "in the line is a prefill worker reachable over the NPU network (hccn_tool -i <dev> -ping -g "
        "address <ip>).",
        preflight=Preflight.partly,
        sources=(*va(7401), ASCEND_DIRECT, DSV4_PRO, MOONCAKE_DOC_PR),
        example="E20260608 14:45:44.404089 342420 ascend_direct_transport.cpp:1107] Connect timeout to: "
        "10.2:20033, you can increase the timeout duration to reduce the ASCEND_CONNECT_TIMEOUT environment "
        "variable.",
        detail=r"Connect timeout to: (?P<target>[^,\s]+)",
        hint="decode could not connect to {target} (a prefill worker's transport) within "
        "ASCEND_CONNECT_TIMEOUT",
        inferred="vllm-ascend 7401 is open; raising the timeout is what the line itself advises and the "
        "tutorial sets, the network check is not confirmed by the thread.",
    ),
    Rule(
        id="pd-ascend-direct-transfer-timeout",
        area="PD disaggregation",
        title="a KV read from the prefill worker did not finish within ASCEND_TRANSFER_TIMEOUT",
        patterns=p(r"Transfer timeout to: \S+, you can increase the timeout duration"),
        codes=(),
        cause="Mooncake's AscendDirectTransport gives a KV read ASCEND_TRANSFER_TIMEOUT ms; when it is unset "
        "vllm-ascend sets it from HCCL_RDMA_TIMEOUT and HCCL_RDMA_RETRY_CNT (4.096 x 2^20 x 7 / 1000 + 3000, "
        "about 33 s, with the defaults). Large prompts over a slow or congested link, or a prefill NPU that "
        "stopped answering, exceed it; the transfer is failed and the connection dropped.",
        fix="raise ASCEND_TRANSFER_TIMEOUT (ms) on the decode instances, or HCCL_RDMA_TIMEOUT from which "
        "vllm-ascend derives it, and check the NPU NIC links between prefill and decode servers.",
        preflight=Preflight.partly,
        sources=(ASCEND_DIRECT, KV_UTILS, CONNECTOR, DSV4_PRO, MOONCAKE_DOC_PR),
        example_from_code=True,
        example="Transfer timeout to: <prefill_ip>:<adxl_port>, you can increase the timeout duration to "
        "reduce the failure rate by configuring the ASCEND_TRANSFER_TIMEOUT environment variable.",
        detail=r"Transfer timeout to: (?P<target>[^,\s]+)",
        hint="reading KV from {target} exceeded ASCEND_TRANSFER_TIMEOUT",
        inferred="the causes besides the timeout value are not confirmed by a source.",
        related=("pd-ascend-direct-connect-timeout",),
    ),
    Rule(
        id="pd-transfer-engine-init-failed",
        area="PD disaggregation",
        title="Mooncake's transfer engine did not start or could not register the KV cache",
        patterns=p(
            r"TransferEngine initialization failed with ret_value: -?\d+",
            r"Failed to initialize AdxlEngine, status: \d+",
            r"AscendDirectTransport: InitAdxlEngine failed",
            r"Mooncake memory registration failed",
        ),
        codes=(),
        cause="the Mooncake connector starts TransferEngine(hostname, 'P2PHANDSHAKE', 'ascend', device) "
        "in every worker and registers the KV cache with it; a failure is reported with a return value only, "
        "and the reason is in Mooncake's own lines just above (glog lines starting 'E<date>'): a Mooncake "
        "without the Ascend transport, no free port in the device's range, or CANN's ADXL failing to start.",
        fix="read Mooncake's 'E...' lines above this one; install the Mooncake the PD tutorial names (built "
        "with USE_ASCEND_DIRECT, or the official image), use the CANN version it requires, and mount "
        "/etc/hccn.conf into the container.",
        preflight=Preflight.partly,
        sources=(TRANSFER_ENGINE, ASCEND_DIRECT, TUTORIAL),
        example_from_code=True,
        example="RuntimeError: TransferEngine initialization failed with ret_value: -1",
        inferred="the causes are read from the code paths that return the error, not from a report.",
        generic=True,
        related=("pd-mooncake-built-without-ascend", "pd-mooncake-not-installed"),
    ),
    Rule(
        id="pd-kv-never-pulled",
        area="PD disaggregation",
        title="the prefill instance freed KV that no decode instance pulled in time",
        patterns=p(r"Force freed (?:expired )?request: \S+"),
        codes=(),
        cause="a prefill instance keeps a finished request's KV blocks until a decode worker has read them "
        "and acknowledged; after VLLM_MOONCAKE_ABORT_REQUEST_TIMEOUT seconds (older releases: "
        "VLLM_NIXL_ABORT_REQUEST_TIMEOUT) it frees them. The decode side never read them: it failed (its own "
        "log has the cause), the proxy did not forward the prefill's kv_transfer_params to it, or it was too "
        "busy to start the request in time.",
        fix="diagnose the decode instances' logs (orchestrator doctor --log on each); check that the proxy "
        "sends every prefilled request on to a decode instance; on a saturated decode pool raise "
        "VLLM_MOONCAKE_ABORT_REQUEST_TIMEOUT (the tutorials use 480) or add decode capacity.",
        preflight=Preflight.no,
        sources=(CONNECTOR, HYBRID, *va(7140), DSV32),
        example_from_code=True,
        example="Force freed expired request: <request_id>. Reason: Request exceeded timeout threshold "
        "(480 seconds). Action: Resources have been forcibly released to prevent memory leak.",
        detail=r"timeout threshold \((?P<timeout>[\d.]+) seconds\)",
        hint="KV waited {timeout} s for a decode instance",
        inferred="the three reasons are read from the code, not from a report (vllm-ascend 7140 quotes the "
        "older 'Force freed request: %s' and its NIXL timeout).",
        generic=True,
    ),
)
