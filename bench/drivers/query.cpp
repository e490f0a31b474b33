// Profiling driver: one particle file, one `where`, the query and the gather of every
// column repeated hot, the best time printed. Built with -DMOTES_BUILD_DRIVERS=ON (use
// CMAKE_BUILD_TYPE=RelWithDebInfo for symbols), for perf and valgrind --tool=callgrind
// without Python in the profile:
//
//   build/prof/motes_query_driver run.motes/steps/000000/particles.mpf "ux > 0.29" 200
//   valgrind --tool=callgrind build/prof/motes_query_driver FILE WHERE 25   # minus a run of 5: per query
#include <chrono>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "motes/particles/reader.hpp"
#include "motes/query/engine.hpp"
#include "motes/query/selection.hpp"

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s PARTICLE_FILE WHERE REPEATS\n", argv[0]);
    return 2;
  }
  try {
    auto file = motes::ParticleFile::open(argv[1]);
    const int repeats = std::stoi(argv[3]);
    std::vector<size_t> columns;
    for (size_t c = 0; c < file->schema().size(); ++c) columns.push_back(c);
    std::vector<std::vector<char>> out(columns.size());
    double best = 1e300;
    uint64_t rows = 0;
    for (int r = 0; r < repeats; ++r) {
      const auto t0 = std::chrono::steady_clock::now();
      motes::QuerySpec spec;
      spec.where = argv[2];
      motes::Query query(file, spec);
      motes::Selection selection(query);
      selection.prefetch(columns);  // as Python's gather of several columns does
      for (size_t c : columns) {
        out[c].resize(selection.size() * 8 + 8);
        selection.gather(c, 0, selection.size(), out[c].data(), 1, false);
      }
      best = std::min(best, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
      rows = selection.size();
    }
    std::printf("%llu rows, best of %d: %.3f ms\n", static_cast<unsigned long long>(rows), repeats, best);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  return 0;
}
