# Sourced by scripts/setup.sh and scripts/test.sh: every CMake build they start compiles
# through ccache when it is installed (setup.sh installs it), with paths under this tree
# rewritten relative to the build folder. The test suite's C++ build (build/cpp) then takes
# the library's objects from the package build that setup.sh made (build/<wheel tag>: the same
# flags, the same depth under this tree) instead of compiling them again.
# The compilers are named one way for every build (pip's build asks for g++, CMake's default
# is c++: the same program, but ccache keys on the name).
if command -v ccache >/dev/null 2>&1; then
  export CMAKE_C_COMPILER_LAUNCHER=ccache CMAKE_CXX_COMPILER_LAUNCHER=ccache
  export CC="${CC:-gcc}" CXX="${CXX:-g++}"
  CCACHE_BASEDIR=$(pwd -P)
  export CCACHE_BASEDIR
fi
