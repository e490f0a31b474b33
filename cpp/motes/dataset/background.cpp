#include "motes/dataset/background.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>

#include "motes/core/errors.hpp"
#include "motes/core/text.hpp"

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

BackgroundWriter::BackgroundWriter(Dataset* dataset, size_t max_pending)
    : dataset_(dataset), max_pending_(max_pending) {
  if (max_pending == 0) throw UsageError("max_pending must be at least 1 (steps queued or being written)");
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

BackgroundWriter::Ticket BackgroundWriter::submit(StepJob job, bool keep) {
  std::unique_lock lock(mutex_);
  rethrow_unreported_locked();
  changed_.wait(lock, [&] { return in_flight_ < max_pending_ || !unreported_.empty(); });
  rethrow_unreported_locked();
  const Ticket t = next_++;
  outcomes_[t].keep = keep;  // in flight
  queue_.push_back({t, keep, std::move(job)});
  ++in_flight_;
  lock.unlock();
  changed_.notify_all();
  return t;
}

void BackgroundWriter::run() {
  for (;;) {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, and everything written
    Queued q = std::move(queue_.front());
    queue_.pop_front();
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
    if (out.error) {
      unreported_.push_back(out.error);
    } else {
      any_written_ = true;
      last_written_ = index;
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
  changed_.wait(lock, [&] { return in_flight_ == 0; });
  rethrow_unreported_locked();
}

size_t BackgroundWriter::pending() const {
  std::lock_guard lock(mutex_);
  return in_flight_;
}

bool BackgroundWriter::last_written(int64_t* step) const {
  std::lock_guard lock(mutex_);
  if (any_written_ && step) *step = last_written_;
  return any_written_;
}

}  // namespace motes
