"""The site spec: the pydantic models of site.yaml, its loader (line numbers kept for every node), the
structural check and the finding type every later stage reports with. Imports nothing of the stages after
it (planning, validation, render, cli)."""
