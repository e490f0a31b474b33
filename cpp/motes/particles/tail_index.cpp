#include "motes/particles/tail_index.hpp"

#include <algorithm>
#include <boost/sort/spreadsort/integer_sort.hpp>
#include <cmath>
#include <cstring>
#include <limits>
#include <tuple>

#include "motes/core/errors.hpp"
#include "motes/particles/column_writer.hpp"
#include "motes/particles/id_index.hpp"
#include "motes/particles/layout/radix_sort.hpp"
#include "motes/particles/spec.hpp"

namespace motes {

namespace {

constexpr uint32_t kBoundsHead = spec::kTailBoundsHead;
constexpr uint32_t kLowValid = 1, kHighValid = 2;

template <class T>
uint64_t bits_of(T v) {
  uint64_t b = 0;
  std::memcpy(&b, &v, sizeof(T));
  return b;
}
template <class T>
T value_of(uint64_t b) {
  T v;
  std::memcpy(&v, &b, sizeof(T));
  return v;
}

// The largest T below v, or false when there is none (v is the lowest T, or -inf).
template <class T>
bool below(T v, T& out) {
  if constexpr (std::is_floating_point_v<T>) {
    if (v == -std::numeric_limits<T>::infinity()) return false;
    out = std::nextafter(v, -std::numeric_limits<T>::infinity());
  } else {
    if (v == std::numeric_limits<T>::lowest()) return false;
    out = T(v - 1);
  }
  return true;
}
template <class T>
bool above(T v, T& out) {
  if constexpr (std::is_floating_point_v<T>) {
    if (v == std::numeric_limits<T>::infinity()) return false;
    out = std::nextafter(v, std::numeric_limits<T>::infinity());
  } else {
    if (v == std::numeric_limits<T>::max()) return false;
    out = T(v + 1);
  }
  return true;
}

// One side of the tail: every value v with `v <= limit` (low) or `v >= limit` (high) seen so
// far, with its position. When it outgrows its cap (many ties at one value), the limit moves
// towards the extreme, just past its held value nearest the middle, which is dropped with
// its ties; a side whose limit cannot move (the lowest or highest T) is given up.
template <class T>
struct Side {
  bool high;
  bool valid = true;
  T limit;
  uint64_t cap;
  std::vector<std::pair<T, uint64_t>> entries;

  bool beyond(T v) const { return high ? v >= limit : v <= limit; }
  void shrink() {
    while (valid && entries.size() > cap) {
      // The held value nearest the middle goes, with all its ties.
      T inner = entries.front().first;
      for (const auto& e : entries) inner = high ? std::min(inner, e.first) : std::max(inner, e.first);
      T next;
      if (!(high ? above(inner, next) : below(inner, next))) {
        valid = false;
        entries.clear();
        entries.shrink_to_fit();
        return;
      }
      limit = next;
      entries.erase(std::remove_if(entries.begin(), entries.end(), [&](const auto& e) { return !beyond(e.first); }),
                    entries.end());
    }
  }
};

template <class T>
class Collector final : public TailCollector {
 public:
  Collector(DType dtype, T lo, T hi, uint64_t cap) : dtype_(dtype), low_{false, true, lo, cap, {}}, high_{true, true, hi, cap, {}} {}

  void add(const void* values, uint64_t first, uint64_t n) override {
    const T* v = static_cast<const T*>(values);
    // Most values are in neither tail: 16 at a time are tested by a loop with no branch (on
    // vectors), and only a group with a tail value is walked.
    constexpr uint64_t kGroup = 16;
    const T lo = low_.limit, hi = high_.limit;
    const bool low_valid = low_.valid, high_valid = high_.valid;
    for (uint64_t s = 0; s < n; s += kGroup) {
      const uint64_t e = std::min(n, s + kGroup);
      if (low_valid && high_valid) {
        uint32_t hits = 0;  // counted, not or-ed: a sum vectorises
        for (uint64_t i = s; i < e; ++i) hits += uint32_t(v[i] <= lo) + uint32_t(v[i] >= hi);
        if (!hits) continue;
      }
      for (uint64_t i = s; i < e; ++i) {
        if (low_valid && v[i] <= lo) low_.entries.push_back({v[i], first + i});
        else if (high_valid && v[i] >= hi) high_.entries.push_back({v[i], first + i});
      }
    }
    low_.shrink();
    high_.shrink();
  }

