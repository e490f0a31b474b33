#include "motes/query/selection.hpp"

#include <algorithm>
#include <cstring>
#include <mutex>
#include <type_traits>

#include "motes/container/block_stream.hpp"
#include "motes/core/threads.hpp"

namespace motes {

Selection::Selection(Query& query) : collection_(query.collection_ptr()), cancel_(query.cancellation()) {
  struct Chunk {
    uint32_t part;
    std::vector<Segment> segments;
  };
  std::vector<Chunk> chunks;
  std::mutex m;
  query.run([&](unsigned, size_t chunk, uint32_t part, std::vector<Segment>& segs) {
    std::lock_guard lock(m);
    if (chunks.size() <= chunk) chunks.resize(chunk + 1);
    chunks[chunk] = {part, std::move(segs)};
  });
  counters_ = query.counters();
  if (chunks.size() == 1) {  // one chunk (a small selection, an index's rows): its runs, joined already
    segments_ = std::move(chunks[0].segments);
    part_of_.assign(segments_.size(), chunks[0].part);
  } else {
    size_t total = 0;
    for (const auto& c : chunks) total += c.segments.size();
    segments_.reserve(total);
    part_of_.reserve(total);
    for (const auto& c : chunks)
      for (const Segment& s : c.segments) {
        if (!part_of_.empty() && part_of_.back() == c.part && segments_.back().start + segments_.back().count == s.start) {
          segments_.back().count += s.count;
          continue;
        }
        segments_.push_back(s);
        part_of_.push_back(c.part);
      }
  }
  offsets_.resize(segments_.size() + 1);
  offsets_[0] = 0;
  for (size_t k = 0; k < segments_.size(); ++k) offsets_[k + 1] = offsets_[k] + segments_[k].count;
  for (size_t k = 0; k < segments_.size(); ++k)
    if (k == 0 || part_of_[k] != part_of_[k - 1]) part_begin_.push_back(k);
  part_begin_.push_back(segments_.size());
  // A covered part's selection is its tail hits' rows, in order (checked: else read as any part).
  for (size_t k = 0; k < segments_.size();) {
    const size_t end = part_end(k);
    if (auto hits = query.covered(part_of_[k]); hits && offsets_[end] - offsets_[k] == hits->rows.size()) {
      bool same = true;
      for (size_t j = k, i = 0; same && j < end; ++j)
        for (uint64_t r = segments_[j].start; same && r < segments_[j].start + segments_[j].count; ++r)
          same = hits->rows[i++] == r;
      if (same) covered_.push_back({part_of_[k], offsets_[k], std::move(hits)});
    }
    k = end;
  }
}

template <class Emit>
void Selection::visit_covered(size_t column, uint64_t row_begin, uint64_t row_end, const Emit& emit) const {
  std::unique_ptr<uint64_t[]> buffer;  // 8-byte aligned for every dtype; not zeroed
  uint64_t held = 0;
  for (const Covered& c : covered_) {
    const uint64_t a = std::max(row_begin, c.first), b = std::min(row_end, c.first + c.hits->rows.size());
    if (a >= b || !c.hits->covers(uint32_t(column))) continue;
    if (held < b - a) buffer.reset(new uint64_t[b - a]), held = b - a;
    c.hits->gather(uint32_t(column), a - c.first, b - a, buffer.get());
    dispatch_dtype(collection_->schema()[column].dtype, [&](auto tag) {
      using T = decltype(tag);
      emit(reinterpret_cast<const T*>(buffer.get()), a, b);
    });
  }
}

uint64_t Selection::covered_rows(size_t column) const {
  uint64_t n = 0;
  for (const Covered& c : covered_)
    if (c.hits->covers(uint32_t(column))) n += c.hits->rows.size();
  return n;
}

size_t Selection::segment_of(uint64_t row) const {
  return size_t(std::upper_bound(offsets_.begin(), offsets_.end(), row) - offsets_.begin()) - 1;
}

size_t Selection::part_end(size_t k) const { return *std::upper_bound(part_begin_.begin(), part_begin_.end(), k); }

// The column's values in every part the rows touch (opened already by the query): in place
// when they are (base), else read through a BlockReader per thread (stream).
struct Selection::ColumnParts {
  std::vector<const char*> base;
  std::vector<const BlockStream*> stream;
  std::vector<bool> covered;  // read from a covering tail (visit_covered) instead
};

Selection::ColumnParts Selection::column_parts(size_t column, uint64_t row_begin, uint64_t row_end, unsigned threads) const {
  ColumnParts c{std::vector<const char*>(collection_->part_count(), nullptr),
                std::vector<const BlockStream*>(collection_->part_count(), nullptr),
                std::vector<bool>(collection_->part_count(), false)};
  for (const Covered& cv : covered_) c.covered[cv.part] = cv.hits->covers(uint32_t(column));
  for (size_t k = segment_of(row_begin), k1 = segment_of(row_end - 1) + 1; k < k1; k = part_end(k))
    if (const uint32_t p = part_of_[k]; !c.stream[p] && !c.covered[p]) {
      auto file = collection_->part(p);
      file->check_unchanged();
      c.stream[p] = &file->values(column);
      c.base[p] = reinterpret_cast<const char*>(file->values(column).in_place());
    }
  // Values read in place are checked block by block before use; the blocks a large gather
  // touches are checked first, on the query's threads.
  if (row_end - row_begin >= 4096)
    for (uint32_t p = 0; p < c.base.size(); ++p) {
      if (!c.base[p] || c.covered[p] || c.stream[p]->all_checked()) continue;
      std::vector<uint64_t> blocks;
      for (size_t k = segment_of(row_begin), k1 = segment_of(row_end - 1) + 1; k < k1; ++k)
        if (part_of_[k] == p) c.stream[p]->blocks_of(segments_[k].start, segments_[k].count, blocks);
      c.stream[p]->check(std::move(blocks), threads);
    }
  return c;
}

// Visits rows [a, b) of the selection, on one thread: emit(values, r0, r1) per segment.
template <class T, class Emit>
void Selection::visit_rows(const ColumnParts& parts, uint64_t a, uint64_t b, const Emit& emit) const {
  // Scattered rows (short segments: a filtered result) are prefetched this many segments
  // ahead, in place or in the block held: a value per cache line, often per page, so the
  // loads wait on memory, and most of all after an idle pause has left the caches cold.
  constexpr uint64_t kAhead = 16, kSparse = 256;
  if (a >= b) return;
  BlockReader reader;
  // The decoded values last obtained, [held_first, held_last) of part held_part: segments
  // inside them (most, for a filtered result) need no call into the reader.
  const T* held = nullptr;
  uint64_t held_first = 0, held_last = 0;
  uint32_t part = UINT32_MAX;  // the part of the segments being visited, and its values
  const T* from_base = nullptr;
  const BlockStream* s = nullptr;
  uint64_t checked_first = 0, checked_last = 0;  // values of whole blocks checked, in place
  // A block whose selected rows are few (under kSparse) is read where its values lie when it
  // holds packed words (a word per row, codec::AddressableBlock) instead of decoded whole.
  codec::AddressableBlock view;
  std::vector<unsigned char> view_buf;
  uint64_t view_block = UINT64_MAX;  // the block `view` and `sparse` are about
  bool sparse = false;
  T picked[16];
  for (size_t k = segment_of(a), k1 = segment_of(b - 1) + 1; k < k1; ++k) {
    if (parts.covered[part_of_[k]]) {  // visit_covered reads them
      k = part_end(k) - 1;
      continue;
    }
    const uint64_t r0 = std::max(offsets_[k], a), r1 = std::min(offsets_[k + 1], b), m = r1 - r0;
    const uint64_t first = segments_[k].start + (r0 - offsets_[k]);
    if (part_of_[k] != part) {
      part = part_of_[k];
      from_base = reinterpret_cast<const T*>(parts.base[part]);
      s = parts.stream[part];
      held = nullptr, held_first = held_last = 0;
      checked_first = checked_last = 0;
      view_block = UINT64_MAX;
    }
    // A short segment of this part kAhead on: its values are prefetched (scattered rows).
    const bool ahead = m < 16 && k + kAhead < k1 && part_of_[k + kAhead] == part;
    const T* from;
    if (from_base) {
      // In place: each block's checksum is checked before its first value is read.
      if (first < checked_first || first + m > checked_last) {
        const uint64_t per = s->per_block();
        s->check(first, m);
        checked_first = first / per * per, checked_last = std::max(checked_first + per, (first + m + per - 1) / per * per);
      }
      from = from_base + first;
      if (ahead) __builtin_prefetch(from_base + segments_[k + kAhead].start);
    } else if (first - held_first < held_last - held_first && first + m <= held_last) {  // held is null: an empty range
      from = held + (first - held_first);
      if (ahead && segments_[k + kAhead].start - held_first < held_last - held_first)  // in the held block
        __builtin_prefetch(held + (segments_[k + kAhead].start - held_first));
    } else {
      const uint64_t per = s->per_block(), block_first = first / per * per;
      if (m <= 16 && first + m <= block_first + per && s->is_coded()) {
        if (view_block != block_first / per) {
          view_block = block_first / per;
          uint64_t rows = 0;  // the rows selected in this block, up to kSparse
          for (size_t j = k; j < k1 && part_of_[j] == part && segments_[j].start < block_first + per && rows < kSparse; ++j)
            rows += segments_[j].count;
          sparse = rows < kSparse && s->addressable(view_block, view, view_buf) && !view.needs_codes();
        }
        if (sparse) {
          for (uint64_t i = 0; i < m; ++i)
            if (!view.value(size_t(first + i - block_first), nullptr, nullptr, reinterpret_cast<unsigned char*>(picked + i)))
              throw FormatError(s->source().name() + ": " + s->what() + ", block " + std::to_string(view_block) +
                                ": a packed word lies outside its block");
          emit(static_cast<const T*>(picked), r0, r1);
          continue;
        }
      }
      if (first + m <= block_first + per) {  // inside one block: hold the whole block
        const uint64_t block_n = std::min(per, s->count() - block_first);
        held = reader.values<T>(*s, block_first, block_n);
        held_first = block_first, held_last = block_first + block_n;
        from = held + (first - held_first);
      } else {
        held = nullptr, held_first = held_last = 0;
        if constexpr (requires { emit.template into<T>(r0); }) {  // a copy: straight into place
          s->read(first, m, emit.template into<T>(r0));
          continue;
        }
        from = reader.values<T>(*s, first, m);  // across blocks, in the reader's scratch
      }
    }
    emit(from, r0, r1);
  }
}

template <class Emit>
void Selection::visit(size_t column, uint64_t row_begin, uint64_t row_end, unsigned threads, bool hint,
                      const Emit& emit) const {
  if (row_end > size() || row_begin > row_end) throw UsageError("selection rows out of range");
  if (row_begin == row_end) return;
  if (column >= collection_->schema().size()) throw UsageError("column index out of range");
  CancelScope scope(&cancel_);  // reads that wait on a store stop with the gather
  cancel_.check();
  const DType dtype = collection_->schema()[column].dtype;
  if (hint) prefetch({column}, row_begin, row_end);  // what is not in memory yet is asked for at once
  const ColumnParts parts = column_parts(column, row_begin, row_end, threads);
  visit_covered(column, row_begin, row_end, emit);
  // Pieces of at most kPiece rows (the cancellation is checked between them), shared
  // between threads when there are enough rows.
  constexpr uint64_t kPiece = 1 << 18;
  const uint64_t rows = row_end - row_begin;
  const unsigned t = threads <= 1 || rows < (1u << 16) ? 1 : threads;
  uint64_t pieces = (rows + kPiece - 1) / kPiece;
  if (t > 1) pieces = std::max<uint64_t>(pieces, std::min<uint64_t>(uint64_t(t) * 4, rows / (1 << 14) + 1));
  dispatch_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    parallel_for(pieces, t, [&](uint64_t p) {
      cancel_.check();
      visit_rows<T>(parts, row_begin + rows * p / pieces, row_begin + rows * (p + 1) / pieces, emit);
    });
  });
}

