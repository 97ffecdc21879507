"""Operator workflows: multi-step work over knowledge/ and runai/ that both faces run (resubmit,
sweep, watch with its lock, report, bundle, burn-in). Together with the faces, the only code that
awaits a client."""