  std::optional<TailIndexSections> finish(uint32_t column, uint64_t particle_count, int zstd_level,
                                          unsigned threads) override {
    if (low_.entries.empty() && high_.entries.empty()) return std::nullopt;
    std::sort(low_.entries.begin(), low_.entries.end());
    std::sort(high_.entries.begin(), high_.entries.end());
    const uint64_t n = low_.entries.size() + high_.entries.size();
    std::vector<T> values;
    values.reserve(n);
    std::vector<uint64_t> rows;
    rows.reserve(n);
    for (const auto* side : {&low_, &high_})
      for (const auto& [v, r] : side->entries) values.push_back(v), rows.push_back(r);
    TailIndexSections s;
    s.column = column;
    s.low = low_.entries.size(), s.high = high_.entries.size();
    const uint64_t bv = spec::kIdBlockValues, nb = (n + bv - 1) / bv;
    s.bounds.resize(kBoundsHead + 16 * nb);
    char* b = s.bounds.data();
    const uint64_t counts[2] = {low_.entries.size(), high_.entries.size()};
    const uint32_t flags[2] = {(low_.valid ? kLowValid : 0) | (high_.valid ? kHighValid : 0), 0};
    const uint64_t limits[2] = {bits_of(low_.limit), bits_of(high_.limit)};
    std::memcpy(b, counts, 16);
    std::memcpy(b + 16, flags, 8);
    std::memcpy(b + 24, limits, 16);
    for (uint64_t k = 0; k < nb; ++k) {
      const double fence[2] = {double(values[k * bv]), double(values[std::min(n, (k + 1) * bv) - 1])};
      std::memcpy(b + kBoundsHead + 16 * k, fence, 16);
    }
    code_index_blocks(values.data(), n, dtype_, zstd_level, threads, s.values, s.value_blocks);
    if (particle_count <= (uint64_t(1) << 32)) {
      std::vector<uint32_t> narrow(rows.begin(), rows.end());
      code_index_blocks(narrow.data(), n, DType::u32, zstd_level, threads, s.rows, s.row_blocks);
    } else {
      code_index_blocks(rows.data(), n, DType::u64, zstd_level, threads, s.rows, s.row_blocks);
    }
    s.entry_rows = std::move(rows);
    return s;
  }

