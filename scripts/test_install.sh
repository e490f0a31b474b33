#!/usr/bin/env bash
# motes as simulation codes use it: installs build/cpp (built by scripts/test.sh) into
# build/install, builds the mini-apps against it out of tree (find_package(motes)) and
# a C program with pkg-config only, runs them under mpirun and checks what they wrote.
#   bash scripts/test_install.sh       (after scripts/test.sh, or a build of build/cpp;
#                                        MOTES_BUILD_DIR=DIR installs another build)
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${MOTES_PYTHON:-.venv/bin/python}
JOBS=${JOBS:-$(nproc)}
prefix=$PWD/build/install
work=build/install-test
rm -rf "$prefix" "$work"
mkdir -p "$work"

cmake --install "${MOTES_BUILD_DIR:-build/cpp}" --prefix "$prefix" >/dev/null
echo "installed into build/install: $(cd "$prefix" && find . -type f | sort | tr '\n' ' ')"

# Open MPI refuses more ranks than cores, and running as root, unless told.
MPIRUN=(mpirun)
if mpirun --version 2>&1 | grep -qE "Open MPI|OpenRTE"; then
  MPIRUN+=(--oversubscribe --allow-run-as-root)
fi

echo "-- mini-apps: examples/miniapp built against build/install"
cmake -S examples/miniapp -B "$work/miniapp" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$work/miniapp" -j "$JOBS" >/dev/null
"${MPIRUN[@]}" -n 3 "$work/miniapp/jets" "$work/jets.motes" 12 4 300 7 >/dev/null
"$PY" examples/miniapp/check_output.py "$work/jets.motes" 4,8,12 | tail -1
if [ -x "$work/miniapp/jets_f" ]; then
  "${MPIRUN[@]}" -n 2 "$work/miniapp/jets_f" "$work/jets_f.motes" 8 4 300 7 >/dev/null
  "$PY" examples/miniapp/check_output.py "$work/jets_f.motes" 4,8 | tail -1
else
  echo "jets_f not built (no Fortran compiler, mpi_f08 or motes::fortran_mpi)"
fi

echo "-- C program with pkg-config: tests/install/c_writer.c"
PKG_CONFIG_PATH="$(dirname "$(find "$prefix" -name motes.pc)")${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
export PKG_CONFIG_PATH
version=$(pkg-config --modversion motes)
libdir=$(pkg-config --variable=libdir motes)
# shellcheck disable=SC2046  # pkg-config's flags are meant to be split
cc -std=c11 -Wall -Wextra -Werror tests/install/c_writer.c -o "$work/c_writer" \
   $(pkg-config --cflags --libs motes) -Wl,-rpath,"$libdir"
"$work/c_writer" "$work/c_writer.motes" "$version"
"$PY" examples/miniapp/check_output.py "$work/c_writer.motes" 1,2,3 | tail -1
if pkg-config --exists motes-mpi; then
  # shellcheck disable=SC2046
  mpicc -std=c11 -Wall -Wextra -Werror -DWITH_MPI tests/install/c_writer.c -o "$work/c_writer_mpi" \
        $(pkg-config --cflags --libs motes-mpi) -Wl,-rpath,"$libdir"
  "${MPIRUN[@]}" -n 2 "$work/c_writer_mpi" "$work/c_writer_mpi.motes" "$version"
  "$PY" examples/miniapp/check_output.py "$work/c_writer_mpi.motes" 1,2,3 | tail -1
fi
