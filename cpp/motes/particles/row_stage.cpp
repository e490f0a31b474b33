#include "motes/particles/row_stage.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

#include "motes/codec/words.hpp"
#include "motes/core/threads.hpp"
#include "motes/particles/spec.hpp"

namespace motes {

namespace {

// One column of `count` rows between a strided source and a strided destination.
template <class T>
void copy_strided(const unsigned char* src, int64_t src_stride, unsigned char* dst, int64_t dst_stride, uint64_t count) {
  for (uint64_t i = 0; i < count; ++i) {
    T v;
    std::memcpy(&v, src + int64_t(i) * src_stride, sizeof v);
    std::memcpy(dst + int64_t(i) * dst_stride, &v, sizeof v);
  }
}

void copy_column(size_t size, const unsigned char* src, int64_t src_stride, unsigned char* dst, int64_t dst_stride,
                 uint64_t count) {
  codec::words::with_word(uint32_t(size), [&](auto word) {
    copy_strided<decltype(word)>(src, src_stride, dst, dst_stride, count);
  });
}

}  // namespace

bool RowStage::pays(const ColumnView& x, const ColumnView& y, const ColumnView& z) {
  const uint64_t n = x.count;
  if (n < kMinRows) return false;
  const Coordinate axes[3] = {Coordinate(x), Coordinate(y), Coordinate(z)};
  auto distance = [&](uint64_t a, uint64_t b) {
    double d = 0;
    for (const Coordinate& c : axes) d += std::fabs(c[a] - c[b]);
    return d;
  };
  constexpr uint64_t kPairs = 4096;
  std::vector<double> near(kPairs), far(kPairs);
  uint64_t state = 0x9e3779b97f4a7c15ULL;  // LCG: fixed pseudo-random rows
  for (uint64_t k = 0; k < kPairs; ++k) {
    const uint64_t i = k * (n - 1) / kPairs;
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    near[k] = distance(i, i + 1), far[k] = distance(i, (state >> 11) % n);
  }
  std::nth_element(near.begin(), near.begin() + kPairs / 2, near.end());
  std::nth_element(far.begin(), far.begin() + kPairs / 2, far.end());
  return far[kPairs / 2] > 0 && near[kPairs / 2] >= 0.25 * far[kPairs / 2];  // all in one point: no order to fix
}

RowStage::RowStage(const std::vector<ColumnView>& columns, unsigned threads) : columns_(columns) {
  const size_t k = columns.size();
  // Widest columns first: every value then lies at a multiple of its own size.
  std::vector<size_t> by_size(k);
  std::iota(by_size.begin(), by_size.end(), size_t(0));
  std::stable_sort(by_size.begin(), by_size.end(), [&](size_t a, size_t b) {
    return dtype_size(columns[a].spec.dtype) > dtype_size(columns[b].spec.dtype);
  });
  offset_.assign(k, 0);
  uint32_t at = 0;
  for (size_t c : by_size) offset_[c] = at, at += uint32_t(dtype_size(columns[c].spec.dtype));
  row_bytes_ = (at + 7) / 8 * 8;
  const uint64_t n = k ? columns[0].count : 0;
  rows_.resize(n * row_bytes_ / 8);
  unsigned char* base = reinterpret_cast<unsigned char*>(rows_.data());
  // Chunks of rows, every column of a chunk before the next chunk: the chunk's rows (16 KiB)
  // stay in the first-level cache while each column writes its slot of them.
  const uint64_t chunk = std::max<uint64_t>(64, (16 << 10) / std::max<uint32_t>(row_bytes_, 1));
  parallel_ranges(n, threads, 1 << 16, [&](uint64_t b, uint64_t e) {
    for (uint64_t s = b; s < e; s += chunk) {
      const uint64_t len = std::min<uint64_t>(chunk, e - s);
      for (size_t c = 0; c < k; ++c) {
        const ColumnView& v = columns[c];
        copy_column(dtype_size(v.spec.dtype), static_cast<const unsigned char*>(v.data) + int64_t(s) * v.stride(),
                    v.stride(), base + s * row_bytes_ + offset_[c], row_bytes_, len);
      }
    }
  });
}

uint64_t RowStage::region(size_t c, uint64_t rows) const {
  uint64_t at = 0;
  for (size_t j = 0; j < c; ++j) at += spec::align_up(rows * dtype_size(columns_[j].spec.dtype), 64);
  return at;
}

void RowStage::gather(const uint64_t* rows, uint64_t n, unsigned char* out, uint64_t stride_rows, uint64_t at) const {
  const unsigned char* base = reinterpret_cast<const unsigned char*>(rows_.data());
  const size_t words = row_bytes_ / 8;
  // Whole rows into a small buffer (one cache miss each, prefetched ahead), then each
  // column out of it into its region.
  constexpr uint64_t kChunk = 256, kAhead = 16;
  thread_local std::vector<uint64_t> chunk;
  chunk.resize(kChunk * words);
  for (uint64_t s = 0; s < n; s += kChunk) {
    const uint64_t len = std::min(kChunk, n - s);
    for (uint64_t i = 0; i < len; ++i) {
      if (s + i + kAhead < n) {
        const unsigned char* ahead = base + rows[s + i + kAhead] * row_bytes_;
        __builtin_prefetch(ahead);
        __builtin_prefetch(ahead + row_bytes_ - 1);  // a row may end in the next cache line
      }
      const uint64_t* row = reinterpret_cast<const uint64_t*>(base + rows[s + i] * row_bytes_);
      std::copy_n(row, words, chunk.data() + i * words);
    }
    const unsigned char* from = reinterpret_cast<const unsigned char*>(chunk.data());
    for (size_t c = 0; c < columns_.size(); ++c) {
      const size_t size = dtype_size(columns_[c].spec.dtype);
      copy_column(size, from + offset_[c], row_bytes_, out + region(c, stride_rows) + (at + s) * size, int64_t(size), len);
    }
  }
}

}  // namespace motes
