"""Lint: the checks an operator should see before pressing submit (`runai-tui lint`)."""
