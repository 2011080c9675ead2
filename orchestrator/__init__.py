"""Declarative pipeline: bare-metal Kunpeng + Ascend NPU servers to health-gated vLLM-Ascend serving."""

__version__ = "0.1.0"
