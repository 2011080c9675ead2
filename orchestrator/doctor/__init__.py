"""`orchestrator doctor`: known causes of vLLM-Ascend serving failures, each with its fix.

rules.py holds the rule set (data, with the public reports each rule was built from), logscan.py finds the
earliest distinctive line of a saved log, report.py prints the diagnosis, troubleshooting.py writes
docs/troubleshooting.md from the rules.
"""
