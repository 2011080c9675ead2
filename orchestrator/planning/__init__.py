"""The plan: pure functions from a checked spec to a SitePlan (replicas and their members, devices, serve
arguments, HCCN addresses, ports, tuning, images, phases). Reads the spec and the catalog; reports no
findings (the plan-level rules are orchestrator/validation/plan_checks/)."""
