"""`orchestrator sim ...`: the simulator's commands, which the product's CLI imports only when they run
(orchestrator/cli/sim_hook.py)."""