namespace {
// gather's emit: copies each segment's values into place; into() is where a span of
// several blocks is read (decoded) straight to, not through a reader's scratch.
struct CopyInto {
  void* dest;
  uint64_t row_begin;
  template <class T>
  T* into(uint64_t r0) const {
    return static_cast<T*>(dest) + (r0 - row_begin);
  }
  template <class T>
  void operator()(const T* from, uint64_t r0, uint64_t r1) const {
    T* to = into<T>(r0);
    // Short segments (typical of filtered results) are copied element by element, not by memcpy calls.
    if (r1 - r0 < 16) {
      for (uint64_t i = 0; i < r1 - r0; ++i) to[i] = from[i];
    } else {
      std::memcpy(to, from, (r1 - r0) * sizeof(T));
    }
  }
};
}  // namespace

void Selection::gather(size_t column, uint64_t row_begin, uint64_t row_end, void* dest, unsigned threads,
                       bool hint) const {
  visit(column, row_begin, row_end, threads, hint, CopyInto{dest, row_begin});
}

void Selection::gather_f32(size_t column, uint64_t row_begin, uint64_t row_end, float* dest, double subtract,
                           unsigned threads, bool hint) const {
  visit(column, row_begin, row_end, threads, hint, [&](const auto* from, uint64_t r0, uint64_t r1) {
    float* to = dest + (r0 - row_begin);
    for (uint64_t i = 0; i < r1 - r0; ++i) to[i] = float(double(from[i]) - subtract);
  });
}

