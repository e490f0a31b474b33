// Kernels over one column's values that both planning a column (column_plan.cpp) and
// writing its blocks (column_writer.cpp) use, internal to the particle writer: a value by
// row, a running range, the quantile code of a value, and the gather into file order.
#pragma once

#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include "motes/core/types.hpp"
#include "motes/particles/layout/builder.hpp"
#include "motes/particles/spec.hpp"

namespace motes::column_values {

template <class T>
inline const T& value_at(const ColumnView& c, uint64_t row) {
  return *reinterpret_cast<const T*>(static_cast<const char*>(c.data) + int64_t(row) * c.stride());
}

// Where a running minimum and maximum start, instead of a "seen one" flag, so their loops
// have no branch and vectorise (NaN fails every comparison and moves neither end).
template <class T>
constexpr T kAbove = std::is_floating_point_v<T> ? std::numeric_limits<T>::infinity() : std::numeric_limits<T>::max();
template <class T>
constexpr T kBelow = std::is_floating_point_v<T> ? -std::numeric_limits<T>::infinity() : std::numeric_limits<T>::lowest();

// Folds v[0, len) into a running minimum and maximum (NaN moves neither), and adds the NaNs
// to *nans when given. Floats and doubles go 16 bytes of lanes at a time (GCC vector
// extensions: SSE on x86-64, NEON on arm64), other types over four interleaved lanes, so that
// the comparisons do not wait on one another.
template <class T>
inline void running_range(const T* v, uint64_t len, T& mn, T& mx, uint64_t* nans = nullptr) {
  uint64_t k = 0;
  if constexpr (std::is_floating_point_v<T>) {
    constexpr int kLanes = 16 / sizeof(T);
    typedef T Vec __attribute__((vector_size(16)));
    using Mask = decltype(Vec{} < Vec{});  // lanes of all ones where true
    if (len >= 2 * kLanes) {
      Vec lo, hi;
      Mask nan{};
      for (int j = 0; j < kLanes; ++j) lo[j] = mn, hi[j] = mx;
      for (; k + kLanes <= len; k += kLanes) {
        Vec x;
        std::memcpy(&x, v + k, sizeof x);
        lo = x < lo ? x : lo;  // lane-wise: a NaN lane keeps lo and hi
        hi = hi < x ? x : hi;
        if (nans) nan -= x != x;  // -1 per NaN lane
      }
      for (int j = 0; j < kLanes; ++j) {
        mn = lo[j] < mn ? lo[j] : mn;
        mx = mx < hi[j] ? hi[j] : mx;
        if (nans) *nans += uint64_t(nan[j]);
      }
    }
    if (nans)
      for (uint64_t i = k; i < len; ++i) *nans += v[i] != v[i];
  } else {
    T lo[4] = {mn, mn, mn, mn}, hi[4] = {mx, mx, mx, mx};
    for (; k + 4 <= len; k += 4)
      for (int j = 0; j < 4; ++j) {
        lo[j] = v[k + j] < lo[j] ? v[k + j] : lo[j];
        hi[j] = hi[j] < v[k + j] ? v[k + j] : hi[j];
      }
    for (int j = 0; j < 4; ++j) {
      mn = lo[j] < mn ? lo[j] : mn;
      mx = mx < hi[j] ? hi[j] : mx;
    }
  }
  for (; k < len; ++k) {
    mn = v[k] < mn ? v[k] : mn;
    mx = mx < v[k] ? v[k] : mx;
  }
}

// spec::quantile_code, made fast for millions of values: a uniform grid over the
// column's range remembers each cell's first code, so a value usually needs one
// or two comparisons. Every answer is checked against the edges; a value the
// grid cannot place (rounding at cell borders, runs of equal edges) takes the
// full search.
class CodeLookup {
 public:
  explicit CodeLookup(const std::vector<double>& edges, double lo, double hi) : edges_(edges.data()), lo_(lo) {
    scale_ = hi > lo ? double(kCells) / (hi - lo) : 0.0;
    for (uint32_t c = 0; c < kCells; ++c) first_[c] = spec::quantile_code(lo + double(c) / (scale_ > 0 ? scale_ : 1.0), edges_);
  }
  uint8_t operator()(double v) const {
    double t = (v - lo_) * scale_;
    uint32_t cell = t >= 0 ? (t < double(kCells) ? uint32_t(t) : kCells - 1) : 0;  // NaN lands in cell 0
    uint32_t r = first_[cell];
    r += (r < spec::kQuantileBins - 1) & (edges_[r + 1] <= v);  // a cell holds one edge at most, mostly
    if ((r == 0 || edges_[r] <= v) && (r == spec::kQuantileBins - 1 || v < edges_[r + 1])) [[likely]]
      return uint8_t(r);
    return spec::quantile_code(v, edges_);  // NaN, and cells that hold several edges
  }

 private:
  static constexpr uint32_t kCells = 16384;
  const double* edges_;
  double lo_, scale_;
  uint8_t first_[kCells];
};

// Values [start, start + n) of the column in file order. Not inlined: inlined into the
// column writer's block loop it took 18M more instructions on a 1M write (callgrind).
template <class T>
[[gnu::noinline]] inline void gather(const ColumnView& c, const Layout& layout, uint64_t start, uint64_t n, T* out) {
  // Rows prefetched ahead: each is a cache miss of its own (256 hides more of them than 64
  // did: bench/README.md, write_phases.py).
  constexpr uint64_t kAhead = 256;
  const char* base = static_cast<const char*>(c.data);
  const int64_t stride = c.stride();
  const uint64_t* ord = layout.order.data() + start;
  const uint64_t ahead = n > kAhead ? n - kAhead : 0;
  uint64_t i = 0;
  if (stride == int64_t(sizeof(T))) {  // a contiguous column: indexed loads
    const T* v = static_cast<const T*>(c.data);
    for (; i < ahead; ++i) {
      __builtin_prefetch(v + ord[i + kAhead]);
      out[i] = v[ord[i]];
    }
    for (; i < n; ++i) out[i] = v[ord[i]];
    return;
  }
  for (; i < n; ++i) {
    if (i < ahead) __builtin_prefetch(base + int64_t(ord[i + kAhead]) * stride);
    out[i] = *reinterpret_cast<const T*>(base + int64_t(ord[i]) * stride);
  }
}

}  // namespace motes::column_values
