"""The docs' tables of lint rules (docs/profiles.md) and diagnose codes (docs/health.md),
generated from their registries. Regenerate them after editing a rule (checks.py) or a code
(diagnose/codes.py):

    python -m runai_tui.knowledge.docs docs/profiles.md docs/health.md

(tests/core/test_checks.py and tests/core/test_diagnose.py fail while the docs and the
registries disagree). The lint examples are real: each rule's `example` overrides are applied to
EXAMPLE_PROFILE and linted, and the table shows what lint printed.
"""

from __future__ import annotations

import sys

from runai_tui.knowledge.diagnose.codes import CODES
from runai_tui.knowledge.findings import Finding
from runai_tui.knowledge.lint.checks import Rule
from runai_tui.knowledge.lint.registry import RULES, lint
from runai_tui.knowledge.probes import xid
from runai_tui.profiles import Profile, ProfileStore, apply_overrides
from runai_tui.profiles.store import shipped_profiles_dir
from runai_tui.util.docblocks import Block, code_span, rewrite, table

MODULE = "runai_tui.knowledge.docs"
LINT_RULES = Block("lint-rules", MODULE, "docs/profiles.md")
LINT_EXAMPLES = Block("lint-examples", MODULE, "docs/profiles.md")
DIAGNOSE_CODES = Block("diagnose-codes", MODULE, "docs/health.md")
XID_CODES = Block("xid-codes", MODULE, "docs/health.md")

EXAMPLE_NAME = "lint-example"
# The shipped retinanet-tcp with its findings fixed: lint finds nothing in it, so each
# rule's example (a few --set overrides) shows that rule alone.
EXAMPLE_PROFILE = """\
extends: retinanet-tcp
memory: {request: 3846Mi, limit: 8996Mi}
env: {NCCL_DEBUG: WARN, CUDA_VISIBLE_DEVICES: null}
args: [--ddp-comm-hook, bf16]
"""


def example_profile(sets: tuple[str, ...] = ()) -> Profile:
    """EXAMPLE_PROFILE (extending the shipped profiles only) with the `--set` overrides sets."""
    store = ProfileStore([shipped_profiles_dir()])
    base = store.validate_text(EXAMPLE_NAME, EXAMPLE_PROFILE)
    return apply_overrides(base, list(sets)) if sets else base


def example_findings(spec: Rule) -> list[Finding]:
    """What lint finds in the rule's example (exactly one finding of the rule, tests check)."""
    return lint(example_profile(spec.example))


def _severity(spec: Rule) -> str:
    return f"{spec.severity}; {spec.severity_note}" if spec.severity_note else spec.severity


def lint_rules_table() -> str:
    return table(
        ["Code", "Severity", "Field", "What it means", "Fix"],
        (
            [f"`{r.code}`", _severity(r), r.fields or f"`{r.field}`", r.means, r.fix]
            for r in RULES.values()
        ),
    )


def lint_examples_text() -> str:
    rows = []
    for spec in RULES.values():
        sets = " ".join(f"--set {s}" for s in spec.example)
        printed = "<br>".join(
            code_span(f"{f.severity}: {f.field}: {f.message} (fix: {f.fix})")
            for f in example_findings(spec)
        )
        rows.append([f"`{spec.code}`", code_span(sets), printed])
    return "\n".join(
        [
            f"```yaml\n# {EXAMPLE_NAME}.yaml\n{EXAMPLE_PROFILE}```",
            "",
            table(["Code", f"`runai-tui lint {EXAMPLE_NAME}.yaml` with", "It prints"], rows),
        ]
    )


def diagnose_codes_table() -> str:
    return table(
        ["Code", "Severity", "Retry", "What it means", "Example of its evidence"],
        (
            [f"`{c.code}`", c.severity, c.retry, c.message, code_span(c.example)]
            for c in CODES.values()
        ),
    )


def xid_codes_table() -> str:
    rows = sorted(xid.TABLE.values(), key=lambda r: r.code)
    return table(
        ["XID", "What it means", "Whose fault", "Preflight", "NVIDIA's immediate action"],
        ([str(r.code), r.meaning, r.cause, xid.verdict(r), f"`{r.action}`"] for r in rows),
    )


BLOCKS = [
    (LINT_RULES, lint_rules_table),
    (LINT_EXAMPLES, lint_examples_text),
    (DIAGNOSE_CODES, diagnose_codes_table),
    (XID_CODES, xid_codes_table),
]


def main(argv: list[str] | None = None) -> int:
    return rewrite(MODULE, BLOCKS, sys.argv[1:] if argv is None else argv)


if __name__ == "__main__":
    sys.exit(main())
