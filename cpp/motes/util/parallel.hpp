// A minimal fork-join helper: the library's only way to use several cores.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace motes {

inline unsigned default_threads() {
  unsigned n = std::thread::hardware_concurrency();
  return n ? n : 1;
}

// Runs body(worker, i) for i in [0, n) on up to `threads` threads (worker in
// [0, threads)), handing out indexes dynamically so uneven work balances.
// The first exception thrown is rethrown.
template <class F>
void parallel_for_worker(uint64_t n, unsigned threads, F&& body) {
  if (threads <= 1 || n <= 1) {
    for (uint64_t i = 0; i < n; ++i) body(0u, i);
    return;
  }
  std::atomic<uint64_t> next{0};
  std::exception_ptr error;
  std::mutex error_mutex;
  auto worker = [&](unsigned w) {
    try {
      for (uint64_t i; (i = next.fetch_add(1, std::memory_order_relaxed)) < n;) body(w, i);
    } catch (...) {
      std::lock_guard lock(error_mutex);
      if (!error) error = std::current_exception();
      next.store(n);
    }
  };
  unsigned t = unsigned(std::min<uint64_t>(threads, n));
  std::vector<std::thread> pool;
  pool.reserve(t - 1);
  for (unsigned k = 1; k < t; ++k) pool.emplace_back(worker, k);
  worker(0u);
  for (auto& th : pool) th.join();
  if (error) std::rethrow_exception(error);
}

template <class F>
void parallel_for(uint64_t n, unsigned threads, F&& body) {
  parallel_for_worker(n, threads, [&](unsigned, uint64_t i) { body(i); });
}

// Splits [0, n) into about `threads * 4` contiguous chunks and runs body(begin, end) on each.
template <class F>
void parallel_ranges(uint64_t n, unsigned threads, uint64_t min_chunk, F&& body) {
  uint64_t chunks = std::max<uint64_t>(1, std::min<uint64_t>(uint64_t(threads) * 4, n / std::max<uint64_t>(1, min_chunk)));
  parallel_for(chunks, threads, [&](uint64_t c) {
    uint64_t b = n * c / chunks, e = n * (c + 1) / chunks;
    if (b < e) body(b, e);
  });
}

}  // namespace motes
