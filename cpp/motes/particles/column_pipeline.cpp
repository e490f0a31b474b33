// The column passes of a write as a pipeline of (window, column) tasks: see write_columns
// in column_writer.hpp. A barrier per window left a core idle while the last column of
// each window finished (about half a column task per window).
#include <atomic>
#include <condition_variable>
#include <exception>
#include <mutex>

#include "motes/core/memory.hpp"
#include "motes/core/threads.hpp"
#include "motes/particles/column_writer.hpp"

namespace motes {

void write_columns(std::vector<ColumnPlan>& plans, const Layout& layout, const std::vector<Run>& runs_by_start,
                   uint32_t block_values, uint64_t window, unsigned threads, const RowStage* stage, RawWriter& out,
                   const std::function<void(unsigned)>& place, const std::function<void(uint64_t)>& progress) {
  const uint64_t n = layout.order.size();
  const uint64_t blocks = (n + block_values - 1) / block_values;
  const uint64_t windows = (blocks + window - 1) / window, columns = plans.size();
  if (windows == 0 || columns == 0) return;
  // Block tables at their full size before any task runs: the placing thread fixes the
  // offsets of one window's blocks while the column tasks fill in the next window's.
  for (ColumnPlan& p : plans)
    for (StreamOut* s : {&p.values, &p.codes})
      if (!s->plan.raw()) s->blocks.resize(blocks);
  // With a stage, each window's rows are gathered into a window buffer (slot w % 2, one
  // region per column) by `parts` tasks that come before the window's column tasks.
  const uint64_t window_rows = window * block_values;
  const uint64_t parts = stage ? std::min<uint64_t>(window, 2 * uint64_t(std::max(1u, threads))) : 0;
  const uint64_t per_window = parts + columns;
  BigVector<unsigned char> staged[2];
  if (stage)
    for (auto& buffer : staged) buffer.resize(stage->region(columns, std::min(n, window_rows)));
  std::vector<uint64_t> gathered(windows, 0);  // per window: parts gathered
  std::mutex m;
  std::condition_variable changed;
  std::vector<uint64_t> coded(columns, 0);  // per column: windows coded
  std::vector<uint64_t> left(windows, columns);  // per window: columns still coding it
  uint64_t placed = 0;  // windows placed
  bool placing = false, failed = false;
  std::atomic<uint64_t> next{0};
  // Places every window that is complete, in order; one thread at a time (the others go on coding).
  auto place_ready = [&](std::unique_lock<std::mutex>& lock) {
    while (!placing && placed < windows && left[placed] == 0) {
      placing = true;
      const uint64_t w = placed;
      lock.unlock();
      place(unsigned(w % 2));  // on failure the catch below marks the run failed
      lock.lock();
      placing = false;
      ++placed;
      changed.notify_all();
    }
  };
  uint64_t reported = 0;  // windows reported through progress (by the calling thread only)
  auto report = [&](uint64_t now_placed) {
    if (now_placed > reported) progress(std::min(blocks, now_placed * window)), reported = now_placed;
  };
  parallel_for_worker(threads, threads, [&](unsigned worker, uint64_t) {
    try {
      for (uint64_t t; (t = next.fetch_add(1)) < windows * per_window;) {
        const uint64_t w = t / per_window, first = w * window_rows, rows = std::min(n, first + window_rows) - first;
        if (t % per_window < parts) {
          {
            // The window two before (the same buffer) is coded by every column.
            std::unique_lock lock(m);
            changed.wait(lock, [&] { return failed || w < 2 || left[w - 2] == 0; });
            if (failed) return;
          }
          const uint64_t k = t % per_window, r0 = rows * k / parts, r1 = rows * (k + 1) / parts;
          stage->gather(layout.order.data() + first + r0, r1 - r0, staged[w % 2].data(), rows, r0);
          std::lock_guard lock(m);
          ++gathered[w];
          changed.notify_all();
          continue;
        }
        const uint64_t c = t % per_window - parts;
        {
          // The column's window before is coded, the window two before (the same slot)
          // placed, and this window's rows gathered.
          std::unique_lock lock(m);
          changed.wait(lock, [&] { return failed || (coded[c] == w && placed + 1 >= w && gathered[w] == parts); });
          if (failed) return;
        }
        ColumnPlan& p = plans[c];
        p.values.slot = p.codes.slot = unsigned(w % 2);
        p.staged = stage ? staged[w % 2].data() + stage->region(c, rows) : nullptr;
        p.staged_first = first;
        write_blocks(p, layout, runs_by_start, block_values, w * window, std::min(blocks, (w + 1) * window), out);
        uint64_t now_placed;
        {
          std::unique_lock lock(m);
          ++coded[c];
          --left[w];
          changed.notify_all();
          place_ready(lock);
          now_placed = placed;
        }
        if (worker == 0) report(now_placed);  // progress callbacks stay on the caller's thread
      }
    } catch (...) {
      std::lock_guard lock(m);
      failed = true, placing = false;
      changed.notify_all();
      throw;
    }
  });
  for (ColumnPlan& p : plans) p.staged = nullptr;  // the window buffers go now
  report(placed);
}

}  // namespace motes
