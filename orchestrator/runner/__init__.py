"""Running the phase playbooks through ansible-runner: one job per phase in a fresh private data dir,
events -> per-host per-phase results and progress, cancellation, the run record."""
