// Profiling driver: writes one particle file from columns saved as .npy files (the
// column's name is the file's stem), repeated, and prints the writer's phase table (best
// of the repeats per phase) and CPU time per particle. Built with -DMOTES_BUILD_DRIVERS=ON
// (CMAKE_BUILD_TYPE=RelWithDebInfo for symbols), for perf without Python in the profile:
//
//   python -c "import motes.synth as s, numpy as np; [np.save(f'/tmp/cols/{k}.npy', v) for k, v in s.vpic(10_000_000).items()]"
//   build/prof/motes_write_driver /tmp/out.mpf 3 /tmp/cols/{x,y,z,ux,uy,uz,energy,q}.npy
//   perf record -g build/prof/motes_write_driver /tmp/out.mpf 1 /tmp/cols/*.npy
#include <sys/mman.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <fstream>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "motes/core/memory.hpp"
#include "motes/particles/writer.hpp"
#include "npy.hpp"

using motes_drivers::Array;
using motes_drivers::load_npy;

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: %s OUT_FILE REPEATS COLUMN.npy...\n", argv[0]);
    return 2;
  }
  try {
    std::vector<Array> arrays;
    for (int i = 3; i < argc; ++i) arrays.push_back(load_npy(argv[i]));
    std::vector<motes::ColumnView> columns;
    for (const Array& a : arrays) {
      motes::ColumnView v;
      v.spec.name = a.name;
      v.spec.dtype = a.dtype;
      v.data = a.bytes.get();
      v.count = a.count;
      columns.push_back(v);
    }
    const int repeats = std::stoi(argv[2]);
    motes::WriteOptions options;
    // MOTES_STAGE_ROWS=0: never a row stage; 1: one at any size (where the rows are far from
    // spatial order); unset: the default. For comparisons in one build.
    if (const char* stage = std::getenv("MOTES_STAGE_ROWS")) {
      options.stage_rows = std::string(stage) != "0";
      options.stage_min_bytes = 0;
    }
    // MOTES_DRIVER_COMPRESSION=none: values stored as they are (what the codecs cost).
    if (const char* c = std::getenv("MOTES_DRIVER_COMPRESSION"); c && std::string(c) == "none")
      options.compression = motes::Compression::none;
    // MOTES_DRIVER_THREADS=k: the writer's threads (default: the cores), e.g. 1 for what one of
    // several MPI ranks sharing a node's cores does (ParallelWriteOptions' threads per rank).
    if (const char* t = std::getenv("MOTES_DRIVER_THREADS")) options.layout.threads = unsigned(std::stoul(t));
    // The writes reuse their large blocks, as a dataset writer's steps do (HugeBlockReuse,
    // core/memory.hpp), unless MOTES_DRIVER_REUSE=0 or the sources predate it.
#ifdef MOTES_HUGE_BLOCK_REUSE
    std::unique_ptr<motes::HugeBlockReuse> reuse;
    if (const char* e = std::getenv("MOTES_DRIVER_REUSE"); !e || std::string(e) != "0")
      reuse = std::make_unique<motes::HugeBlockReuse>();
#endif
    std::vector<std::pair<std::string, double>> best, best_cpu_of;
    double best_total = 1e300, best_cpu = 1e300;
    auto usage = [] {
      rusage u{};
      getrusage(RUSAGE_SELF, &u);
      return u;
    };
    auto seconds = [](const timeval& t) { return double(t.tv_sec) + 1e-6 * double(t.tv_usec); };
    for (int r = 0; r < repeats; ++r) {
      const auto t0 = std::chrono::steady_clock::now();
      const double c0 = motes::Phases::process_cpu();
      const rusage u0 = usage();
      motes::WriteSummary s = motes::write_particle_file(argv[1], columns, options);
      const rusage u1 = usage();
      const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      best_cpu = std::min(best_cpu, motes::Phases::process_cpu() - c0);
      best_total = std::min(best_total, wall);
      // Each write's own line, in ms (the phase table's parser passes it by).
      std::printf("write %d: wall %.0f ms, cpu user %.0f ms + sys %.0f ms, %ld minor page faults\n", r + 1, 1e3 * wall,
                  1e3 * (seconds(u1.ru_utime) - seconds(u0.ru_utime)), 1e3 * (seconds(u1.ru_stime) - seconds(u0.ru_stime)),
                  u1.ru_minflt - u0.ru_minflt);
      if (best.empty()) best = s.phases.seconds, best_cpu_of = s.phases.cpu;
      for (size_t k = 0; k < best.size() && k < s.phases.seconds.size(); ++k)
        if (s.phases.seconds[k].second < best[k].second) best[k] = s.phases.seconds[k], best_cpu_of[k] = s.phases.cpu[k];
    }
    const double n = double(columns.empty() ? 0 : columns[0].count);
    // Per phase, its best wall time and the process CPU time of that same run (cores busy = CPU / wall).
    for (size_t k = 0; k < best.size(); ++k)
      std::printf("%-26s %8.3f s  cpu %7.3f s\n", best[k].first.c_str(), best[k].second, best_cpu_of[k].second);
    std::printf("%-26s %8.3f s (best of %d), %.0f ns CPU per particle\n", "total", best_total, repeats, 1e9 * best_cpu / n);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  return 0;
}
