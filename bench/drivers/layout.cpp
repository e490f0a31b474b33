// Profiling driver of the layout alone (build_layout: Morton sort, shallow tree, treelets,
// splice, file order) on x, y, z columns saved as .npy files, repeated: prints the layout's
// phase table (per phase the best wall time and the process CPU time of that run), CPU time
// per particle, and a checksum of the result (nodes, levels' starts, bounds, file order): two builds
// that must lay out the same data alike print the same checksum.
//
// It needs only the layout and the core's two sources, so it builds without CMake from any
// checkout (a "before" worktree too), with the flags of the Release build:
//
//   ROOT=/work/main   # or a worktree of the commit before a change
//   g++ -std=c++20 -O3 -DNDEBUG -g -pthread -I$ROOT/cpp -o /tmp/layout_driver bench/drivers/layout.cpp \
//       $ROOT/cpp/motes/particles/layout/{tree,builder,radix_sort}.cpp $ROOT/cpp/motes/core/{errors,memory}.cpp
//   /tmp/layout_driver 5 /work/data/layout/cols/{x,y,z}.npy
//   MOTES_LAYOUT_N=1000000 valgrind --tool=callgrind /tmp/layout_driver 1 /work/data/layout/cols/{x,y,z}.npy
//
// Each build also prints a line of its own (wall, user and system CPU, minor page faults): a
// process's later builds show what reuse of memory across builds saves.
//
// The builds reuse their large blocks (motes::HugeBlockReuse, as a dataset writer does) unless
// MOTES_LAYOUT_REUSE=0, or the sources predate it.
//
// MOTES_LAYOUT_N: only the first N rows. MOTES_LAYOUT_THREADS: LayoutOptions::threads.
// MOTES_LAYOUT_AOS=1: the columns interleaved (x y z x y z ...: strided views).
#include <algorithm>
#include <bit>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <sys/resource.h>

#include "motes/core/memory.hpp"
#include "motes/particles/layout/builder.hpp"
#include "npy.hpp"

using motes_drivers::Array;
using motes_drivers::load_npy;

namespace {

// A position column (float32 or float64) from its .npy file.
Array load_positions(const std::string& path) {
  Array a = load_npy(path);
  if (a.dtype != motes::DType::f32 && a.dtype != motes::DType::f64)
    throw std::runtime_error(path + ": not a float32 or float64 column");
  return a;
}

// FNV-1a over 64-bit words, mixed: enough to tell two layouts apart.
struct Checksum {
  uint64_t h = 1469598103934665603ull;
  void add(uint64_t v) {
    h ^= v;
    h *= 1099511628211ull;
    h ^= h >> 29;
  }
};

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: %s REPEATS X.npy Y.npy Z.npy\n", argv[0]);
    return 2;
  }
  try {
    Array cols[3] = {load_positions(argv[2]), load_positions(argv[3]), load_positions(argv[4])};
    uint64_t n = cols[0].count;
    if (const char* e = std::getenv("MOTES_LAYOUT_N")) n = std::min<uint64_t>(n, std::stoull(e));
    motes::ColumnView v[3];
    const char* names[3] = {"x", "y", "z"};
    for (int a = 0; a < 3; ++a) {
      v[a].spec.name = names[a];
      v[a].spec.dtype = cols[a].dtype;
      v[a].data = cols[a].bytes.get();
      v[a].count = n;
    }
    // MOTES_LAYOUT_AOS=1: the three columns interleaved in one array (a stride of three values).
    std::unique_ptr<char, decltype(&std::free)> interleaved{nullptr, &std::free};
    if (const char* e = std::getenv("MOTES_LAYOUT_AOS"); e && std::string(e) == "1") {
      const size_t w = motes::dtype_size(cols[0].dtype);
      for (int a = 1; a < 3; ++a)
        if (cols[a].dtype != cols[0].dtype) throw std::runtime_error("MOTES_LAYOUT_AOS needs columns of one type");
      interleaved.reset(static_cast<char*>(motes::huge_aligned_alloc(3 * w * n)));
      for (uint64_t i = 0; i < n; ++i)
        for (int a = 0; a < 3; ++a) std::memcpy(interleaved.get() + (3 * i + a) * w, cols[a].bytes.get() + i * w, w);
      for (int a = 0; a < 3; ++a) v[a].data = interleaved.get() + a * w, v[a].stride_bytes = int64_t(3 * w);
    }
    motes::LayoutOptions options;
    if (const char* t = std::getenv("MOTES_LAYOUT_THREADS")) options.threads = unsigned(std::stoul(t));
    const int repeats = std::stoi(argv[1]);
#ifdef MOTES_HUGE_BLOCK_REUSE
    std::unique_ptr<motes::HugeBlockReuse> reuse;
    if (const char* e = std::getenv("MOTES_LAYOUT_REUSE"); !e || std::string(e) != "0")
      reuse = std::make_unique<motes::HugeBlockReuse>();
#endif
    std::vector<std::pair<std::string, double>> best, best_cpu_of;
    double best_total = 1e300, best_cpu = 1e300;
    uint64_t sum = 0;
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
      motes::Layout layout = motes::build_layout(v[0], v[1], v[2], options);
      const rusage u1 = usage();
      const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      best_cpu = std::min(best_cpu, motes::Phases::process_cpu() - c0);
      best_total = std::min(best_total, wall);
      // In ms, so that the phase table's parser (a number, then " s") passes it by.
      std::printf("build %d: wall %.0f ms, cpu user %.0f ms + sys %.0f ms, %ld minor page faults\n", r + 1, 1e3 * wall,
                  1e3 * (seconds(u1.ru_utime) - seconds(u0.ru_utime)), 1e3 * (seconds(u1.ru_stime) - seconds(u0.ru_stime)),
                  u1.ru_minflt - u0.ru_minflt);
      if (best.empty()) best = layout.phases.seconds, best_cpu_of = layout.phases.cpu;
      for (size_t k = 0; k < best.size() && k < layout.phases.seconds.size(); ++k)
        if (layout.phases.seconds[k].second < best[k].second) best[k] = layout.phases.seconds[k], best_cpu_of[k] = layout.phases.cpu[k];
      Checksum c;
      for (const motes::TreeNode& t : layout.nodes) c.add(uint64_t(t.right) << 32 | t.own_count);
      for (uint64_t s : layout.levels.level_start) c.add(s);
      c.add(layout.levels.detail_level), c.add(layout.levels.region_depth);
      for (int a = 0; a < 3; ++a) c.add(std::bit_cast<uint64_t>(layout.bounds.lo[a])), c.add(std::bit_cast<uint64_t>(layout.bounds.hi[a]));
      for (uint64_t o : layout.order) c.add(o);
      if (r && c.h != sum) throw std::runtime_error("the layout differs from one repeat to the next");
      sum = c.h;
    }
    for (size_t k = 0; k < best.size(); ++k)
      std::printf("%-26s %8.3f s  cpu %7.3f s\n", best[k].first.c_str(), best[k].second, best_cpu_of[k].second);
    std::printf("%-26s %8.3f s (best of %d), %.0f ns CPU per particle\n", "total", best_total, repeats,
                1e9 * best_cpu / double(n));
    std::printf("checksum %016llx\n", static_cast<unsigned long long>(sum));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  return 0;
}
