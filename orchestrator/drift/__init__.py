"""`orchestrator drift`: a check-mode run turned into a report (per host and phase), its exit code and its
outputs (table, JSON, JUnit XML, Prometheus textfile), and the systemd timer / cron line that schedules it."""
