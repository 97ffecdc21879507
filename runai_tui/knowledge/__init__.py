"""The operator's knowledge: what a profile will do (checks, plan), what the trainer prints
(trainer_facts, progress) and what a running or failed job says about itself (diagnose,
preflight). Pure functions over profiles, records and log lines; no UI."""

MAX_CONCURRENT_PODS = 8  # per-pod commands (`runai logs`, `runai exec`) at once for one job
