// Threads: a minimal fork-join helper over a process-wide pool, the library's only way to use
// several cores (MPI, the other kind of parallelism, is parallel/).
#pragma once

#include <sys/resource.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/syscall.h>
#endif

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "motes/core/cancel.hpp"

namespace motes {

inline unsigned default_threads() {
  unsigned n = std::thread::hardware_concurrency();
  return n ? n : 1;
}

// Nice values (Linux keeps one per thread; raising it needs no privilege, lowering it back
// would): the process's (its first thread's), the calling thread's, and the calling thread's
// raised to `nice` (a thread already there or above is left as it is). Elsewhere than Linux
// they are 0 and nothing changes.
inline int nice_of([[maybe_unused]] long id) {
#ifdef __linux__
  errno = 0;
  const int n = ::getpriority(PRIO_PROCESS, id_t(id));
  return errno ? 0 : n;
#else
  return 0;
#endif
}
inline int process_nice() { return nice_of(::getpid()); }
#ifdef __linux__
inline int thread_nice() { return nice_of(::syscall(SYS_gettid)); }
inline void raise_thread_nice(int nice) {
  if (thread_nice() < nice) (void)::setpriority(PRIO_PROCESS, id_t(::syscall(SYS_gettid)), std::min(nice, 19));
}
#else
inline int thread_nice() { return 0; }
inline void raise_thread_nice(int) {}
#endif

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
  // child, which inherits the pool but not its threads. A thread routed to a lowered pool
  // (PoolRoute) gets that one.
  static ThreadPool& instance() {
    if (ThreadPool* routed = route()) return *routed;
    static std::atomic<ThreadPool*> pool{nullptr};
    static std::mutex creating;
    ThreadPool* p = pool.load();
    if (p && p->pid_ == ::getpid()) return *p;
    std::lock_guard lock(creating);
    p = pool.load();
    if (!p || p->pid_ != ::getpid()) {
      p = new ThreadPool(helper_count());
      pool.store(p);
    }
    return *p;
  }
  static bool on_worker() { return worker_flag(); }

  // A process-wide pool like instance()'s whose workers run at nice value `nice` (0-19): the
  // work of a background writer that must not take the cores from the simulation beside it.
  static ThreadPool& lowered(int nice) {
    static std::mutex m;
    static std::map<int, ThreadPool*> pools;  // never destroyed, as instance()'s
    std::lock_guard lock(m);
    ThreadPool*& p = pools[nice];
    if (!p || p->pid_ != ::getpid()) p = new ThreadPool(helper_count(), nice);
    return *p;
  }
  // The pool that parallel loops started on this thread use instead of instance()'s.
  static ThreadPool*& route() {
    static thread_local ThreadPool* p = nullptr;
    return p;
  }

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

  static unsigned helper_count() { return default_threads() > 1 ? default_threads() - 1 : 1; }  // the caller is one
  static bool& worker_flag() {
    static thread_local bool flag = false;
    return flag;
  }
  explicit ThreadPool(unsigned n, int nice = 0) {
    for (unsigned i = 0; i < n; ++i)
      workers_.emplace_back([this, nice] {
        worker_flag() = true;
        if (nice > 0) raise_thread_nice(nice);
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

// Routes the calling thread's parallel loops to `pool` while it lives.
class PoolRoute {
 public:
  explicit PoolRoute(ThreadPool* pool) : previous_(ThreadPool::route()) { ThreadPool::route() = pool; }
  ~PoolRoute() { ThreadPool::route() = previous_; }
  PoolRoute(const PoolRoute&) = delete;
  PoolRoute& operator=(const PoolRoute&) = delete;

 private:
  ThreadPool* previous_;
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