 private:
  DType dtype_;
  Side<T> low_, high_;
};

}  // namespace

std::unique_ptr<TailCollector> make_tail_collector(const ColumnView& c, double fraction) {
  if (!(fraction > 0 && fraction <= 0.25))
    throw UsageError("the tail fraction must be in (0, 0.25], got " + number_text(fraction));
  const uint64_t n = c.count;
  if (n == 0) return nullptr;
  return dispatch_dtype(c.spec.dtype, [&](auto zero) -> std::unique_ptr<TailCollector> {
    using T = decltype(zero);
    // Limits from an even sample of the caller's array (as the quantile edges are chosen):
    // its values of rank k from either end, found without sorting it.
    std::vector<T> sample = even_sample<T>(c, 1 << 16);
    if (sample.empty()) return nullptr;
    const size_t k = std::min(sample.size() - 1, size_t(fraction * double(sample.size()))), top = sample.size() - 1 - k;
    std::nth_element(sample.begin(), sample.begin() + int64_t(k), sample.end());
    const T lo = sample[k];
    if (top > k) std::nth_element(sample.begin() + int64_t(k) + 1, sample.begin() + int64_t(top), sample.end());
    const T hi = sample[std::max(k, top)];
    if (!(lo < hi)) return nullptr;  // too few distinct values for two disjoint sides
    // A side may hold twice its share and a block more before ties are dropped from it.
    const uint64_t cap = 2 * uint64_t(std::ceil(fraction * double(n))) + spec::kIdBlockValues;
    return std::make_unique<Collector<T>>(c.spec.dtype, lo, hi, cap);
  });
}

TailIndex::TailIndex(std::shared_ptr<const ByteSource> source, const std::string& file, uint32_t column, DType dtype,
                     uint64_t particle_count, std::vector<StoredBlock> value_blocks, std::vector<StoredBlock> row_blocks,
                     const std::string& bounds)
    : file_(file), column_(column), dtype_(dtype), particle_count_(particle_count), bounds_bytes_(bounds.size()) {
  auto bad = [&](const std::string& what) {
    return FormatError(file + ": the tail index of column " + std::to_string(column) + " " + what);
  };
  if (bounds.size() < kBoundsHead) throw bad("has a bounds section of " + std::to_string(bounds.size()) + " bytes");
  uint64_t counts[2];
  uint32_t flags[2];
  std::memcpy(counts, bounds.data(), 16);
  std::memcpy(flags, bounds.data() + 16, 8);
  std::memcpy(&low_limit_, bounds.data() + 24, 8);
  std::memcpy(&high_limit_, bounds.data() + 32, 8);
  if (flags[0] & ~(kLowValid | kHighValid) || flags[1]) throw bad("has unknown flags");
  low_valid_ = flags[0] & kLowValid, high_valid_ = flags[0] & kHighValid;
  low_count_ = counts[0], high_count_ = counts[1];
  if (low_count_ > particle_count || high_count_ > particle_count - low_count_ || low_count_ + high_count_ == 0)
    throw bad("counts " + std::to_string(low_count_) + " + " + std::to_string(high_count_) + " entries in a file of " +
              std::to_string(particle_count));
  if ((!low_valid_ && low_count_) || (!high_valid_ && high_count_)) throw bad("holds entries on a side it gave up");
  const uint64_t n = low_count_ + high_count_, bv = spec::kIdBlockValues, nb = (n + bv - 1) / bv;
  if (bounds.size() != kBoundsHead + 16 * nb) throw bad("has fences of the wrong length");
  fences_.resize(2 * nb);
  std::memcpy(fences_.data(), bounds.data() + kBoundsHead, 16 * nb);
  for (size_t i = 0; i < fences_.size(); ++i)
    if (std::isnan(fences_[i]) || (i && fences_[i] < fences_[i - 1])) throw bad("has fences that do not ascend");
  const bool ok = dispatch_dtype(dtype, [&](auto zero) {
    using T = decltype(zero);
    if constexpr (std::is_floating_point_v<T>) {
      if (std::isnan(value_of<T>(low_limit_)) || std::isnan(value_of<T>(high_limit_))) return false;
    }
    if constexpr (sizeof(T) < 8) {
      if ((low_limit_ | high_limit_) >> (8 * sizeof(T))) return false;  // padding must be zero
    }
    return value_of<T>(low_limit_) < value_of<T>(high_limit_);
  });
  if (!ok) throw bad("has limits that are not two ascending values of its dtype");
  values_ = BlockStream::coded(source, "tail index values", uint8_t(dtype), n, bv, std::move(value_blocks));
  const DType rows = particle_count <= (uint64_t(1) << 32) ? DType::u32 : DType::u64;
  rows_ = BlockStream::coded(source, "tail index rows", uint8_t(rows), n, bv, std::move(row_blocks));
}

std::pair<uint64_t, uint64_t> TailIndex::candidates(TailTest test, double c) const {
  // Rounding to double is monotone: a value passing the test has a fence-comparable double
  // on the same side of double(c), so whole blocks are ruled out from their fences.
  const uint64_t n = low_count_ + high_count_, bv = spec::kIdBlockValues, nb = fences_.size() / 2;
  uint64_t begin = 0, end = n;
  if (test == TailTest::gt || test == TailTest::ge || test == TailTest::eq) {
    uint64_t b = 0;
    while (b < nb && fences_[2 * b + 1] < c) ++b;  // few blocks: a scan
    begin = b * bv;
  }
  if (test == TailTest::lt || test == TailTest::le || test == TailTest::eq) {
    uint64_t b = 0;
    while (b < nb && fences_[2 * b] <= c) ++b;
    end = std::min(n, b * bv);
  }
  return {std::min(begin, end), end};
}

std::optional<uint64_t> TailIndex::covers(TailTest test, const void* cv) const {
  return dispatch_dtype(dtype_, [&](auto zero) -> std::optional<uint64_t> {
    using T = decltype(zero);
    T c;
    std::memcpy(&c, cv, sizeof(T));
    if constexpr (std::is_floating_point_v<T>) {
      if (std::isnan(c)) return std::nullopt;
    }
    const T lo = value_of<T>(low_limit_), hi = value_of<T>(high_limit_);
    // Every value <= lo and every value >= hi is held.
    bool held = false;
    switch (test) {
      case TailTest::lt:
      case TailTest::le: held = low_valid_ && c <= lo; break;
      case TailTest::gt:
      case TailTest::ge: held = high_valid_ && c >= hi; break;
      case TailTest::eq: held = (low_valid_ && c <= lo) || (high_valid_ && c >= hi); break;
    }
    if (!held) return std::nullopt;
    auto [b, e] = candidates(test, double(c));
    return e - b;
  });
}

std::pair<uint64_t, uint64_t> TailIndex::passing(TailTest test, const void* cv) const {
  uint64_t first = 0, last = 0;
  dispatch_dtype(dtype_, [&](auto zero) {
    using T = decltype(zero);
    T c;
    std::memcpy(&c, cv, sizeof(T));
    auto [begin, end] = candidates(test, double(c));
    BlockReader values;
    const uint64_t bv = spec::kIdBlockValues;
    bool any = false;
    for (uint64_t at = begin; at < end;) {
      const uint64_t m = std::min(end, (at / bv + 1) * bv) - at;
      const T* v = values.values<T>(values_, at, m);
      auto find = [&](auto pass) {
        for (uint64_t i = 0; i < m; ++i)
          if (pass(v[i])) {
            // The passing entries are contiguous (values ascend): the first and the last bound them.
            if (!any) first = at + i, any = true;
            last = at + i + 1;
          }
      };
      switch (test) {
        case TailTest::lt: find([&](T x) { return x < c; }); break;
        case TailTest::le: find([&](T x) { return x <= c; }); break;
        case TailTest::gt: find([&](T x) { return x > c; }); break;
        case TailTest::ge: find([&](T x) { return x >= c; }); break;
        default: find([&](T x) { return x == c; }); break;
      }
      at += m;
    }
  });
  return {first, last};
}

TailHits TailIndex::hits(TailTest test, const void* cv, bool cover_order) const {
  TailHits h;
  h.tail = this;
  std::tie(h.begin, h.end) = passing(test, cv);
  const bool wide = rows_.value_size() == 8;
  std::vector<uint32_t> narrow;  // most files: positions fit 32 bits, which sort faster
  (wide ? h.rows.reserve(h.end - h.begin) : narrow.reserve(h.end - h.begin));
  BlockReader rows;
  for (uint64_t at = h.begin, bv = spec::kIdBlockValues; at < h.end;) {
    const uint64_t m = std::min(h.end, (at / bv + 1) * bv) - at;
    if (wide) {
      const uint64_t* r = rows.values<uint64_t>(rows_, at, m);
      h.rows.insert(h.rows.end(), r, r + m);
    } else {
      const uint32_t* r = rows.values<uint32_t>(rows_, at, m);
      narrow.insert(narrow.end(), r, r + m);
    }
    at += m;
  }
  uint64_t at = 0;
  if (cover_order && !wide && h.end > h.begin && h.end - h.begin <= UINT32_MAX &&
      side_covered(h.begin, h.end, at)) {
    // Positions with their entries (position in the high half, entry - begin in the low): one
    // LSD radix sort on the positions' bits gives both.
    const size_t n = narrow.size();
    std::unique_ptr<uint64_t[]> keyed(new uint64_t[2 * n]);  // and the sort's scratch; not zeroed
    for (size_t i = 0; i < n; ++i) keyed[i] = uint64_t(narrow[i]) << 32 | i;
    const int bits = particle_count_ > 1 ? 64 - __builtin_clzll(particle_count_ - 1) : 1;
    sort_low_code_bits(keyed.get(), n, keyed.get() + n, std::min(bits, 32), 1);
    h.rows.reserve(n);
    h.order.reserve(n);
    for (size_t i = 0; i < n; ++i) h.rows.push_back(keyed[i] >> 32), h.order.push_back(uint32_t(keyed[i]));
    return h;
  }
  if (!wide) {  // positions: a radix sort
    boost::sort::spreadsort::integer_sort(narrow.begin(), narrow.end());
    h.rows.assign(narrow.begin(), narrow.end());
    return h;
  }
  boost::sort::spreadsort::integer_sort(h.rows.begin(), h.rows.end());
  return h;
}

void TailIndex::verify(const BlockStream& column) const {
  const uint64_t n = low_count_ + high_count_, bv = spec::kIdBlockValues, nb = fences_.size() / 2;
  BlockReader values, rows, data;
  std::vector<uint64_t> seen;
  dispatch_dtype(dtype_, [&](auto zero) {
    using T = decltype(zero);
    const T lo = value_of<T>(low_limit_), hi = value_of<T>(high_limit_);
    auto fail = [&](const std::string& what) {
      throw FormatError(file_ + ": the tail index of column " + std::to_string(column_) + " " + what);
    };
    for (uint64_t b = 0; b < nb; ++b) {
      values_.verify_block(b);
      rows_.verify_block(b);
      const uint64_t first = b * bv, m = std::min(bv, n - first);
      const T* v = values.values<T>(values_, first, m);
      const std::string block = "in block " + std::to_string(b);
      if (double(v[0]) != fences_[2 * b] || double(v[m - 1]) != fences_[2 * b + 1]) fail(block + " disagrees with its fences");
      for (uint64_t i = 0; i < m; ++i) {
        if (i && !(v[i - 1] <= v[i])) fail(block + ": values do not ascend");
        const bool low = first + i < low_count_;
        if (low ? !(v[i] <= lo) : !(v[i] >= hi)) fail(block + " holds a value beyond its side's limit");
        const uint64_t r = rows_.value_size() == 8 ? rows.values<uint64_t>(rows_, first + i, 1)[0]
                                                   : rows.values<uint32_t>(rows_, first + i, 1)[0];
        if (r >= particle_count_) fail(block + " names position " + std::to_string(r));
        seen.push_back(r);
        if (bits_of(data.values<T>(column, r, 1)[0]) != bits_of(v[i]))
          fail(block + " holds a value that position " + std::to_string(r) + " of the column does not");
      }
    }
    std::sort(seen.begin(), seen.end());
    if (std::adjacent_find(seen.begin(), seen.end()) != seen.end()) fail("names a position twice");
    // Complete: as many values beyond each limit in the column as entries (distinct positions
    // whose values match, so equal counts mean the same set).
    uint64_t below = 0, beyond = 0;
    for (uint64_t at = 0; at < particle_count_;) {
      const uint64_t m = std::min<uint64_t>(particle_count_ - at, column.per_block() - at % column.per_block());
      const T* p = data.values<T>(column, at, m);
      for (uint64_t i = 0; i < m; ++i) below += low_valid_ && p[i] <= lo, beyond += high_valid_ && p[i] >= hi;
      at += m;
    }
    if (below != low_count_ || beyond != high_count_)
      fail("holds " + std::to_string(low_count_) + " + " + std::to_string(high_count_) + " entries, but the column has " +
           std::to_string(below) + " + " + std::to_string(beyond) + " values beyond its limits");
  });
}

}  // namespace motes
