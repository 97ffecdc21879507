"""A fake `runai` for tests: records its argv, answers from a scenario file. Standard library only.

Environment:
  FAKE_RUNAI_SCENARIO  path of a JSON scenario (below); required
  FAKE_RUNAI_LOG       path of a JSON-lines file; each call appends
                       {"argv": [...args after the program name...], "pid": N, "child_pid": N|null}

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
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time


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


def main() -> int:
    argv = sys.argv[1:]
    with open(os.environ["FAKE_RUNAI_SCENARIO"], encoding="utf-8") as handle:
        scenario = json.load(handle)
    response = _respond(argv, scenario)
    child_pid = None
    if response.get("spawn_child"):
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
        child_pid = child.pid
    log = os.environ.get("FAKE_RUNAI_LOG")
    if log:
        record = json.dumps({"argv": argv, "pid": os.getpid(), "child_pid": child_pid})
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
