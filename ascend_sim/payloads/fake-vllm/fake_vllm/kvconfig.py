"""``--kv-transfer-config`` of a prefill/decode (PD) disaggregated instance: parsing and start-up checks.

What the real stack checks at start-up, with the real messages:

* vLLM's ``KVTransferConfig.__post_init__`` (vllm/config/kv_transfer.py@v0.23.0): ``kv_role`` must be one of
  kv_producer / kv_both / kv_consumer, a ``kv_connector`` needs a ``kv_role``; ``engine_id`` defaults to a
  uuid4; ``kv_load_failure_policy`` is "fail" (default) or "recompute".
* vllm-ascend's ``MooncakeConnectorWorker.__init__`` / ``_get_prefill_decode_size``
  (vllm_ascend/distributed/kv_transfer/kv_p2p/mooncake_connector.py@v0.23.0): ``kv_connector_extra_config``
  must carry ``prefill.tp_size``, ``prefill.dp_size``, ``decode.tp_size``, ``decode.dp_size`` (bare
  ``assert``: AssertionError without a message), ``decode.pp_size`` must be 1, and a prefill TP smaller than
  the decode TP raises ``ValueError: prefill_tp_size: P must be greater than or equal to the decode_tp_size:
  D``. ``MooncakeLayerwiseConnector`` (mooncake_layerwise_connector.py@v0.23.0) has none of these checks.

Ports and ids (same sources): the handshake base port of DP rank r is ``kv_port + r * tp * pp * pcp``
(``side_channel_port``; pcp = 1 here) and each worker listens on base + device index
(``(pp_rank * pcp + pcp_rank) * tp + tp_rank``). With data parallelism vLLM appends ``_dp<local rank>`` to the
engine id (vllm/v1/engine/core.py@v0.23.0 ``run_engine_core``): the local rank is 0 for every external-DP
API server (``--data-parallel-rank``), so P and D instances must not share an explicit ``engine_id``.
"""

from __future__ import annotations

import math
import uuid
from dataclasses import dataclass
from typing import Any

ROLES = ("kv_producer", "kv_both", "kv_consumer")  # typing.get_args(KVRole) at vLLM v0.23.0
MOONCAKE_V1 = "MooncakeConnectorV1"
LAYERWISE = "MooncakeLayerwiseConnector"
CONNECTOR_FILE = "vllm-ascend/vllm_ascend/distributed/kv_transfer/kv_p2p/mooncake_connector.py"
CONFIG_FILE = "vllm/vllm/config/kv_transfer.py"


class KVConfigError(Exception):
    """A start-up failure: ``exc_type: message`` raised from ``where`` (a file under /vllm-workspace)."""

    def __init__(self, exc_type: str, message: str, where: str) -> None:
        super().__init__(message)
        self.exc_type, self.message, self.where = exc_type, message, where


@dataclass(frozen=True)
class KVConfig:
    connector: str
    role: str
    kv_port: int
    engine_id: str
    load_failure_policy: str
    prefill_tp: int | None = None
    prefill_dp: int | None = None
    decode_tp: int | None = None
    decode_dp: int | None = None

    @property
    def producer(self) -> bool:
        """Workers of a "kv_producer" listen (KVCacheSendingThread); every other role pulls
        (KVCacheRecvingThread): ``MooncakeConnectorWorker.register_kv_caches``."""
        return self.role == "kv_producer"

    @property
    def pulls(self) -> bool:
        """The P-first pull protocol of MooncakeConnectorV1 (the layerwise connector pushes, D-first)."""
        return self.connector == MOONCAKE_V1

    def side_channel_port(self, dp_rank: int, tp: int, pp: int) -> int:
        return self.kv_port + dp_rank * tp * pp

    def engine_id_of(self, dp_size: int, dp_rank: int, local_dp_rank: int) -> str:
        data_parallel = dp_size > 1 or dp_rank > 0
        return f"{self.engine_id}_dp{local_dp_rank}" if data_parallel else self.engine_id


