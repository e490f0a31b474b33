// Profiling driver: one particle file, one `where`, the query and the gather of every
// column repeated hot, the best time printed. Built with -DMOTES_BUILD_DRIVERS=ON (use
// CMAKE_BUILD_TYPE=RelWithDebInfo for symbols), for perf and valgrind --tool=callgrind
// without Python in the profile:
//
//   build/prof/motes_query_driver run.motes/steps/000000/particles.mpf "ux > 0.29" 200
//   valgrind --tool=callgrind build/prof/motes_query_driver FILE WHERE 25   # minus a run of 5: per query
//
// MOTES_DRIVER_EVICT_MB=768 writes to a buffer of that size before every query (outside the
// timing), so each query starts with cold caches, as after an interactive user's pause
// (the last-level cache of this VM holds 300 MB and is shared with other tenants); the
// median is printed beside the best. MOTES_DRIVER_COLUMNS=0 gathers no column (the
// selection alone).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
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
    const char* gather = std::getenv("MOTES_DRIVER_COLUMNS");
    if (!gather || std::string(gather) != "0")
      for (size_t c = 0; c < file->schema().size(); ++c) columns.push_back(c);
    std::vector<std::vector<char>> out(columns.size());
    const char* evict_mb = std::getenv("MOTES_DRIVER_EVICT_MB");
    std::vector<unsigned char> evict(evict_mb ? size_t(std::stoul(evict_mb)) << 20 : 0, 1);
    std::vector<double> times, gathers;
    uint64_t rows = 0;
    for (int r = 0; r < repeats; ++r) {
      for (size_t i = 0; i < evict.size(); i += 64) evict[i] = static_cast<unsigned char>(evict[i] + 1);
      const auto t0 = std::chrono::steady_clock::now();
      motes::QuerySpec spec;
      spec.where = argv[2];
      motes::Query query(file, spec);
      motes::Selection selection(query);
      const auto t1 = std::chrono::steady_clock::now();
      selection.prefetch(columns);  // as Python's gather of several columns does
      for (size_t c : columns) {
        out[c].resize(selection.size() * 8 + 8);
        selection.gather(c, 0, selection.size(), out[c].data(), 1, false);
      }
      const auto t2 = std::chrono::steady_clock::now();
      times.push_back(std::chrono::duration<double, std::milli>(t2 - t0).count());
      gathers.push_back(std::chrono::duration<double, std::milli>(t2 - t1).count());
      rows = selection.size();
    }
    std::sort(times.begin(), times.end());
    std::sort(gathers.begin(), gathers.end());
    std::printf("%llu rows, best of %d: %.3f ms, median %.3f ms (gather: best %.3f ms, median %.3f ms)%s\n",
                static_cast<unsigned long long>(rows), repeats, times.front(), times[times.size() / 2], gathers.front(),
                gathers[gathers.size() / 2], evict.empty() ? "" : ", caches evicted before each");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  return 0;
}
