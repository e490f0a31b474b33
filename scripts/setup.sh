#!/usr/bin/env bash
# Installs everything motes needs on a fresh Debian 12 machine (as root) and
# builds the package into .venv. Safe to run again: it only does what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
# chromium: Debian's browser, which the viewer's browser tests drive (never a downloaded one).
# paraview, python3-paraview, xvfb: Debian's ParaView, which loads motes' reader plugin in the
# tests (pvbatch under xvfb-run).
for pkg in cmake ninja-build ccache pkg-config g++ gfortran clang libclang-rt-14-dev libboost-dev nlohmann-json3-dev libxxhash-dev libzstd-dev liblz4-dev libzfp-dev libgtest-dev openmpi-bin libopenmpi-dev python3 python3-venv python3-dev locales chromium paraview python3-paraview xvfb nginx-light; do
  dpkg -s "$pkg" >/dev/null 2>&1 || need_apt+=("$pkg")
done
if ((${#need_apt[@]})); then
  echo "setup: installing OS packages: ${need_apt[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null
fi

# A decimal-comma locale for the tests that check number parsing and printing ignore LC_NUMERIC.
if ! locale -a 2>/dev/null | grep -qi '^de_DE\.utf-\?8$'; then
  localedef -i de_DE -f UTF-8 de_DE.UTF-8 || echo "setup: warning: could not generate the de_DE.UTF-8 locale"
fi

# The viewer (viewer/, TypeScript) needs Node >= 18: the package build below builds it into
# python/motes/server/app/ when it is missing or older than its sources
# (cmake/motes_viewer.cmake), so that the package carries it.
node_major=$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)
if [ "$node_major" -lt 18 ]; then
  echo "setup: installing Debian's nodejs and npm (found Node ${node_major})"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends nodejs npm >/dev/null
fi

PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  echo "setup: creating .venv with $($PY --version)"
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip
if ! .venv/bin/python -c "import mpi4py" 2>/dev/null; then
  # Built from source against the OS's Open MPI, so Python and C++ share one MPI.
  echo "setup: building mpi4py against $(mpirun --version | head -1)"
  .venv/bin/python -m pip install -q --no-binary=mpi4py "mpi4py>=3.1"
fi
# shellcheck source=scripts/compiler_cache.sh
. scripts/compiler_cache.sh
echo "setup: installing motes (with its viewer app) and its Python dependencies into .venv"
.venv/bin/python -m pip install -q ".[test,bench,plot,arrow,convert,serve,fields,dask,remote]"
echo "setup: done ($(.venv/bin/python -c 'import motes; print("motes", motes.__version__)'))"
