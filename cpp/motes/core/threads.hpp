// Threads: a minimal fork-join helper over a process-wide pool, the library's only way to use
// several cores (MPI, the other kind of parallelism, is parallel/).
#pragma once

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <cstdint>
#include <exception>
#include <mutex>
#include <thread>
#include <unistd.h>
#include <vector>

#include "motes/core/cancel.hpp"

namespace motes {

inline unsigned default_threads() {
  unsigned n = std::thread::hardware_concurrency();
  return n ? n : 1;
}

// A process-wide pool of worker threads, so that short parallel loops (queries
// of a fraction of a millisecond) do not pay for creating threads.
class ThreadPool {
 public:
  struct Job {
    std::function<void(unsigned)> run;
    int pending = 0;  // helper tasks queued or running; guarded by the pool's mutex
    std::condition_variable done;
  };

  // Never destroyed (workers may still wait on it at exit); made anew in a forked
  // child, which inherits the pool but not its threads.
  static ThreadPool& instance() {
    static std::atomic<ThreadPool*> pool{nullptr};
    static std::mutex creating;
    ThreadPool* p = pool.load();
    if (p && p->pid_ == ::getpid()) return *p;
    std::lock_guard lock(creating);
    p = pool.load();
    if (!p || p->pid_ != ::getpid()) {
      p = new ThreadPool(default_threads() > 1 ? default_threads() - 1 : 1);
      pool.store(p);
    }
    return *p;
  }
  static bool on_worker() { return worker_flag(); }

  // Queues `helpers` calls job->run(1..helpers); the caller runs worker 0 itself.
  void start(Job& job, unsigned helpers) {
    std::lock_guard lock(m_);
    for (unsigned k = 1; k <= helpers; ++k) queue_.push_back({&job, k});
    job.pending += int(helpers);
    wake_.notify_all();
  }
  // Drops the job's helpers that have not started, then waits for the running ones.
  void finish(Job& job) {
    std::unique_lock lock(m_);
    for (auto it = queue_.begin(); it != queue_.end();) {
      if (it->first == &job) it = queue_.erase(it), --job.pending;
      else ++it;
    }
    job.done.wait(lock, [&] { return job.pending == 0; });
  }

 private:
  std::mutex m_;
  std::condition_variable wake_;
  std::deque<std::pair<Job*, unsigned>> queue_;
  std::vector<std::thread> workers_;
  pid_t pid_ = ::getpid();

  static bool& worker_flag() {
    static thread_local bool flag = false;
    return flag;
  }
  explicit ThreadPool(unsigned n) {
    for (unsigned i = 0; i < n; ++i)
      workers_.emplace_back([this] {
        worker_flag() = true;
        for (;;) {
          std::unique_lock lock(m_);
          wake_.wait(lock, [&] { return !queue_.empty(); });
          auto [job, w] = queue_.front();
          queue_.pop_front();
          lock.unlock();
          job->run(w);
          lock.lock();
          if (--job->pending == 0) job->done.notify_all();
        }
      });
    for (auto& t : workers_) t.detach();  // live as long as the process
  }
};

// Runs body(worker, i) for i in [0, n) on up to `threads` threads (worker in
// [0, threads)), handing out indexes dynamically so uneven work balances.
// The first exception thrown is rethrown. Inside a pool worker it runs serially.
template <class F>
void parallel_for_worker(uint64_t n, unsigned threads, F&& body) {
  if (threads <= 1 || n <= 1 || ThreadPool::on_worker()) {
    for (uint64_t i = 0; i < n; ++i) body(0u, i);
    return;
  }
  std::atomic<uint64_t> next{0};
  std::exception_ptr error;
  std::mutex error_mutex;
  const Cancellation* cancel = current_cancellation();  // the caller's job: its helpers' too
  auto worker = [&](unsigned w) {
    CancelScope scope(cancel);
    try {
      for (uint64_t i; (i = next.fetch_add(1, std::memory_order_relaxed)) < n;) body(w, i);
    } catch (...) {
      std::lock_guard lock(error_mutex);
      if (!error) error = std::current_exception();
      next.store(n);
    }
  };
  unsigned t = unsigned(std::min<uint64_t>(threads, n));
  ThreadPool& pool = ThreadPool::instance();
  ThreadPool::Job job;
  job.run = worker;
  pool.start(job, t - 1);
  worker(0u);
  pool.finish(job);
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
