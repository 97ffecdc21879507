"""Widgets the screens share: log view, job table, training panel, status header."""
