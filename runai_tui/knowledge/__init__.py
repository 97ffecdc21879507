"""The operator's knowledge, as pure functions of facts: what a profile will do (lint/, plan), what
the trainer prints (records/), what probes inside pods print (probes/), runs side by side
(compare), and what a running or failed job says about itself (diagnose/, with pending). No
client, no await, no UI: the passes that fetch the facts are workflows/ (gather, pod_probes,
diagnose_job, job_records, run_sources)."""
