"""ascend-sim-init's helpers: the SysV service manager of a simulated server."""
