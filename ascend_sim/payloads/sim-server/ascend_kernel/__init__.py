"""The simulated server's kernel interfaces (python3 standard library; fusepy only in fusefs.py).

A simulated server shares the controller's kernel, whose settings it must never change. This package is the
server's own copy of exactly the kernel interfaces the host roles touch: sysctls, transparent hugepages,
hugepages, cpufreq, scheduler debugfs, kernel modules, NPU interrupts. `fusefs.py` serves them as a FUSE
filesystem that ascend-sim-init mounts over /proc and the sysfs directories at each boot; the fake module
tools (modtools.py) and the boot sequence (boot.py) change the same state. docs/simulator.md has the contract.
"""
