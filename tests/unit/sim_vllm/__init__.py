"""Tests of the fake vLLM server, its image build context and the checkpoint generator."""
