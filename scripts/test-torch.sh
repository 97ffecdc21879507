#!/usr/bin/env bash
# The trainer and Flight Recorder tests against another torch build, in a venv of its own:
#   scripts/test-torch.sh torch==2.4.1 torchvision==0.19.1
#   scripts/test-torch.sh /path/to/torch-2.13.0+cpu-....whl        (a wheel file works too)
# The venv is .venv-torch-<first spec, sanitised>; it is kept, so a second run installs nothing.
# Only the torch-side tests run (tests/trainer, tests/hang, and the local cluster's real trainer
# jobs). The same pip settings as `make test` apply (a machine-wide cap on torch, say).
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 1 ] || { echo "usage: $0 TORCH_SPEC [MORE_SPECS...]" >&2; exit 2; }
PYTHON=${PYTHON:-python3}
slug=$(basename "$1" | sed 's/\.whl$//; s/[^A-Za-z0-9.+-]/_/g' | tr -s _ | cut -c1-60)
venv=".venv-torch-$slug"
if [ ! -x "$venv/bin/python" ]; then
    "$PYTHON" -m venv "$venv"
    "$venv/bin/python" -m pip install -q --upgrade pip
fi
if [ ! -e "$venv/.installed" ] || [ pyproject.toml -nt "$venv/.installed" ]; then
    # The project and its test tools, with the requested torch build resolved together.
    "$venv/bin/python" -m pip install -q -e '.[trainer,test]' "$@"
    touch "$venv/.installed"
fi
"$venv/bin/python" - <<'PY'
import torch
print(f"torch {torch.__version__} (CUDA {torch.version.cuda or 'none'}), "
      f"Python {__import__('sys').version.split()[0]}")
try:
    import torchvision
    print(f"torchvision {torchvision.__version__}")
except Exception as exc:  # a CPU torch beside a CUDA torchvision fails to import
    print(f"torchvision unusable beside this torch: {exc}")
PY
exec "$venv/bin/python" -m pytest -p no:cacheprovider \
    tests/trainer tests/hang tests/core/test_flight_recorder_job.py \
    tests/local/test_hang_rank.py tests/local/test_through_runai_tui.py ${PYTEST_ARGS:-}
