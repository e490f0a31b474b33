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

namespace {

// One run of the pipeline: the tasks are numbered window by window (a window's `parts`
// gather tasks, then its column tasks), taken in order by every thread; each waits for what
// it needs (the window's rows gathered, the column's window before coded, the slot free).
class ColumnPipeline {
 public:
  ColumnPipeline(std::vector<ColumnPlan>& plans, const Layout& layout, const std::vector<Run>& runs_by_start,
                 uint32_t block_values, uint64_t window, unsigned threads, const RowStage* stage, RawWriter& out,
                 const std::function<void(unsigned)>& place, const std::function<void(uint64_t)>& progress)
      : plans_(plans), layout_(layout), runs_by_start_(runs_by_start), block_values_(block_values), window_(window),
        threads_(threads), stage_(stage), out_(out), place_(place), progress_(progress) {}
  void run();

 private:
  // Each returns false, doing nothing, once another task failed.
  bool gather(uint64_t w, uint64_t k, uint64_t first, uint64_t rows);
  bool code(unsigned worker, uint64_t w, uint64_t c, uint64_t first, uint64_t rows);
  void place_ready(std::unique_lock<std::mutex>& lock);
  void report(uint64_t now_placed);

  std::vector<ColumnPlan>& plans_;
  const Layout& layout_;
  const std::vector<Run>& runs_by_start_;
  const uint32_t block_values_;
  const uint64_t window_;
  const unsigned threads_;
  const RowStage* stage_;
  RawWriter& out_;
  const std::function<void(unsigned)>& place_;
  const std::function<void(uint64_t)>& progress_;
  uint64_t n_ = 0, blocks_ = 0, windows_ = 0, columns_ = 0, window_rows_ = 0, parts_ = 0, per_window_ = 0;
  BigVector<unsigned char> staged_[2];
  std::vector<uint64_t> gathered_;  // per window: parts gathered
  std::mutex m_;
  std::condition_variable changed_;
  std::vector<uint64_t> coded_;  // per column: windows coded
  std::vector<uint64_t> left_;   // per window: columns still coding it
  uint64_t placed_ = 0;          // windows placed
  bool placing_ = false, failed_ = false;
  std::atomic<uint64_t> next_{0};
  uint64_t reported_ = 0;  // windows reported through progress (by the calling thread only)
};

void ColumnPipeline::run() {
  n_ = layout_.order.size();
  blocks_ = (n_ + block_values_ - 1) / block_values_;
  windows_ = (blocks_ + window_ - 1) / window_, columns_ = plans_.size();
  if (windows_ == 0 || columns_ == 0) return;
  // Block tables at their full size before any task runs: the placing thread fixes the
  // offsets of one window's blocks while the column tasks fill in the next window's.
  for (ColumnPlan& p : plans_)
    for (StreamOut* s : {&p.values, &p.codes})
      if (!s->plan.raw()) s->blocks.resize(blocks_);
  // With a stage, each window's rows are gathered into a window buffer (slot w % 2, one
  // region per column) by `parts` tasks that come before the window's column tasks.
  window_rows_ = window_ * block_values_;
  parts_ = stage_ ? std::min<uint64_t>(window_, 2 * uint64_t(std::max(1u, threads_))) : 0;
  per_window_ = parts_ + columns_;
  if (stage_)
    for (auto& buffer : staged_) buffer.resize(stage_->region(columns_, std::min(n_, window_rows_)));
  gathered_.assign(windows_, 0);
  coded_.assign(columns_, 0);
  left_.assign(windows_, columns_);
  parallel_for_worker(threads_, threads_, [&](unsigned worker, uint64_t) {
    try {
      for (uint64_t t; (t = next_.fetch_add(1)) < windows_ * per_window_;) {
        const uint64_t w = t / per_window_, first = w * window_rows_, rows = std::min(n_, first + window_rows_) - first;
        const bool going = t % per_window_ < parts_ ? gather(w, t % per_window_, first, rows)
                                                    : code(worker, w, t % per_window_ - parts_, first, rows);
        if (!going) return;  // another task failed
      }
    } catch (...) {
      std::lock_guard lock(m_);
      failed_ = true, placing_ = false;
      changed_.notify_all();
      throw;
    }
  });
  for (ColumnPlan& p : plans_) p.staged = nullptr;  // the window buffers go now
  report(placed_);
}

// Gather task k of window w: its share of the window's rows into the window buffer.
bool ColumnPipeline::gather(uint64_t w, uint64_t k, uint64_t first, uint64_t rows) {
  {
    // The window two before (the same buffer) is coded by every column.
    std::unique_lock lock(m_);
    changed_.wait(lock, [&] { return failed_ || w < 2 || left_[w - 2] == 0; });
    if (failed_) return false;
  }
  const uint64_t r0 = rows * k / parts_, r1 = rows * (k + 1) / parts_;
  stage_->gather(layout_.order.data() + first + r0, r1 - r0, staged_[w % 2].data(), rows, r0);
  std::lock_guard lock(m_);
  ++gathered_[w];
  changed_.notify_all();
  return true;
}

// Column task: column c's blocks of window w coded; then every window complete is placed.
bool ColumnPipeline::code(unsigned worker, uint64_t w, uint64_t c, uint64_t first, uint64_t rows) {
  {
    // The column's window before is coded, the window two before (the same slot)
    // placed, and this window's rows gathered.
    std::unique_lock lock(m_);
    changed_.wait(lock, [&] { return failed_ || (coded_[c] == w && placed_ + 1 >= w && gathered_[w] == parts_); });
    if (failed_) return false;
  }
  ColumnPlan& p = plans_[c];
  p.values.slot = p.codes.slot = unsigned(w % 2);
  p.staged = stage_ ? staged_[w % 2].data() + stage_->region(c, rows) : nullptr;
  p.staged_first = first;
  write_blocks(p, layout_, runs_by_start_, block_values_, w * window_, std::min(blocks_, (w + 1) * window_), out_);
  uint64_t now_placed;
  {
    std::unique_lock lock(m_);
    ++coded_[c];
    --left_[w];
    changed_.notify_all();
    place_ready(lock);
    now_placed = placed_;
  }
  if (worker == 0) report(now_placed);  // progress callbacks stay on the caller's thread
  return true;
}

// Places every window that is complete, in order; one thread at a time (the others go on coding).
void ColumnPipeline::place_ready(std::unique_lock<std::mutex>& lock) {
  while (!placing_ && placed_ < windows_ && left_[placed_] == 0) {
    placing_ = true;
    const uint64_t w = placed_;
    lock.unlock();
    place_(unsigned(w % 2));  // on failure the catch in run() marks the run failed
    lock.lock();
    placing_ = false;
    ++placed_;
    changed_.notify_all();
  }
}

void ColumnPipeline::report(uint64_t now_placed) {
  if (now_placed > reported_) progress_(std::min(blocks_, now_placed * window_)), reported_ = now_placed;
}

}  // namespace

void write_columns(std::vector<ColumnPlan>& plans, const Layout& layout, const std::vector<Run>& runs_by_start,
                   uint32_t block_values, uint64_t window, unsigned threads, const RowStage* stage, RawWriter& out,
                   const std::function<void(unsigned)>& place, const std::function<void(uint64_t)>& progress) {
  ColumnPipeline(plans, layout, runs_by_start, block_values, window, threads, stage, out, place, progress).run();
}

}  // namespace motes
