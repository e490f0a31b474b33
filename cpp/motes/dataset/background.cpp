#include "motes/dataset/background.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <optional>

#include "motes/core/errors.hpp"
#include "motes/core/text.hpp"
#include "motes/core/threads.hpp"

namespace motes {

namespace {

// One array to copy: n values of `size` bytes from src (stride apart) to dst (contiguous).
struct Copy {
  const unsigned char* src;
  int64_t stride;
  unsigned char* dst;
  uint64_t n;
  size_t size;
};

// Copies in pieces of about 8 MiB taken by `threads` threads in turn.
void copy_all(const std::vector<Copy>& copies, unsigned threads) {
  constexpr uint64_t kPiece = uint64_t(8) << 20;
  struct Piece {
    size_t copy;
    uint64_t first, count;
  };
  std::vector<Piece> pieces;
  for (size_t c = 0; c < copies.size(); ++c) {
    const uint64_t per = std::max<uint64_t>(1, kPiece / copies[c].size);
    for (uint64_t i = 0; i < copies[c].n; i += per) pieces.push_back({c, i, std::min(per, copies[c].n - i)});
  }
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t k = next++; k < pieces.size(); k = next++) {
      const Piece& p = pieces[k];
      const Copy& c = copies[p.copy];
      unsigned char* dst = c.dst + p.first * c.size;
      if (c.stride == int64_t(c.size)) {
        std::memcpy(dst, c.src + p.first * c.size, p.count * c.size);
      } else {
        const unsigned char* src = c.src + int64_t(p.first) * c.stride;
        for (uint64_t i = 0; i < p.count; ++i, src += c.stride, dst += c.size) std::memcpy(dst, src, c.size);
      }
    }
  };
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  threads = unsigned(std::min<size_t>(threads, pieces.size()));
  std::vector<std::thread> helpers;
  for (unsigned t = 1; t < threads; ++t) helpers.emplace_back(work);
  work();
  for (std::thread& t : helpers) t.join();
}

}  // namespace

void StepJob::check() const {
  for (const auto& [name, columns] : species) {
    try {
      validate_columns(columns);
    } catch (const UsageError& e) {
      throw UsageError("step " + std::to_string(index) + ", species '" + name + "': " + e.what());
    }
  }
  check_attributes(attributes, "step attributes");
  if (!std::isfinite(time)) throw UsageError("step time must be a finite number, got " + number_text(time));
}

uint64_t StepJob::copy_arrays(unsigned threads) {
  std::vector<Copy> copies;
  uint64_t bytes = 0;
  auto own = [&](uint64_t n) {
    owned_.emplace_back(new unsigned char[std::max<uint64_t>(n, 1)]);
    bytes += n;
    return owned_.back().get();
  };
  for (auto& [name, columns] : species) {
    for (ColumnView& v : columns) {
      const size_t size = dtype_size(v.spec.dtype);
      if (v.count == 0 || v.data == nullptr) continue;
      const uint64_t n = v.stride() == 0 ? 1 : v.count;  // a value broadcast stays one value
      unsigned char* dst = own(n * size);
      copies.push_back({static_cast<const unsigned char*>(v.data), v.stride() == 0 ? int64_t(size) : v.stride(), dst,
                        n, size});
      v.data = dst;
      if (v.stride() != 0) v.stride_bytes.reset();
    }
  }
  for (FieldInput& f : fields) {
    const size_t size = dtype_size(f.spec.dtype);
    const uint64_t n = f.spec.sample_count();
    for (const void*& values : f.values) {
      if (values == nullptr) continue;
      unsigned char* dst = own(n * size);
      copies.push_back({static_cast<const unsigned char*>(values), int64_t(size), dst, n, size});
      values = dst;
    }
  }
  copy_all(copies, threads);
  return bytes;
}

const void* StepJob::keep_copy(const void* src, uint64_t bytes) {
  owned_.emplace_back(new unsigned char[std::max<uint64_t>(bytes, 1)]);
  if (bytes) std::memcpy(owned_.back().get(), src, bytes);
  return owned_.back().get();
}

