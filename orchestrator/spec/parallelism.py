"""Parallelism of one vLLM engine: TP, PP, DP, EP."""

from __future__ import annotations

from pydantic import Field

from orchestrator.spec.common import SpecModel


class Parallelism(SpecModel):
    tp: int = Field(1, ge=1, le=1024, description="--tensor-parallel-size.")
    pp: int = Field(1, ge=1, le=256, description="--pipeline-parallel-size.")
    dp: int = Field(1, ge=1, le=65536, description="--data-parallel-size (engine ranks across the replica).")
    ep: bool = Field(False, description="--enable-expert-parallel (MoE only); EP size = tp x dp.")
