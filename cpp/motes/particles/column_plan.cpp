// Planning one column of a particle file (column_writer.hpp): its global range, how spatially
// incoherent it is, its quantile edges, the codecs chosen on sample blocks, and the trial of
// a quantile index. Writing its blocks is column_writer.cpp's.
#include "motes/particles/column_writer.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <mutex>

#include "motes/core/threads.hpp"
#include "motes/particles/column_values.hpp"
#include "motes/particles/spec.hpp"

namespace motes {

namespace {

using namespace column_values;

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

using namespace column_values;

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

}  // namespace motes
