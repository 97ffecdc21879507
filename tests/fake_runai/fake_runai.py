"""A fake `runai` for tests: records its argv, answers from a scenario file. Standard library only.

Environment:
  FAKE_RUNAI_SCENARIO  path of a JSON scenario (below); required
  FAKE_RUNAI_LOG       path of a JSON-lines file; each call appends
                       {"argv": [...args after the program name...], "pid": N, "child_pid": N|null,
                        "program": the path the caller executed (FAKE_RUNAI_PROGRAM, set by the
                        wrapper tests/fakes.py writes; else sys.argv[0])}

Scenario: {"rules": [RULE, ...], "default": RESPONSE (optional)}
  RULE = RESPONSE + {"match": [TOKEN, ...]}: the first rule whose tokens all occur in argv, in
  that order (not necessarily adjacent), answers. With no match and no default: exit 64.
  RESPONSE keys (all optional):
    "sleep": seconds to wait before any output (to provoke a timeout)
    "stdout", "stderr": text to print;  "stdout_hex": raw bytes for stdout (invalid UTF-8 tests)
    "lines": stdout lines printed one by one, flushed, "line_delay" seconds apart
    "block": true -> after the output, stay alive (up to 120 s) until killed (a `logs --follow`)
    "spawn_child": true -> first start a grandchild that sleeps 120 s (process-group kill tests)
    "exit": exit code (default 0)

Cobra, as the real CLI (tests/fake_runai/help_pages.py holds the documented help of each CLI):
  "cli": "2.18" | "2.25" | "3.0" | "v1"  which CLI to play. `--help`/`-h` always answers with that
      CLI's help (2.25's when "cli" is not given), before any rule; with "cli" given, an unknown
      command or flag fails as cobra does (`Error: unknown flag: --x`, exit 1), and `version`
      without a rule prints an ambiguous `Version: 2.25.0`. CLI v1 has no `runai training`.
  "jobs": [WORKLOAD, ...]  served by `training list` with the CLI's paging: 2.18 (or any argv
      with --limit) takes --limit (default 50) and --offset; 2.25/3.0 take --page-size
      ("page_size", default 100) and --next-token (the JSON's "next").
Help calls are logged with "help": true.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import help_pages  # noqa: E402  (beside this script)


def _matches(tokens: list[str], argv: list[str]) -> bool:
    position = 0
    for token in tokens:
        try:
            position = argv.index(token, position) + 1
        except ValueError:
            return False
    return True


def _respond(argv: list[str], scenario: dict) -> dict:
    for rule in scenario.get("rules", []):
        if _matches(rule.get("match", []), argv):
            return rule
    if "default" in scenario:
        return scenario["default"]
    return {"stderr": f"Error: fake runai has no rule for: {' '.join(argv)}\n", "exit": 64}


_FLAG = re.compile(r"^\s{1,8}(?:-(\w), )?--([\w.-]+)(?: (\S+))?(?:\s{2,}|$)")


def _flags(text: str) -> dict[str, bool]:
    """Flag spellings (`--name`, `-x`) in a Flags block -> whether the flag takes a value."""
    out: dict[str, bool] = {}
    for line in text.splitlines():
        m = _FLAG.match(line)
        if m:
            out[f"--{m.group(2)}"] = m.group(3) is not None
            if m.group(1):
                out[f"-{m.group(1)}"] = m.group(3) is not None
    return out


def _resolve(cli: dict, words: list[str]) -> tuple[tuple[str, ...], list[str]]:
    """The command path the leading words name, and the rest (cobra: flags may come first)."""
    path: tuple[str, ...] = ()
    rest: list[str] = []
    for i, word in enumerate(words):
        if word.startswith("-") or path in cli["leaves"]:
            rest.append(word)
            continue
        group = cli["groups"].get(path, {})
        if word in group:
            path = (*path, word)
            continue
        rest.extend(words[i:])
        break
    return path, rest


def _usage_error(text: str) -> dict:
    return {"stderr": f"Error: {text}\n", "exit": 1}


def _cobra(argv: list[str], scenario: dict) -> dict | None:
    """The answer cobra gives before any handler runs (help, unknown command or flag), or None."""
    name = scenario.get("cli") or "2.25"
    strict = "cli" in scenario
    words = argv[: argv.index("--")] if "--" in argv else argv
    asks_help = "--help" in words or "-h" in words
    if not asks_help and not strict:
        return None
    rules = scenario.get("rules", [])
    own_help = any("--help" in r.get("match", []) for r in rules)
    if asks_help and own_help and any(_matches(r.get("match", []), argv) for r in rules):
        return None  # the scenario answers this help itself
    if name == "v1":
        if words and words[0] == "training":
            return _usage_error(
                'unknown command "training" for "runai"\nRun \'runai --help\' for usage.'
            )
        if asks_help:
            lines = [f"  {k:<13}{v}" for k, v in help_pages.V1_COMMANDS.items()]
            return {
                "stdout": "Usage:\n  runai [command]\n\nAvailable Commands:\n"
                + "\n".join(lines)
                + "\n"
            }
        return None
    cli = help_pages.CLIS[name]
    path, rest = _resolve(cli, words)
    where = " ".join(["runai", *path])
    if path in cli["leaves"]:
        short, flag_text = cli["leaves"][path]
        if asks_help:
            text = (
                f"{short}\n\nUsage:\n  {where} [flags]\n\nFlags:\n{flag_text}\n\n"
                f"Global Flags:\n{cli['global']}\n"
            )
            return {"stdout": text}
        known = {**_flags(flag_text), **_flags(cli["global"])}
        i = 0
        while i < len(rest):
            word = rest[i]
            i += 1
            if word.startswith("--"):
                flag, eq, _ = word.partition("=")
                if flag not in known:
                    return _usage_error(f"unknown flag: {flag}")
                i += 1 if known[flag] and not eq else 0
            elif word.startswith("-") and len(word) > 1:
                flag = word[:2]
                if flag not in known:
                    return _usage_error(f"unknown shorthand flag: '{word[1]}' in {word}")
                i += 1 if known[flag] and len(word) == 2 else 0
        return None
    group = cli["groups"].get(path)
    if group is None:
        return None
    stray = [w for w in rest if not w.startswith("-")]
    if stray and path:
        return _usage_error(
            f'unknown command "{stray[0]}" for "{where}"\nRun \'{where} --help\' for usage.'
        )
    if asks_help:
        lines = [f"  {k:<13}{v}" for k, v in group.items()]
        last = path[-1] if path else "runai"
        text = (
            f"{last} management\n\nUsage:\n  {where} [command]\n\nAvailable Commands:\n"
            + "\n".join(lines)
            + f"\n\nFlags:\n  -h, --help   help for {last}\n\nGlobal Flags:\n{cli['global']}\n"
            + f'\nUse "{where} [command] --help" for more information about a command.\n'
        )
        return {"stdout": text}
    return None


def _value(argv: list[str], flag: str, default: int) -> int:
    for i, word in enumerate(argv):
        if word == flag and i + 1 < len(argv):
            return int(argv[i + 1])
        if word.startswith(flag + "="):
            return int(word.split("=", 1)[1])
    return default


def _token(argv: list[str]) -> int:
    for i, word in enumerate(argv):
        if word == "--next-token" and i + 1 < len(argv):
            return int(argv[i + 1])
    return 0


def _list_jobs(argv: list[str], scenario: dict) -> dict | None:
    """`training list` over the scenario's jobs, paged as the CLI pages."""
    if "jobs" not in scenario or argv[:2] != ["training", "list"] or "--help" in argv:
        return None
    jobs = scenario["jobs"]
    if scenario.get("cli") == "2.18" or "--limit" in argv:
        offset, limit = _value(argv, "--offset", 0), _value(argv, "--limit", 50)
        return {"stdout": json.dumps({"workloads": jobs[offset : offset + limit]}) + "\n"}
    start, size = _token(argv), _value(argv, "--page-size", int(scenario.get("page_size", 100)))
    page = {"workloads": jobs[start : start + size]}
    if start + size < len(jobs):
        page["next"] = str(start + size)
    return {"stdout": json.dumps(page) + "\n"}