void Selection::prefetch(const std::vector<size_t>& columns, uint64_t row_begin, uint64_t row_end) const {
  row_end = std::min(row_end, size());
  if (segments_.empty() || row_begin >= row_end) return;
  // The exact ranges of each part, handed to the part's source in one call (which coalesces
  // them at its medium's gap and counts the requests it sends).
  std::vector<ByteRange> ranges;
  const size_t last = segment_of(row_end - 1) + 1;
  for (size_t k = segment_of(row_begin); k < last;) {
    const uint32_t part = part_of_[k];
    auto file = collection_->part(part);
    ranges.clear();
    const size_t end = std::min(last, part_end(k));
    // Block numbers depend only on the block size, which the streams of a file share (format 2)
    // or which depends on the dtype (format 1): computed once per block size.
    std::vector<std::pair<uint64_t, std::vector<uint64_t>>> by_size;
    const Covered* cv = nullptr;
    for (const Covered& c : covered_)
      if (c.part == part) cv = &c;
    for (size_t column : columns) {
      if (column >= file->schema().size()) throw UsageError("column index out of range");
      uint64_t at = 0;
      if (const BlockStream* cs = cv ? cv->hits->source(uint32_t(column), at) : nullptr) {  // one run of the cover
        std::vector<uint64_t> blocks;
        cs->blocks_of(at, cv->hits->end - cv->hits->begin, blocks);
        cs->block_ranges(blocks, ranges);
        continue;
      }
      const BlockStream& s = file->values(column);
      if (s.in_place()) {
        if (s.count() * s.value_size() < (64 << 10)) continue;  // small: not worth a hint
        for (size_t j = k; j < end; ++j) s.byte_ranges(segments_[j].start, segments_[j].count, ranges);
        continue;
      }
      std::vector<uint64_t>* blocks = nullptr;
      for (auto& [per, list] : by_size)
        if (per == s.per_block()) blocks = &list;
      if (!blocks) {
        by_size.emplace_back(s.per_block(), std::vector<uint64_t>());
        blocks = &by_size.back().second;
        for (size_t j = k; j < end; ++j) s.blocks_of(segments_[j].start, segments_[j].count, *blocks);
        std::sort(blocks->begin(), blocks->end());
        blocks->erase(std::unique(blocks->begin(), blocks->end()), blocks->end());
      }
      std::vector<uint64_t> copy = *blocks;
      s.block_ranges(copy, ranges);
    }
    const ReadCount sent = file->source().will_need(ranges);  // coalesced by the source (io/)
    reads_->requests.fetch_add(sent.requests, std::memory_order_relaxed);
    reads_->bytes.fetch_add(sent.bytes, std::memory_order_relaxed);
    ranges = {};
    k = end;
  }
}

QueryCounters Selection::counters() const {
  QueryCounters c = counters_;
  c.read_requests += reads_->requests.load(std::memory_order_relaxed);
  c.read_bytes += reads_->bytes.load(std::memory_order_relaxed);
  return c;
}

void Selection::positions(uint64_t row_begin, uint64_t row_end, uint64_t* dest) const {
  if (row_end > size() || row_begin > row_end) throw UsageError("selection rows out of range");
  if (row_begin == row_end) return;
  for (size_t k = segment_of(row_begin); k < segments_.size() && offsets_[k] < row_end; ++k) {
    uint64_t r0 = std::max(offsets_[k], row_begin), r1 = std::min(offsets_[k + 1], row_end);
    uint64_t first = collection_->part_offset(part_of_[k]) + segments_[k].start;
    for (uint64_t r = r0; r < r1; ++r) dest[r - row_begin] = first + (r - offsets_[k]);
  }
}

}  // namespace motes
