"""Plan-level rules: the findings about what the plan derives from the spec (replica layouts, NPU memory,
shared devices, ports, NPU-NIC addresses). Each rule reads the spec and, where it needs derived values,
the plan it is given; none of them builds a plan (orchestrator/pipeline.py runs the stages in order)."""
