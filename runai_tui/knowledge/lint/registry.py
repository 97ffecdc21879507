"""The lint registry: the rule modules, listed here and nowhere else, and `lint()` over all of
their rules. Adding a rule module: one import and one entry in RULE_MODULES.
"""

from __future__ import annotations

from collections.abc import Iterable

from runai_tui.knowledge.findings import Finding, worst_first
from runai_tui.knowledge.lint import checks, nccl_rules, recovery_rules
from runai_tui.knowledge.lint.checks import Rule, RuleBook, facts
from runai_tui.profiles import Profile

# In the order lint reports a rule module's findings of one severity.
RULE_MODULES = (checks, nccl_rules, recovery_rules)


def _join(books: Iterable[RuleBook]) -> dict[str, Rule]:
    joined: dict[str, Rule] = {}
    for book in books:
        for code, spec in book.rules.items():
            if code in joined:
                raise ValueError(f"rule {code} registered twice")
            joined[code] = spec
    return joined


RULES: dict[str, Rule] = _join(module.BOOK for module in RULE_MODULES)


def finding_line(profile: str, finding: Finding) -> str:
    """`PROFILE: severity: code: field: message (fix: ...)` (lint's text output)."""
    return (
        f"{profile}: {finding.severity}: {finding.code}: {finding.field}: {finding.message} "
        f"(fix: {finding.fix})"
    )


def lint(profile: Profile, step_time: float | None = None) -> list[Finding]:
    """Every finding for profile, errors first, then warnings, then infos (rule order within);
    `step_time`: seconds a step as a job measured it (the plan's), when known."""
    known = facts(profile, step_time)
    found: list[Finding] = []
    for spec in RULES.values():
        for hit in spec.check(known):
            found.append(
                Finding(
                    spec.code,
                    hit.severity or spec.severity,
                    hit.message,
                    hit.fix,
                    field=hit.field or spec.field,
                )
            )
    return worst_first(found)


def exit_code(findings: Iterable[Finding]) -> int:
    """0 when nothing is above info, 1 when any warning or error (as ruff and shellcheck do)."""
    return 1 if any(f.severity != "info" for f in findings) else 0


def blocking(findings: Iterable[Finding]) -> list[Finding]:
    """The findings `submit --strict` refuses on: warnings and errors."""
    return [f for f in findings if f.severity != "info"]