BackgroundWriter::BackgroundWriter(Dataset* dataset, size_t max_pending, OnBacklog on_backlog, int nice)
    : dataset_(dataset), max_pending_(max_pending), on_backlog_(on_backlog), nice_(nice) {
  if (nice < 0 || nice > 19) throw UsageError("nice must be 0 to 19 (how much nicer the writer's threads run), got " +
                                              std::to_string(nice));
  if (max_pending == 0) throw UsageError("max_pending must be at least 1 (steps queued or being written)");
  if (on_backlog == OnBacklog::skip && !dataset)
    throw UsageError("on_backlog 'skip' needs a dataset written by this process alone: a collective write would "
                     "have every rank skip the same steps");
  worker_ = std::thread([this] { run(); });
}

BackgroundWriter::~BackgroundWriter() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  worker_.join();
}

void BackgroundWriter::rethrow_unreported_locked() {
  if (unreported_.empty()) return;
  std::exception_ptr e = unreported_.front();
  unreported_.pop_front();
  std::rethrow_exception(e);
}

BackgroundWriter::Ticket BackgroundWriter::queue_locked(StepJob job, bool keep, bool skip, const std::string& reason) {
  const Ticket t = next_++;
  outcomes_[t].keep = keep;  // in flight
  if (skip) {
    StepJob record;  // what the manifest lists; the arrays (or their copies) are let go now
    record.index = job.index;
    record.time = job.time;
    record.options.sync = job.options.sync;
    queue_.push_back({t, keep, std::move(record), true, reason});
    ++skips_;
  } else {
    queue_.push_back({t, keep, std::move(job), false, {}});
    ++in_flight_;
  }
  return t;
}

BackgroundWriter::Ticket BackgroundWriter::submit(StepJob job, bool keep, bool* skipped) {
  std::unique_lock lock(mutex_);
  rethrow_unreported_locked();
  const bool skip = on_backlog_ == OnBacklog::skip && in_flight_ >= max_pending_;
  if (!skip) {
    changed_.wait(lock, [&] { return in_flight_ < max_pending_ || !unreported_.empty(); });
    rethrow_unreported_locked();
  }
  if (skipped) *skipped = skip;
  const Ticket t = queue_locked(std::move(job), keep, skip);
  lock.unlock();
  changed_.notify_all();
  return t;
}

BackgroundWriter::Ticket BackgroundWriter::skip(int64_t index, double time, bool sync, bool keep,
                                                const std::string& reason) {
  if (reason == "backlog" && on_backlog_ != OnBacklog::skip)
    throw UsageError("this background writer blocks on a backlog: it skips no step for one");
  if (!dataset_) throw UsageError("a collective background writer skips no step: every rank would have to skip it");
  if (reason.empty() || reason.size() > 200) throw UsageError("a skipped step's reason must be 1 to 200 characters");
  if (!std::isfinite(time)) throw UsageError("step time must be a finite number, got " + number_text(time));
  StepJob record;
  record.index = index;
  record.time = time;
  record.options.sync = sync;
  std::unique_lock lock(mutex_);
  rethrow_unreported_locked();
  const Ticket t = queue_locked(std::move(record), keep, true, reason);
  lock.unlock();
  changed_.notify_all();
  return t;
}

bool BackgroundWriter::full() const {
  std::lock_guard lock(mutex_);
  return in_flight_ >= max_pending_;
}

void BackgroundWriter::list_skipped(std::unique_lock<std::mutex>& lock, std::vector<Queued>& batch) {
  lock.unlock();
  std::vector<SkippedStep> steps;
  for (const Queued& q : batch) steps.push_back({q.job.index, q.job.time, q.reason});
  std::vector<bool> listed;
  std::exception_ptr error;
  try {
    listed = dataset_->record_skipped(steps, batch.back().job.options.sync);
  } catch (...) {
    error = std::current_exception();
  }
  lock.lock();
  if (error) unreported_.push_back(error);  // once for the batch: one manifest write failed
  for (size_t i = 0; i < batch.size(); ++i) {
    StepOutcome out;
    out.done = true;
    if (error) {
      out.error = error;
    } else if (!listed[i]) {
      out.error = std::make_exception_ptr(UsageError("step " + std::to_string(batch[i].job.index) +
                                                     " already exists in '" + dataset_->dir() +
                                                     "': it was written, not skipped"));
      unreported_.push_back(out.error);
    } else {
      out.skipped = true;
      out.reason = batch[i].reason;
    }
    if (batch[i].keep)
      outcomes_[batch[i].ticket].out = std::move(out);
    else
      outcomes_.erase(batch[i].ticket);
    --skips_;
  }
}

