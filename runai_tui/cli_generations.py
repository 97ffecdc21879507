"""The generations of the `runai` CLI, by name: a leaf module (it imports nothing) that both the
profile field table (runai_tui/profiles/, which records which generations know each field's flag)
and the `runai` plumbing (runai_tui/runai/generations.py, which tells the installed one) import.

Flag names changed between generations: docs/runai-cli.md §1.4 and §7.
"""

from __future__ import annotations

V1 = "v1"
V2_EARLY = "v2-early"  # CLI v2 up to about 2.20 ([D20])
V2_LATE = "v2.2x"  # CLI v2 2.21 and later: 2.2x, 2.25, v3.0 ([D25], [D30], [ISAAC] 2.23)
GENERATIONS = (V1, V2_EARLY, V2_LATE)
LABELS = {V1: "CLI v1", V2_EARLY: "CLI v2 ≤ 2.20", V2_LATE: "CLI v2 ≥ 2.21"}
ALL = frozenset(GENERATIONS)
V2 = frozenset({V2_EARLY, V2_LATE})
V2_LATE_ONLY = frozenset({V2_LATE})
