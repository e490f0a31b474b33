// `fuzz_X -write_seeds=DIR`: a fuzz target that makes its own seed corpus (inputs the Python
// corpus script cannot reach) defines write_seeds(dir) and this LLVMFuzzerInitialize, which
// calls it for that flag and exits before any fuzzing.
#pragma once

#include <cstdlib>
#include <string>

void write_seeds(const std::string& dir);

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  for (int i = 1; i < *argc; ++i) {
    const std::string arg = (*argv)[i];
    if (arg.rfind("-write_seeds=", 0) == 0) {
      write_seeds(arg.substr(13));
      std::exit(0);
    }
  }
  return 0;
}
