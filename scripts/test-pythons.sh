#!/usr/bin/env bash
# The whole suite on each Python version given (default: every one the project supports), each in
# a venv of its own (.venv-py3.X, kept between runs):  scripts/test-pythons.sh 3.10 3.13
# A version is found as pyenv's newest 3.X, else python3.X on PATH. The last lines are a table:
# version, interpreter, pytest's summary line; the exit status is 1 if any version failed.
set -uo pipefail
cd "$(dirname "$0")/.."
versions=("$@")
[ ${#versions[@]} -gt 0 ] || versions=(3.10 3.11 3.12 3.13)
find_python() {
    local v=$1 root candidate
    if command -v pyenv >/dev/null 2>&1; then
        root=$(pyenv root)
        candidate=$(ls -d "$root/versions/$v".* 2>/dev/null | sort -V | tail -n 1)
        [ -n "$candidate" ] && [ -x "$candidate/bin/python" ] && { echo "$candidate/bin/python"; return; }
    fi
    command -v "python$v" 2>/dev/null
}
summary=()
failed=0
for v in "${versions[@]}"; do
    python=$(find_python "$v")
    if [ -z "$python" ]; then
        summary+=("$v  (not found)  skipped: no python$v")
        failed=1
        continue
    fi
    venv=".venv-py$v"
    log="out/test-pythons/py$v.log"
    mkdir -p out/test-pythons
    echo "== Python $v: $python -> $venv (log: $log)"
    if [ ! -e "$venv/.installed" ] || [ pyproject.toml -nt "$venv/.installed" ]; then
        "$python" -m venv "$venv" && "$venv/bin/python" -m pip install -q --upgrade pip &&
            "$venv/bin/python" -m pip install -q -e '.[trainer,test]' && touch "$venv/.installed" ||
            { summary+=("$v  $python  install failed"); failed=1; continue; }
    fi
    "$venv/bin/python" -m pytest -p no:cacheprovider ${PYTEST_ARGS:-} >"$log" 2>&1
    code=$?
    [ $code -eq 0 ] || failed=1
    summary+=("$v  $("$venv/bin/python" -c 'import platform; print(platform.python_version())')  $(tail -n 1 "$log")")
done
echo
printf '%s\n' "${summary[@]}"
exit $failed
