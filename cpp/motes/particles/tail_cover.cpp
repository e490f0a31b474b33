#include "motes/particles/tail_cover.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>

#include "motes/core/errors.hpp"
#include "motes/particles/id_index.hpp"
#include "motes/particles/spec.hpp"

namespace motes {

void cover_tail(TailIndexSections& t, const std::vector<ColumnView>& columns, const std::vector<int>& covered,
                const uint64_t* order, uint64_t particle_count, double fraction, int zstd_level, unsigned threads) {
  if (!(fraction > 0) || particle_count == 0) return;
  const uint64_t want = uint64_t(std::ceil(fraction * double(particle_count)));
  const uint64_t low = std::min(t.low, want), high = std::min(t.high, want), n = t.low + t.high, k = low + high;
  if (k == 0 || t.entry_rows.size() != n) return;
  // The input rows of the covered entries, in entry order: the low side's outermost first.
  std::vector<uint64_t> at(k);
  for (uint64_t i = 0; i < low; ++i) at[i] = order[t.entry_rows[i]];
  for (uint64_t i = 0; i < high; ++i) at[low + i] = order[t.entry_rows[n - high + i]];
  std::string raw;
  for (int c : covered) {
    if (uint32_t(c) == t.column) continue;
    const ColumnView& v = columns[size_t(c)];
    const size_t size = dtype_size(v.spec.dtype);
    const char* base = static_cast<const char*>(v.data);
    raw.resize(k * size);
    for (uint64_t i = 0; i < k; ++i) std::memcpy(raw.data() + i * size, base + int64_t(at[i]) * v.stride(), size);
    TailIndexSections::Cover cover;
    cover.column = uint32_t(c);
    code_index_blocks(raw.data(), k, v.spec.dtype, zstd_level, threads, cover.values, cover.blocks);
    t.covers.push_back(std::move(cover));
  }
  if (!t.covers.empty()) t.low_covered = low, t.high_covered = high;
}

std::string encode_tail_cover(const TailCoverHead& head) {
  std::string out(spec::kTailCoverHead + 4 * head.sections.size(), '\0');
  const uint32_t k = uint32_t(head.sections.size());
  std::memcpy(out.data(), &head.low, 8);
  std::memcpy(out.data() + 8, &head.high, 8);
  std::memcpy(out.data() + 16, &k, 4);
  if (k) std::memcpy(out.data() + spec::kTailCoverHead, head.sections.data(), 4 * size_t(k));
  return out;
}

TailCoverHead decode_tail_cover(const std::string& b, std::string& problem) {
  TailCoverHead h;
  uint32_t k = 0, zero = 0;
  if (b.size() < spec::kTailCoverHead) {
    problem = "has " + std::to_string(b.size()) + " bytes";
    return h;
  }
  std::memcpy(&h.low, b.data(), 8);
  std::memcpy(&h.high, b.data() + 8, 8);
  std::memcpy(&k, b.data() + 16, 4);
  std::memcpy(&zero, b.data() + 20, 4);
  if (zero) problem = "has non-zero padding";
  else if (k == 0) problem = "covers no column";
  else if (b.size() != spec::kTailCoverHead + 4 * uint64_t(k)) problem = "has the wrong length for " + std::to_string(k) + " columns";
  else if (h.low + h.high == 0 || h.low + h.high < h.low) problem = "covers no entry";
  if (!problem.empty()) return h;
  h.sections.resize(k);
  std::memcpy(h.sections.data(), b.data() + spec::kTailCoverHead, 4 * size_t(k));
  return h;
}

// --- reading: the cover of a tail index ---

void TailIndex::set_cover(uint64_t low, uint64_t high, std::vector<std::pair<uint32_t, BlockStream>> streams) {
  low_covered_ = low, high_covered_ = high;
  cover_ = std::move(streams);
}

uint64_t TailIndex::stored_bytes() const {
  uint64_t n = values_.stored_bytes() + rows_.stored_bytes() + bounds_bytes_;
  for (const auto& [c, s] : cover_) n += s.stored_bytes();
  return n;
}

bool TailIndex::side_covered(uint64_t begin, uint64_t end, uint64_t& at) const {
  const uint64_t n = low_count_ + high_count_;
  if (begin >= end || cover_.empty()) return false;
  if (end <= low_covered_) return at = begin, true;  // the low side's outermost entries
  if (begin >= n - high_covered_) return at = low_covered_ + (begin - (n - high_covered_)), true;
  return false;
}

bool TailIndex::cover_holds(TailTest test, const void* cv) const {
  if (cover_.empty()) return false;
  const double c = dispatch_dtype(dtype_, [&](auto zero) {
    using T = decltype(zero);
    T v;
    std::memcpy(&v, cv, sizeof(T));
    return double(v);
  });
  const auto [begin, end] = candidates(test, c);
  uint64_t at;
  return begin < end && side_covered(begin, end, at);
}

const BlockStream* TailIndex::covering(uint32_t column, uint64_t begin, uint64_t end, uint64_t& at) const {
  if (!side_covered(begin, end, at)) return nullptr;
  if (column == column_) return at = begin, &values_;  // the tail's own values, in entry order
  for (const auto& [c, s] : cover_)
    if (c == column) return &s;
  return nullptr;
}

void TailIndex::verify_cover(const std::function<const BlockStream&(uint32_t)>& column_of) const {
  const uint64_t n = low_count_ + high_count_, k = low_covered_ + high_covered_;
  BlockReader rows, cover, data;
  for (const auto& [c, s] : cover_) {
    for (uint64_t b = 0; b < s.block_count(); ++b) s.verify_block(b);
    const BlockStream& column = column_of(c);
    const uint32_t size = s.value_size();
    for (uint64_t i = 0; i < k; ++i) {
      const uint64_t e = i < low_covered_ ? i : n - high_covered_ + (i - low_covered_);
      const uint64_t r = rows_.value_size() == 8 ? rows.values<uint64_t>(rows_, e, 1)[0] : rows.values<uint32_t>(rows_, e, 1)[0];
      if (r >= particle_count_) continue;  // verify() names it
      if (std::memcmp(cover.span(s, i, 1), data.span(column, r, 1), size) != 0)
        throw FormatError(file_ + ": the tail cover of column " + std::to_string(column_) + " holds a value of column " +
                          std::to_string(c) + " that position " + std::to_string(r) + " does not");
    }
  }
}

const BlockStream* TailHits::source(uint32_t column, uint64_t& at) const {
  return covered() ? tail->covering(column, begin, end, at) : nullptr;
}

bool TailHits::covers(uint32_t column) const {
  uint64_t at;
  return source(column, at) != nullptr;
}

void TailHits::gather(uint32_t column, uint64_t first, uint64_t n, void* dst) const {
  uint64_t at = 0;
  const BlockStream* s = source(column, at);
  if (!s) throw UsageError("the tail does not cover column " + std::to_string(column));
  if (first > order.size() || n > order.size() - first) throw UsageError("tail rows out of range");
  if (n == 0) return;
  // The entries' values lie in a few blocks of the stream: each is read in place (checked)
  // or decoded once (through the cache), and every value is picked where it lies, with no
  // copy of the range first. Tail and cover streams have blocks of kIdBlockValues values
  // (reader_index.cpp), a power of two.
  constexpr uint64_t per = spec::kIdBlockValues;
  static_assert(std::has_single_bit(per));
  if (s->per_block() != per) throw UsageError("a tail stream whose blocks are not of " + std::to_string(per) + " values");
  const uint64_t b0 = at / per, b1 = (at + (end - begin) - 1) / per + 1;
  std::vector<std::shared_ptr<const DecodedBlock>> held;
  std::vector<const unsigned char*> base(b1 - b0);
  for (uint64_t b = b0; b < b1; ++b) {
    const uint64_t count = std::min(per, s->count() - b * per);
    if (const unsigned char* p = s->in_place(b * per, count)) {
      base[b - b0] = p;
    } else {
      held.push_back(s->block(b));
      base[b - b0] = held.back()->data();
    }
  }
  auto copy = [&](auto zero) {
    using T = decltype(zero);
    T* out = static_cast<T*>(dst);
    const uint32_t* o = order.data() + first;
    for (uint64_t i = 0; i < n; ++i) {
      const uint64_t p = at + o[i];
      out[i] = reinterpret_cast<const T*>(base[p / per - b0])[p % per];
    }
  };
  switch (s->value_size()) {
    case 1: copy(uint8_t()); break;
    case 2: copy(uint16_t()); break;
    case 4: copy(uint32_t()); break;
    default: copy(uint64_t()); break;
  }
}

}  // namespace motes