void BackgroundWriter::run() {
  std::optional<PoolRoute> route;  // a nicer writer's parallel loops run on a pool as nice as its thread
  if (nice_ > 0) {
    const int nice = std::min(19, process_nice() + nice_);
    raise_thread_nice(nice);
    route.emplace(&ThreadPool::lowered(nice));
  }
  for (;;) {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, and everything written
    if (queue_.front().skip) {  // the skipped steps at the front: listed with one manifest write
      std::vector<Queued> batch;
      while (!queue_.empty() && queue_.front().skip) {
        batch.push_back(std::move(queue_.front()));
        queue_.pop_front();
      }
      busy_ = true;
      since_ = std::chrono::steady_clock::now();
      list_skipped(lock, batch);
      busy_ = false;
      since_ = std::chrono::steady_clock::now();
      lock.unlock();
      changed_.notify_all();
      continue;
    }
    Queued q = std::move(queue_.front());
    queue_.pop_front();
    const auto start = std::chrono::steady_clock::now();
    busy_ = true;
    since_ = start;
    lock.unlock();
    StepOutcome out;
    try {
      if (q.job.custom)
        q.job.custom(out);
      else if (dataset_)
        dataset_->append_step(q.job.index, q.job.time, q.job.attributes, q.job.species, q.job.options,
                              &out.summaries, q.job.fields, &out.field_summaries);
      else
        throw InternalError("a background writer without a dataset was given a step to append");
    } catch (...) {
      out.error = std::current_exception();
    }
    out.done = true;
    const int64_t index = q.job.index;
    q.job = StepJob{};  // the copies are freed before the next step is taken
    lock.lock();
    if (out.error) unreported_.push_back(out.error);
    busy_ = false;
    since_ = std::chrono::steady_clock::now();
    if (!out.error) {
      any_written_ = true;
      last_written_ = index;
      ++written_;
      last_step_seconds_ = std::chrono::duration<double>(since_ - start).count();
    }
    if (q.keep)
      outcomes_[q.ticket].out = std::move(out);
    else
      outcomes_.erase(q.ticket);
    --in_flight_;
    lock.unlock();
    changed_.notify_all();
  }
}

bool BackgroundWriter::wait(Ticket t, double timeout_s) const {
  std::unique_lock lock(mutex_);
  auto finished = [&] {
    auto it = outcomes_.find(t);
    return it == outcomes_.end() || it->second.out.done;
  };
  if (timeout_s < 0) {
    changed_.wait(lock, finished);
    return true;
  }
  return changed_.wait_for(lock, std::chrono::duration<double>(timeout_s), finished);
}

StepOutcome BackgroundWriter::outcome(Ticket t) {
  std::lock_guard lock(mutex_);
  auto it = outcomes_.find(t);
  if (it == outcomes_.end() || !it->second.keep)
    throw UsageError("step ticket " + std::to_string(t) + " is unknown, was not kept, or its outcome was read");
  if (!it->second.out.done) return StepOutcome{};
  StepOutcome out = std::move(it->second.out);
  outcomes_.erase(it);
  return out;
}

void BackgroundWriter::flush() {
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [&] { return in_flight_ == 0 && skips_ == 0; });
  rethrow_unreported_locked();
}

size_t BackgroundWriter::pending() const {
  std::lock_guard lock(mutex_);
  return in_flight_;
}

BackgroundWriter::Pace BackgroundWriter::pace() const {
  std::lock_guard lock(mutex_);
  Pace p;
  p.written = written_;
  p.last_step_seconds = last_step_seconds_;
  // Idle only with nothing queued: the writer may not have woken for a step just submitted.
  if (!busy_ && queue_.empty())
    p.idle_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - since_).count();
  return p;
}

bool BackgroundWriter::last_written(int64_t* step) const {
  std::lock_guard lock(mutex_);
  if (any_written_ && step) *step = last_written_;
  return any_written_;
}

}  // namespace motes
