# Sourced by scripts/setup.sh and scripts/test.sh: every CMake build they start compiles
# through ccache when it is installed (setup.sh installs it), with paths under this tree
# rewritten relative to the build folder. The test suite's C++ build (build/cpp) then takes
# the library's objects from the package build that setup.sh made (build/<wheel tag>: the same
# flags, the same depth under this tree) instead of compiling them again.
if command -v ccache >/dev/null 2>&1; then
  export CMAKE_C_COMPILER_LAUNCHER=ccache CMAKE_CXX_COMPILER_LAUNCHER=ccache
  CCACHE_BASEDIR=$(pwd -P)
  export CCACHE_BASEDIR
fi