def _int(value: Any, name: str) -> int:
    try:
        number = float(value)
        if isinstance(value, bool) or not math.isfinite(number) or number != int(number):
            raise ValueError
        return int(number)
    except (TypeError, ValueError):
        raise KVConfigError(
            "pydantic_core._pydantic_core.ValidationError",
            f"1 validation error for KVTransferConfig\n{name}\n  Input should be a valid integer "
            f"[type=int_parsing, input_value={value!r}, input_type={type(value).__name__}]",
            CONFIG_FILE,
        ) from None


def _sizes(extra: dict[str, Any]) -> tuple[int, int, int, int]:
    """``_get_prefill_decode_size``: the four asserted sizes (bare AssertionError when one is missing)."""
    prefill, decode = extra.get("prefill", {}), extra.get("decode", {})
    for part in (prefill, decode):
        for key in ("tp_size", "dp_size"):
            if not isinstance(part, dict) or key not in part:
                raise KVConfigError("AssertionError", "", CONNECTOR_FILE)
    if decode.get("pp_size", 1) != 1:
        raise KVConfigError("AssertionError", "decode pp size must be 1", CONNECTOR_FILE)
    return prefill["tp_size"], prefill["dp_size"], decode["tp_size"], decode["dp_size"]


def parse(raw: Any) -> KVConfig | None:
    """The instance's KV config from the parsed ``--kv-transfer-config`` JSON (None: not a PD instance)."""
    if not isinstance(raw, dict) or not raw.get("kv_connector"):
        return None
    role = raw.get("kv_role")
    if role is not None and role not in ROLES:
        message = f"Unsupported kv_role: {role}. Supported roles are {ROLES}"
        raise KVConfigError("ValueError", message, CONFIG_FILE)
    if role is None:
        raise KVConfigError(
            "ValueError",
            f"Please specify kv_role when kv_connector is set, supported roles are {ROLES}",
            CONFIG_FILE,
        )
    policy = raw.get("kv_load_failure_policy", "fail")
    if policy not in ("recompute", "fail"):
        raise KVConfigError(
            "pydantic_core._pydantic_core.ValidationError",
            "1 validation error for KVTransferConfig\nkv_load_failure_policy\n  Input should be 'recompute' "
            f"or 'fail' [type=literal_error, input_value={policy!r}, input_type={type(policy).__name__}]",
            CONFIG_FILE,
        )
    connector = str(raw["kv_connector"])
    cfg = KVConfig(
        connector=connector,
        role=str(role),
        kv_port=_int(raw.get("kv_port", 14579), "kv_port"),
        engine_id=str(raw["engine_id"]) if raw.get("engine_id") is not None else str(uuid.uuid4()),
        load_failure_policy=str(policy),
    )
    if connector != MOONCAKE_V1:
        return cfg
    extra = raw.get("kv_connector_extra_config") or {}
    p_tp, p_dp, d_tp, d_dp = _sizes(extra if isinstance(extra, dict) else {})
    p_tp, d_tp = _int(p_tp, "prefill.tp_size"), _int(d_tp, "decode.tp_size")
    if p_tp < d_tp:  # MooncakeConnectorWorker.__init__
        raise KVConfigError(
            "ValueError",
            f"prefill_tp_size: {p_tp} must be greater than or equal to the decode_tp_size: {d_tp}",
            CONNECTOR_FILE,
        )
    return KVConfig(
        connector=connector,
        role=cfg.role,
        kv_port=cfg.kv_port,
        engine_id=cfg.engine_id,
        load_failure_policy=cfg.load_failure_policy,
        prefill_tp=p_tp,
        prefill_dp=_int(p_dp, "prefill.dp_size"),
        decode_tp=d_tp,
        decode_dp=_int(d_dp, "decode.dp_size"),
    )
