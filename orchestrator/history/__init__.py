"""Run history (SQLite), the per-site lock, and recording a run in both.

- db.py: the database <project root>/.orchestrator/history.sqlite3 (one row per apply / plan / drift /
  rollback).
- lock.py: one lock per site (filelock) with a holder file naming the run that holds it.
- provenance.py: who ran what from where (user, host, spec sha256, project version, argv without secrets).
- record.py: `recorded_run(...)`, the context manager a command wraps its run with.
"""
