#!/usr/bin/env bash
# Sets everything up, then runs the main job on 4 MPI ranks: write a 10M-particle
# nonuniform dataset and its grid fields in parallel, read them back, query, histogram, sample
# the fields at the particles (PNGs in out/main/);
# then serves it and looks at it in the browser viewer (headless Chromium: out/main/viewer.png).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# Open MPI refuses to run as root unless told; this machine has fewer cores than ranks.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpirun --oversubscribe -n "${MOTES_RANKS:-4}" .venv/bin/python examples/main_job.py "$@"
.venv/bin/python examples/view_job.py "$@"
