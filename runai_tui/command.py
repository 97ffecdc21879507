"""Profile -> argv for `runai training pytorch submit` (CLI v2 syntax), and its display form.

This is the one place that knows how each profile field is spelled on the `runai` command line.
Every value is its own argv element, exactly as written; repeated values repeat the flag.
"""

from __future__ import annotations

import re
import shlex

from runai_tui.profiles import Profile

SUBMIT = ["runai", "training", "pytorch", "submit"]


def build_submit_argv(profile: Profile, name: str | None = None) -> list[str]:
    """The full argv (starting with "runai") that submits profile as job `name`."""
    job = name or profile.job_name or profile.name
    argv = [*SUBMIT, job]

    def opt(flag: str, value: object | None) -> None:
        if value is not None:
            argv.extend([flag, str(value)])

    def repeated(flag: str, values: list[str]) -> None:
        for value in values:
            argv.extend([flag, value])

    opt("--project", profile.project)
    opt("--image", profile.image)
    opt("--image-pull-policy", profile.image_pull_policy)
    repeated("--annotation", [f"{k}={v}" for k, v in profile.annotations.items()])
    repeated("--label", [f"{k}={v}" for k, v in profile.labels.items()])
    repeated("--extended-resource", [f"{k}={v}" for k, v in profile.extended_resources.items()])
    if profile.large_shm:
        argv.append("--large-shm")
    opt("--workers", profile.workers)
    # positiveInt in the CLI: zero GPUs is said by leaving the flag out.
    opt("--gpu-devices-request", profile.gpus or None)
    opt("--master-gpu-devices-request", profile.master_gpus or None)
    opt("--cpu-core-request", profile.cpu.get("request"))
    opt("--cpu-core-limit", profile.cpu.get("limit"))
    opt("--cpu-memory-request", profile.memory.get("request"))
    opt("--cpu-memory-limit", profile.memory.get("limit"))
    opt("--run-as-uid", profile.run_as.get("uid"))
    opt("--run-as-gid", profile.run_as.get("gid"))
    opt("--working-dir", profile.working_dir)
    # `-e` is the one spelling valid in CLI v1, old v2 and new v2 (docs/runai-cli.md §1.4).
    repeated("-e", [f"{k}={v}" for k, v in profile.env.items()])
    repeated("--existing-pvc", [f"claimname={p['claim']},path={p['path']}" for p in profile.pvcs])
    repeated("--capability", profile.capabilities)
    repeated("--node-pools", profile.node_pools)
    opt("--preemptibility", profile.preemptibility)
    opt("--restart-policy", profile.restart_policy)
    opt("--master-restart-policy", profile.master_restart_policy)
    opt("--backoff-limit", profile.backoff_limit)
    opt("--clean-pod-policy", profile.clean_pod_policy)
    # With --command the words after `--` replace the entrypoint; without it they are its args.
    if profile.command:
        argv.extend(["--command", "--", *profile.command, *profile.args])
    elif profile.args:
        argv.extend(["--", *profile.args])
    return argv


_SAFE = re.compile(r"^[A-Za-z0-9_@%+=:,./-]+$")


def quote_word(word: str) -> str:
    """Quote one word for a POSIX shell. Control characters use $'...' so the line stays one line."""
    if word and _SAFE.match(word):
        return word
    if any(ord(c) < 32 or ord(c) == 127 for c in word):
        escaped = "".join(_ansi_c(c) for c in word)
        return f"$'{escaped}'"
    return shlex.quote(word)


def _ansi_c(char: str) -> str:
    named = {"\n": "\\n", "\t": "\\t", "\r": "\\r", "\\": "\\\\", "'": "\\'"}
    if char in named:
        return named[char]
    if ord(char) < 32 or ord(char) == 127:
        return f"\\x{ord(char):02x}"
    return char


def display_argv(argv: list[str]) -> str:
    """One line that a POSIX shell (bash, zsh) turns back into exactly argv."""
    return " ".join(quote_word(word) for word in argv)
