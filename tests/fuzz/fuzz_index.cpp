// libFuzzer target: any bytes given as a step index must open cleanly or be
// rejected with motes::Error, never crash; an accepted index must survive the
// part-pruning traversal of queries (its part files do not exist, so a query
// that reaches one fails with motes::Error, which is fine).
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <string>

#include "motes/analysis/analysis.hpp"
#include "motes/particles/step_index.hpp"
#include "motes/query/engine.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = "/tmp/motes-fuzz-index-" + std::to_string(::getpid()) + ".mpi";
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return 0;
  std::fwrite(data, 1, size, f);
  std::fclose(f);
  try {
    auto collection = motes::Collection::of(motes::StepIndex::open(path));
    for (const char* where : {"x < -1e300", "x > 0.25 and not (y == 1)", "x * y + z > 0.1 or z != z"}) {
      motes::QuerySpec spec;
      spec.where = where;
      spec.box = motes::Box{{0, 0, 0}, {0.5, 0.5, 0.5}};
      spec.threads = 1;
      try {
        motes::Query q(collection, spec);
        motes::count(q);
      } catch (const motes::Error&) {
      }
    }
  } catch (const motes::Error&) {
  }
  return 0;
}
