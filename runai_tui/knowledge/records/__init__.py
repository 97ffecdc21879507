"""Readers of what the trainer prints: progress, per-rank figures, the wire check, recovery and
the steps trained again, stragglers, Flight Recorder dumps."""
