"""Fake Ascend host tools (npu-smi, hccn_tool, upgrade-tool, lspci, .run installer): standalone scripts."""
