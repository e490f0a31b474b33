#include "motes/particles/column_writer.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <mutex>

#include "motes/core/threads.hpp"
#include "motes/particles/spec.hpp"

namespace motes {

namespace {

template <class T>
const T& value_at(const ColumnView& c, uint64_t row) {
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
void running_range(const T* v, uint64_t len, T& mn, T& mx, uint64_t* nans = nullptr) {
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

template <class T>
void scan_global(ColumnPlan& p, unsigned threads) {
  const ColumnView& c = *p.view;
  const char* base = static_cast<const char*>(c.data);
  const int64_t stride = c.stride();
  std::mutex m;
  T mn = kAbove<T>, mx = kBelow<T>;
  uint64_t nans = 0;
  parallel_ranges(c.count, threads, 1 << 16, [&](uint64_t b, uint64_t e) {
    T lmn = kAbove<T>, lmx = kBelow<T>;
    uint64_t lnan = 0;
    if (stride == int64_t(sizeof(T))) {  // contiguous: the common case
      running_range(reinterpret_cast<const T*>(base) + b, e - b, lmn, lmx, &lnan);
    } else
      for (uint64_t i = b; i < e; ++i) {
        T x;
        std::memcpy(&x, base + int64_t(i) * stride, sizeof x);
        lmn = x < lmn ? x : lmn;
        lmx = lmx < x ? x : lmx;
        if constexpr (std::is_floating_point_v<T>) lnan += x != x;
      }
    std::lock_guard lock(m);
    nans += lnan;
    mn = std::min(mn, lmn);
    mx = std::max(mx, lmx);
  });
  const bool any = c.count > nans;  // a value that is not NaN: it set both ends
  p.nan_count = nans;
  p.gmin = any ? double(mn) : 0.0;
  p.gmax = any ? double(mx) : 0.0;
}

// How spatially incoherent a column is: the bins sample leaves cover, over the bins
// random samples of the same size cover (about 1 for noise, near 0 for smooth
// fields). 0 when it cannot tell (too little data) or when random samples cover
// few bins (few distinct values: codes would gain little).
template <class T>
double incoherence(const ColumnPlan& p, const Layout& layout) {
  const Levels& lv = layout.levels;
  const LevelRuns& lr = lv.runs(layout.nodes);
  const uint64_t n = p.view->count;
  std::vector<uint32_t> leaves;
  for (uint32_t i = 0; i < layout.nodes.size(); ++i)
    if (layout.nodes[i].is_leaf() && layout.nodes[i].own_count >= 16) leaves.push_back(i);
  if (leaves.size() < 16) return 0.0;
  const size_t samples = std::min<size_t>(256, leaves.size());
  const spec::BitmapBins bin(p.gmin, p.gmax);
  auto bin_of_row = [&](uint64_t row, uint32_t& bits) {
    double v = double(value_at<T>(*p.view, row));
    if (!std::isnan(v)) bits |= 1u << bin(v);
  };
  double leaf_bins = 0, random_bins = 0;
  uint64_t state = 0x9e3779b97f4a7c15ULL;
  for (size_t s = 0; s < samples; ++s) {
    uint32_t leaf = leaves[s * leaves.size() / samples];
    uint32_t leaf_bits = 0, random_bits = 0;
    for (uint32_t r = lr.run_begin[leaf]; r < lr.run_begin[leaf + 1]; ++r)
      for (uint32_t k = 0; k < lr.runs[r].count; ++k) {
        bin_of_row(layout.order[lr.runs[r].start + k], leaf_bits);
        state = state * 6364136223846793005ULL + 1442695040888963407ULL;  // LCG: a fixed pseudo-random row
        bin_of_row((state >> 11) % n, random_bits);
      }
    leaf_bins += std::popcount(leaf_bits);
    random_bins += std::popcount(random_bits);
  }
  return random_bins >= 8.0 * double(samples) ? leaf_bins / random_bins : 0.0;
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

template <class T>
void compute_edges(ColumnPlan& p) {
  const std::vector<T> sample = sorted_sample<T>(*p.view, 1 << 16);
  p.edges.assign(spec::kQuantileBins + 1, 0.0);
  if (sample.empty()) return;
  for (uint32_t b = 0; b <= spec::kQuantileBins; ++b)
    p.edges[b] = double(sample[std::min<size_t>(sample.size() - 1, size_t(b) * sample.size() / spec::kQuantileBins)]);
  p.edges[0] = p.gmin;
  p.edges[spec::kQuantileBins] = p.gmax;
}


// Values [start, start + n) of the column in file order.
template <class T>
void gather(const ColumnView& c, const Layout& layout, uint64_t start, uint64_t n, T* out) {
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

}  // namespace

std::vector<uint64_t> codec_sample_starts(uint64_t n, uint32_t block_values) {
  // Coarse levels come first and differ from the fine ones that hold most values, so
  // blocks at 1/4, 1/2 and 3/4 of the file speak for the column.
  const uint64_t len = std::min<uint64_t>(block_values, n);
  std::vector<uint64_t> starts;
  for (uint64_t k = 1; n && k <= 3; ++k) {
    uint64_t s = std::min(n - len, n * k / 4);
    if (starts.empty() || starts.back() != s) starts.push_back(s);
  }
  return starts;
}

namespace {

template <class T>
void choose_typed(ColumnPlan& p, const Layout& layout, uint32_t block_values, bool lossless, int zstd_level) {
  const uint64_t n = p.view->count;
  const codec::ValueType type = codec::value_type(uint8_t(p.view->spec.dtype));
  codec::Plan raw;
  raw.layout = sizeof(T) > 1 ? codec::Layout::planes : codec::Layout::whole;
  raw.coders.assign(sizeof(T) > 1 ? sizeof(T) : 1, codec::Coder::raw);
  raw.zstd_level = zstd_level;
  p.values.plan = raw;
  codec::Plan raw_codes = raw;
  raw_codes.layout = codec::Layout::whole;
  raw_codes.coders.assign(1, codec::Coder::raw);
  p.codes.plan = raw_codes;
  if (!lossless || n == 0) return;
  const uint64_t len = std::min<uint64_t>(block_values, n);
  const std::vector<uint64_t> starts = codec_sample_starts(n, block_values);
  std::vector<std::vector<T>> values(starts.size(), std::vector<T>(len));
  std::vector<std::vector<uint8_t>> codes(starts.size());
  std::unique_ptr<CodeLookup> code_of;
  if (p.index == IndexKind::quantile) code_of = std::make_unique<CodeLookup>(p.edges, p.gmin, p.gmax);
  std::vector<codec::Sample> samples;
  for (size_t k = 0; k < starts.size(); ++k) {
    gather<T>(*p.view, layout, starts[k], len, values[k].data());
    codec::Sample s{values[k].data(), len, {}};
    if (code_of) {
      codes[k].resize(len);
      for (uint64_t i = 0; i < len; ++i) codes[k][i] = (*code_of)(double(values[k][i]));
      s.ctx.codes = codes[k].data();
      s.ctx.bases = p.bases.data();
    }
    samples.push_back(s);
  }
  std::vector<codec::Predictor> predictors{codec::Predictor::none, codec::Predictor::delta};
  if (type.is_float) predictors.push_back(codec::Predictor::xor_);
  else if (sizeof(T) > 1) predictors.push_back(codec::Predictor::offset);
  if (code_of) predictors.push_back(codec::Predictor::quantile);
  if (p.grid.step > 0) {
    predictors.push_back(codec::Predictor::grid);
    predictors.push_back(codec::Predictor::grid_delta);
    if (code_of) predictors.push_back(codec::Predictor::grid_quantile);
    for (codec::Sample& s : samples) s.ctx.grid_origin = p.grid.origin, s.ctx.grid_step = p.grid.step, s.ctx.edges = p.edges.data();
  }
  p.values.plan = codec::choose(type, predictors, samples, zstd_level, /*addressable=*/true, n);
  if (code_of) {
    std::vector<codec::Sample> cs;
    for (size_t k = 0; k < codes.size(); ++k) cs.push_back({codes[k].data(), len, {}});
    p.codes.plan = codec::choose(codec::value_type(uint8_t(DType::u8)), {codec::Predictor::none}, cs, zstd_level, true);
  }
}

// Stores one block of a stream: raw streams in place, coded ones into the window.
void store_block(StreamOut& s, codec::ValueType type, const void* data, uint64_t first, uint64_t len, uint64_t b,
                 const codec::Context& ctx, RawWriter& out) {
  if (s.by_index) return;
  const size_t bytes = len * type.size;
  if (s.plan.raw()) {
    out.write_at(data, bytes, s.offset + first * type.size);
    s.sums.push_back(spec::checksum(data, bytes));
    return;
  }
  std::string& window = s.window[s.slot];
  const size_t at = window.size();
  codec::encode_append(s.plan, type, data, len, ctx, window);
  s.blocks[b] = StoredBlock{at, uint32_t(window.size() - at), spec::checksum(window.data() + at, window.size() - at)};
  s.window_blocks[s.slot].push_back(b);
}

template <class T>
void write_typed(ColumnPlan& p, const Layout& layout, const std::vector<Run>& runs_by_start, uint32_t block_values,
                 uint64_t b0, uint64_t b1, RawWriter& out) {
  const uint64_t n = p.view->count;
  T* own_min = reinterpret_cast<T*>(p.node_min.data());
  T* own_max = reinterpret_cast<T*>(p.node_max.data());
  unsigned char* own_any = p.node_any.data();
  uint32_t* own_bits = p.node_bits.data();
  thread_local std::vector<T> buf;
  thread_local std::vector<uint8_t> codes;
  if (!p.staged && buf.size() < block_values) buf.resize(block_values);
  const bool quantile = p.index == IndexKind::quantile;
  std::unique_ptr<CodeLookup> code_of;
  if (quantile) codes.resize(block_values), code_of = std::make_unique<CodeLookup>(p.edges, p.gmin, p.gmax);
  const codec::ValueType type = codec::value_type(uint8_t(p.view->spec.dtype));
  const codec::ValueType code_type = codec::value_type(uint8_t(DType::u8));
  const spec::BitmapBins bin_of(p.gmin, p.gmax);
  for (uint64_t b = b0; b < b1; ++b) {
    const uint64_t cb = b * block_values, ce = std::min(n, cb + block_values), len = ce - cb;
    const T* values = p.staged ? reinterpret_cast<const T*>(p.staged) + (cb - p.staged_first) : buf.data();
    if (!p.staged) gather<T>(*p.view, layout, cb, len, buf.data());
    if (p.tail) p.tail->add(values, cb, len);
    // Runs are disjoint and sorted by start: walk those overlapping [cb, ce).
    while (p.run_cursor < runs_by_start.size()) {
      const Run& r = runs_by_start[p.run_cursor];
      if (r.start >= ce) break;
      uint64_t rb = std::max<uint64_t>(r.start, cb), re = std::min<uint64_t>(r.start + r.count, ce);
      const uint32_t node = r.node;
      const bool any = own_any[node];
      T mn = any ? own_min[node] : kAbove<T>, mx = any ? own_max[node] : kBelow<T>;
      const T* v = values + (rb - cb);
      const uint64_t count = re - rb;
      running_range(v, count, mn, mx);
      uint32_t bits = own_bits[node];
      if (!(mx < mn)) {  // else the node so far, this run too, holds only NaN: in no bin
        // Every value lies between mn and mx, so in a bin from bin(mn) to bin(mx) (bins are monotone).
        const uint32_t first = bin_of(double(mn)), last = bin_of(double(mx));
        const uint32_t all = uint32_t((uint64_t(2) << last) - (uint64_t(1) << first));
        bits |= first == last ? all : bin_of.mask(v, count, bits, all);
      }
      if (any || !(mx < mn)) own_min[node] = mn, own_max[node] = mx, own_any[node] = 1;  // a value that is not NaN: both ends set
      own_bits[node] = bits;
      if (r.start + r.count <= ce) ++p.run_cursor; else break;
    }
    codec::Context ctx;
    ctx.grid_origin = p.grid.origin, ctx.grid_step = p.grid.step;
    if (quantile) ctx.edges = p.edges.data();
    if (quantile) {
      for (uint64_t i = 0; i < len; ++i) codes[i] = (*code_of)(double(values[i]));
      ctx.codes = codes.data();
      ctx.bases = p.bases.data();
      // Codes blocks cover the same points as value blocks.
      store_block(p.codes, code_type, codes.data(), cb, len, b, {}, out);
    }
    store_block(p.values, type, values, cb, len, b, ctx, out);
  }
}

template <class T>
void finish_typed(ColumnPlan& p, const Layout& layout) {
  const size_t nodes = layout.nodes.size();
  T* own_min = reinterpret_cast<T*>(p.node_min.data());
  T* own_max = reinterpret_cast<T*>(p.node_max.data());
  unsigned char* own_any = p.node_any.data();
  // Subtree stats, children before parents (reverse preorder).
  for (size_t k = nodes; k-- > 0;) {
    const TreeNode& tn = layout.nodes[k];
    if (tn.is_leaf()) continue;
    for (size_t child : {k + 1, size_t(tn.right)}) {
      if (!own_any[child]) continue;
      if (!own_any[k]) own_min[k] = own_min[child], own_max[k] = own_max[child], own_any[k] = 1;
      own_min[k] = std::min(own_min[k], own_min[child]);
      own_max[k] = std::max(own_max[k], own_max[child]);
      p.node_bits[k] |= p.node_bits[child];
    }
  }
}

}  // namespace

void finite_range(const ColumnView& c, unsigned threads, double& lo, double& hi) {
  std::mutex m;
  bool any = false;
  lo = hi = 0;
  parallel_ranges(c.count, threads, 1 << 16, [&](uint64_t b, uint64_t e) {
    bool la = false;
    double l = 0, h = 0;
    dispatch_dtype(c.spec.dtype, [&](auto tag) {
      using T = decltype(tag);
      for (uint64_t i = b; i < e; ++i) {
        double v = double(value_at<T>(c, i));
        if (!std::isfinite(v)) continue;
        if (!la) l = h = v, la = true;
        l = std::min(l, v), h = std::max(h, v);
      }
    });
    std::lock_guard lock(m);
    if (!la) return;
    if (!any) lo = l, hi = h, any = true;
    lo = std::min(lo, l), hi = std::max(hi, h);
  });
}

void scan_column(ColumnPlan& p, unsigned threads) {
  dispatch_dtype(p.view->spec.dtype, [&](auto v) { scan_global<decltype(v)>(p, threads); });
}

double column_incoherence(const ColumnPlan& p, const Layout& layout) {
  return dispatch_dtype(p.view->spec.dtype, [&](auto v) { return incoherence<decltype(v)>(p, layout); });
}

void compute_quantile_edges(ColumnPlan& p) {
  dispatch_dtype(p.view->spec.dtype, [&](auto v) { compute_edges<decltype(v)>(p); });
  p.bases = codec::quantile_bases(uint8_t(p.view->spec.dtype), p.edges.data());
}

void choose_codecs(ColumnPlan& p, const Layout& layout, uint32_t block_values, bool lossless, int zstd_level) {
  dispatch_dtype(p.view->spec.dtype, [&](auto v) { choose_typed<decltype(v)>(p, layout, block_values, lossless, zstd_level); });
}

namespace {
// The stored bytes of choose_codecs' sample blocks under the plans of a trial (raw plans:
// the values themselves, stored in place without a block header).
template <class T>
void measure_trial(const ColumnPlan& p, const Layout& layout, uint32_t block_values, QuantileTrial& t) {
  const uint64_t n = p.view->count, len = std::min<uint64_t>(block_values, n);
  const codec::ValueType type = codec::value_type(uint8_t(p.view->spec.dtype));
  const codec::ValueType code_type = codec::value_type(uint8_t(DType::u8));
  const CodeLookup code_of(p.edges, p.gmin, p.gmax);
  std::vector<T> values(len);
  std::vector<uint8_t> codes(len);
  std::string out;
  auto stored = [&](const codec::Plan& plan, codec::ValueType vt, const void* v, const codec::Context& ctx) {
    if (plan.raw()) return double(len * vt.size);
    codec::encode(plan, vt, v, len, ctx, out);
    return double(out.size());
  };
  double sampled = 0;
  for (uint64_t start : codec_sample_starts(n, block_values)) {
    gather<T>(*p.view, layout, start, len, values.data());
    for (uint64_t i = 0; i < len; ++i) codes[i] = code_of(double(values[i]));
    codec::Context plain;
    plain.grid_origin = p.grid.origin, plain.grid_step = p.grid.step;
    codec::Context coded = plain;
    coded.codes = codes.data(), coded.bases = p.bases.data(), coded.edges = p.edges.data();
    t.values_without += stored(t.without, type, values.data(), plain);
    t.values_with += stored(t.with_values, type, values.data(), coded);
    t.codes += stored(t.with_codes, code_type, codes.data(), {});
    sampled += double(len);
  }
  if (sampled > 0) t.values_without /= sampled, t.values_with /= sampled, t.codes /= sampled;
}
}  // namespace

QuantileTrial try_quantile_index(ColumnPlan& p, const Layout& layout, uint32_t block_values, int zstd_level) {
  QuantileTrial t;
  p.index = IndexKind::none;
  choose_codecs(p, layout, block_values, true, zstd_level);
  t.without = p.values.plan;
  p.index = IndexKind::quantile;
  compute_quantile_edges(p);
  choose_codecs(p, layout, block_values, true, zstd_level);
  t.with_values = p.values.plan, t.with_codes = p.codes.plan;
  t.edges = p.edges, t.bases = p.bases;
  if (p.view->count) dispatch_dtype(p.view->spec.dtype, [&](auto v) { measure_trial<decltype(v)>(p, layout, block_values, t); });
  return t;
}

double quantile_code_bytes(ColumnPlan& p, const Layout& layout, uint32_t block_values, bool lossless, int zstd_level) {
  const uint64_t n = p.view->count, len = std::min<uint64_t>(block_values, n);
  if (!lossless || n == 0) return 1.0;
  compute_quantile_edges(p);
  std::vector<std::vector<uint8_t>> codes;
  dispatch_dtype(p.view->spec.dtype, [&](auto v) {
    using T = decltype(v);
    const CodeLookup code_of(p.edges, p.gmin, p.gmax);
    std::vector<T> values(len);
    for (uint64_t start : codec_sample_starts(n, block_values)) {
      gather<T>(*p.view, layout, start, len, values.data());
      codes.emplace_back(len);
      for (uint64_t i = 0; i < len; ++i) codes.back()[i] = code_of(double(values[i]));
    }
  });
  const codec::ValueType type = codec::value_type(uint8_t(DType::u8));
  std::vector<codec::Sample> cs;
  for (const std::vector<uint8_t>& c : codes) cs.push_back({c.data(), len, {}});
  const codec::Plan plan = codec::choose(type, {codec::Predictor::none}, cs, zstd_level, true);
  if (plan.raw()) return 1.0;
  double bytes = 0;
  std::string out;
  for (const codec::Sample& s : cs) codec::encode(plan, type, s.values, s.count, {}, out), bytes += double(out.size());
  return bytes / double(len * cs.size());
}

void take_quantile_trial(ColumnPlan& p, const QuantileTrial& t, bool quantile) {
  p.index = quantile ? IndexKind::quantile : IndexKind::none;
  p.values.plan = quantile ? t.with_values : t.without;
  p.codes.plan = t.with_codes;
  p.edges = quantile ? t.edges : std::vector<double>();
  p.bases = quantile ? t.bases : std::vector<uint64_t>();
}

namespace {
// The per-node statistics, zero for every node, on the column's first use (a column of no
// values has its node index finished without a block written).
void start_node_index(ColumnPlan& p, const Layout& layout) {
  if (!p.node_min.empty()) return;
  const size_t nodes = layout.nodes.size();
  p.node_min.assign(nodes * p.size, 0);
  p.node_max.assign(nodes * p.size, 0);
  p.node_any.assign(nodes, 0);
  p.node_bits.assign(nodes, 0);
}
}  // namespace

void write_blocks(ColumnPlan& p, const Layout& layout, const std::vector<Run>& runs_by_start, uint32_t block_values,
                  uint64_t b0, uint64_t b1, RawWriter& out) {
  start_node_index(p, layout);
  dispatch_dtype(p.view->spec.dtype, [&](auto v) { write_typed<decltype(v)>(p, layout, runs_by_start, block_values, b0, b1, out); });
}

void finish_node_index(ColumnPlan& p, const Layout& layout) {
  start_node_index(p, layout);
  dispatch_dtype(p.view->spec.dtype, [&](auto v) { finish_typed<decltype(v)>(p, layout); });
}

}  // namespace motes
