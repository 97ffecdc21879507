"""runai-local: an embedded, runai-compatible cluster that runs PyTorch jobs on this machine.

Modules: cli (command line), flags (the runai flag tables and parser), jobspec (submit -> pods),
jobs (operations on workloads), supervisor (the detached per-job process), state (files and
processes), pvc (claims -> local directories), config (settings). See README.md here.
"""
