#!/usr/bin/env bash
# Sets everything up, then runs the main job: write a 10M-particle nonuniform
# dataset, query it, histogram it (PNG in out/main/).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/python examples/main_job.py "$@"