def main() -> int:
    argv = sys.argv[1:]
    with open(os.environ["FAKE_RUNAI_SCENARIO"], encoding="utf-8") as handle:
        scenario = json.load(handle)
    words = argv[: argv.index("--")] if "--" in argv else argv
    asks_help = "--help" in words or "-h" in words
    response = _cobra(argv, scenario) or _list_jobs(argv, scenario)
    if response is None and "cli" in scenario and argv[:1] == ["version"]:
        response = next(
            (r for r in scenario.get("rules", []) if _matches(r.get("match", []), argv)),
            {"stdout": help_pages.VERSION},
        )
    if response is None:
        response = _respond(argv, scenario)
    child_pid = None
    if response.get("spawn_child"):
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
        child_pid = child.pid
    log = os.environ.get("FAKE_RUNAI_LOG")
    if log:
        record = json.dumps(
            {
                "argv": argv,
                "program": os.environ.get("FAKE_RUNAI_PROGRAM", sys.argv[0]),
                "pid": os.getpid(),
                "child_pid": child_pid,
                "help": asks_help,
            }
        )
        with open(log, "a", encoding="utf-8") as handle:
            handle.write(record + "\n")
    if response.get("sleep"):
        time.sleep(float(response["sleep"]))
    out = sys.stdout.buffer
    if response.get("stdout"):
        out.write(response["stdout"].encode())
    if response.get("stdout_hex"):
        out.write(bytes.fromhex(response["stdout_hex"]))
    out.flush()
    for line in response.get("lines", []):
        out.write(line.encode() + b"\n")
        out.flush()
        if response.get("line_delay"):
            time.sleep(float(response["line_delay"]))
    if response.get("stderr"):
        sys.stderr.write(response["stderr"])
        sys.stderr.flush()
    if response.get("block"):
        time.sleep(120)
    return int(response.get("exit", 0))


if __name__ == "__main__":
    sys.exit(main())
