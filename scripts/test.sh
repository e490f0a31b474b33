#!/usr/bin/env bash
# The full test suite: C++ (GoogleTest under ctest), the profiling drivers, the installed
# library used by out-of-tree builds, short libFuzzer runs (the particle file reader, the
# expression parser, the index sections, the manifest, field files and the block codecs),
# the viewer's unit tests (Vitest), Python (pytest + hypothesis), the installed package's
# viewer app, the package as pip builds and installs it (tests/install), and the viewer in
# a browser (pytest + Playwright).
# MOTES_REQUIRE_ALL=1 (.ci/run sets it) makes every skipped Python test fail (tests/needs.py).
# Each stage's time is printed after it, and all of them at the end.
set -euo pipefail
cd "$(dirname "$0")/.."

stage_names=() stage_seconds=() stage_now="" stage_began=$SECONDS
# stage NAME TITLE: ends the stage running (printing its time) and begins NAME.
stage() {
  if [ -n "$stage_now" ]; then
    stage_names+=("$stage_now") stage_seconds+=($((SECONDS - stage_began)))
    echo "   (${stage_now}: $((SECONDS - stage_began)) s)"
  fi
  stage_now=${1:-} stage_began=$SECONDS
  if [ -n "$stage_now" ]; then echo "== $2"; fi
}
stage_times() {
  local status=$? failed=$stage_now
  stage ""
  echo "== time per stage"
  for i in "${!stage_names[@]}"; do printf '%6d s  %s\n' "${stage_seconds[$i]}" "${stage_names[$i]}"; done
  printf '%6d s  in all%s\n' "$SECONDS" "$( ((status)) && echo ", FAILED in stage ${failed}" )"
}
trap stage_times EXIT

if [ "${MOTES_REQUIRE_ALL:-}" = 1 ]; then
  echo "test: MOTES_REQUIRE_ALL=1: a Python test that skips fails"
else
  echo "test: Python tests may skip when something optional is missing (MOTES_REQUIRE_ALL=1 makes that fail, as in CI)"
fi
stage setup "set up (scripts/setup.sh)"
bash scripts/setup.sh
JOBS=$(nproc)
# shellcheck source=scripts/compiler_cache.sh
. scripts/compiler_cache.sh  # build/cpp reuses the objects of setup's package build

stage ctest "C++ tests (ctest)"
cmake -S . -B build/cpp -G Ninja -DMOTES_BUILD_TESTS=ON -DMOTES_BUILD_DRIVERS=ON -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build/cpp -j "$JOBS"
ctest --test-dir build/cpp --output-on-failure -j "$JOBS"

stage drivers "profiling drivers (bench/drivers): a write from .npy columns, then a query of the file"
drivers=$(mktemp -d)
.venv/bin/python -c "import sys, numpy as np, motes.synth as s; [np.save(f'{sys.argv[1]}/{k}.npy', v) for k, v in s.vpic(200_000).items()]" "$drivers"
build/cpp/motes_write_driver "$drivers/out.mpf" 1 "$drivers"/{x,y,z,ux,uy,uz,energy,q}.npy | tail -1
build/cpp/motes_query_driver "$drivers/out.mpf" "energy > 1" 3
rm -rf "$drivers"

stage library "installed library: mini-apps (find_package) and a C program (pkg-config) built against it"
JOBS=$JOBS bash scripts/test_install.sh

stage fuzz "fuzzing (libFuzzer, short runs)"
CC=clang CXX=clang++ cmake -S . -B build/fuzz -G Ninja -DMOTES_FUZZ=ON -DMOTES_BUILD_TESTS=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build/fuzz -j "$JOBS" --target fuzz_reader fuzz_expr fuzz_index fuzz_manifest fuzz_field fuzz_codec
rm -rf build/fuzz/corpus && mkdir -p build/fuzz/corpus/reader build/fuzz/corpus/expr build/fuzz/corpus/index build/fuzz/corpus/manifest build/fuzz/corpus/field build/fuzz/corpus/codec
.venv/bin/python tests/fuzz/make_corpus.py build/fuzz/corpus
build/fuzz/fuzz_codec -write_seeds=build/fuzz/corpus/codec  # coded blocks of every predictor (C++ encoders)
build/fuzz/fuzz_field -write_seeds=build/fuzz/corpus/field  # a field in two parts, a field with ZFP blocks
build/fuzz/fuzz_expr -max_total_time="${MOTES_FUZZ_SECONDS:-20}" -print_final_stats=1 build/fuzz/corpus/expr 2>&1 | grep -E "^stat::(number_of_executed_units|new_units_added)|ERROR|SUMMARY"
build/fuzz/fuzz_reader -max_total_time="${MOTES_FUZZ_SECONDS:-20}" -rss_limit_mb=4096 -print_final_stats=1 build/fuzz/corpus/reader 2>&1 | grep -E "^stat::(number_of_executed_units|new_units_added)|ERROR|SUMMARY"
build/fuzz/fuzz_index -max_total_time="${MOTES_FUZZ_SECONDS:-20}" -rss_limit_mb=4096 -print_final_stats=1 build/fuzz/corpus/index 2>&1 | grep -E "^stat::(number_of_executed_units|new_units_added)|ERROR|SUMMARY"
build/fuzz/fuzz_field -max_total_time="${MOTES_FUZZ_SECONDS:-20}" -rss_limit_mb=4096 -print_final_stats=1 build/fuzz/corpus/field 2>&1 | grep -E "^stat::(number_of_executed_units|new_units_added)|ERROR|SUMMARY"
build/fuzz/fuzz_codec -max_total_time="${MOTES_FUZZ_SECONDS:-20}" -rss_limit_mb=4096 -print_final_stats=1 build/fuzz/corpus/codec 2>&1 | grep -E "^stat::(number_of_executed_units|new_units_added)|ERROR|SUMMARY"
build/fuzz/fuzz_manifest -max_total_time="${MOTES_FUZZ_SECONDS:-20}" -rss_limit_mb=4096 -print_final_stats=1 -dict=tests/fuzz/json.dict build/fuzz/corpus/manifest 2>&1 | grep -E "^stat::(number_of_executed_units|new_units_added)|ERROR|SUMMARY"

stage vitest "viewer unit tests (Vitest: frame parser, cell bookkeeping, planner, URL fragment)"
(cd viewer && { [ -d node_modules ] || npm ci --no-audit --no-fund --loglevel=error; } && npm test --silent)

stage pytest "Python tests (pytest)"
.venv/bin/python -m pytest -q tests/python

stage app "the installed package carries the built viewer app"
.venv/bin/python -c "import os, motes.server.config as c; p = os.path.join(c.APP_DIR, 'index.html'); assert os.path.isfile(p), p + ' is missing'; print(p)"

stage package "the package: without Node a clean clone fails to build, an sdist carries the app and installs without Node (tests/install)"
.venv/bin/python -m pytest -q tests/install

stage browser "browser tests (pytest + Playwright, Debian's Chromium, against motes serve; required even without MOTES_REQUIRE_ALL)"
MOTES_REQUIRE_ALL=1 .venv/bin/python -m pytest -q tests/browser
