"""What read-only probes print inside a running pod, and what it means: preflight, GPU health,
resources."""
