// The index choice of a particle file (ParticleFileWriter::choose_indexes, file_writer.hpp):
// what the indexes written after the columns will take, estimated before the columns are
// written, the value indexes and covers fitted to the index budget, and the automatic
// quantile codes in what remains.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "motes/core/threads.hpp"
#include "motes/particles/file_writer.hpp"
#include "motes/particles/spec.hpp"
#include "motes/particles/tail_cover.hpp"

namespace motes {

namespace {

// Without an index budget (WriteOptions::index_budget 0), automatic quantile codes may add
// at most this share of the data bytes, as the writer chose before the budget.
constexpr double kQuantileShare = 0.10;

// What the indexes written after the columns will take, estimated before the columns are
// written (the quantile codes are written with them): node ranges, bitmaps and covers by
// coding samples of them (node_index_estimate_typed, cover_shares); a tail's rows at
// log2(N) bits each, its sorted values at a share of their raw bytes: measured on pysco,
// FBPIC and synth.vpic files (bench/sizes.py, 2026-12-02), 0.29-0.50 of 4-byte values and
// 0.70 of 8-byte ones.
constexpr double kTailValueShareNarrow = 0.5, kTailValueShareWide = 0.75;
constexpr uint64_t kTableEntry = 24;  // bytes per block in a block table


// zstd (level 3, as metadata sections are coded) of `raw`, in bytes.
uint64_t zstd_bytes(const std::string& raw) {
  codec::Plan plan;
  plan.predictor = codec::Predictor::none, plan.layout = codec::Layout::whole, plan.coders = {codec::Coder::zstd};
  plan.zstd_level = 3;
  std::string out;
  codec::encode(plan, codec::value_type(uint8_t(DType::u8)), raw.data(), raw.size(), {}, out);
  return std::min<uint64_t>(out.size(), raw.size());
}

// A column's node ranges and bitmaps as stored, estimated on up to three windows of 128
// consecutive nodes (in preorder, a subtree's nodes are contiguous): each node's own points'
// range and bins, with its children's folded in where they lie in the window, zstd-coded as
// the sections are and scaled to every node. The positions' ranges are stored raw, as are
// every section of an uncompressed file.
template <class T>
uint64_t node_index_estimate_typed(const ColumnPlan& p, const Layout& layout, bool coded) {
  const uint64_t nodes = layout.nodes.size();
  const uint64_t raw_ranges = 2 * sizeof(T) * nodes, raw_bits = 4 * nodes;
  const bool positions = is_position_column(p.view->spec.name);
  if (!coded || nodes < 16) return raw_ranges + raw_bits + sizeof(spec::BitmapsHeader);
  const LevelRuns& lr = layout.levels.runs(layout.nodes);
  const spec::BitmapBins bin(p.gmin, p.gmax);
  const uint64_t w = std::min<uint64_t>(nodes, 128);
  std::vector<uint64_t> starts;
  for (uint64_t k = 1; k <= 3; ++k) {
    const uint64_t a = std::min(nodes - w, nodes * k / 4);
    if (starts.empty() || starts.back() != a) starts.push_back(a);
  }
  std::string ranges, bits;
  std::vector<T> mn(w), mx(w);
  std::vector<uint32_t> bb(w);
  std::vector<char> any(w);
  for (uint64_t a : starts) {
    for (uint64_t j = 0; j < w; ++j) {
      const uint32_t node = uint32_t(a + j);
      any[j] = 0, bb[j] = 0, mn[j] = mx[j] = T{};
      for (uint32_t r = lr.run_begin[node]; r < lr.run_begin[node + 1]; ++r)
        for (uint32_t k = 0; k < lr.runs[r].count; ++k) {
          const T v = p.view->at<T>(layout.order[lr.runs[r].start + k]);
          if (v != v) continue;  // NaN
          if (!any[j]) mn[j] = mx[j] = v, any[j] = 1;
          mn[j] = v < mn[j] ? v : mn[j], mx[j] = mx[j] < v ? v : mx[j];
          bb[j] |= 1u << bin(double(v));
        }
    }
    for (uint64_t j = w; j-- > 0;) {  // children after their parent: fold them in
      const TreeNode& tn = layout.nodes[a + j];
      if (tn.is_leaf()) continue;
      for (uint64_t child : {a + j + 1, uint64_t(tn.right)}) {
        if (child < a || child >= a + w || !any[child - a]) continue;
        const uint64_t c = child - a;
        if (!any[j]) mn[j] = mn[c], mx[j] = mx[c], any[j] = 1;
        mn[j] = std::min(mn[j], mn[c]), mx[j] = std::max(mx[j], mx[c]);
        bb[j] |= bb[c];
      }
    }
    ranges.append(reinterpret_cast<const char*>(mn.data()), w * sizeof(T));
    ranges.append(reinterpret_cast<const char*>(mx.data()), w * sizeof(T));
    bits.append(reinterpret_cast<const char*>(bb.data()), w * 4);
  }
  auto scaled = [](const std::string& sample, uint64_t all) {
    return uint64_t(std::ceil(double(zstd_bytes(sample)) / double(sample.size()) * double(all)));
  };
  return (positions ? raw_ranges : scaled(ranges, raw_ranges)) + scaled(bits, raw_bits) + sizeof(spec::BitmapsHeader);
}

// A column's tail (tail_index.cpp): its entries on each side (TailSides), as
// make_tail_collector's limits and the collector's cap on ties will leave them, from a
// smaller even sample.
template <class T>
TailSides tail_sides_typed(const ColumnView& c, double fraction) {
  const uint64_t n = c.count;
  constexpr uint64_t kSample = 1 << 14;  // the collector's is 1 << 16: an estimate needs fewer
  std::vector<T> s = sorted_sample<T>(c, kSample);
  if (s.empty() || !(fraction > 0)) return {};
  const double scale = double(n) / double(std::min<uint64_t>(n, kSample));
  const size_t k = std::min(s.size() - 1, size_t(fraction * double(s.size()))), top = s.size() - 1 - k;
  const T lo = s[k], hi = s[std::max(k, top)];
  if (!(lo < hi)) return {};
  const double cap = double(2 * uint64_t(std::ceil(fraction * double(n))) + spec::kIdBlockValues);
  // Values at or below lo: those past the cap drop their innermost value and its ties.
  size_t low = size_t(std::upper_bound(s.begin(), s.end(), lo) - s.begin());
  while (low > 0 && double(low) * scale > cap) low = size_t(std::lower_bound(s.begin(), s.end(), s[low - 1]) - s.begin());
  size_t first = size_t(std::lower_bound(s.begin(), s.end(), hi) - s.begin());
  while (first < s.size() && double(s.size() - first) * scale > cap)
    first = size_t(std::upper_bound(s.begin(), s.end(), s[first]) - s.begin());
  return {double(low) * scale, double(s.size() - first) * scale};
}

// Stored bytes per value of each column's values at scattered rows, coded as a cover codes
// them (code_index_blocks): up to 4096 rows of a fixed pseudo-random sequence.
std::vector<double> cover_shares(const std::vector<ColumnView>& columns, const std::vector<int>& covered, int zstd_level) {
  std::vector<double> share(columns.size(), 0.0);
  for (int ci : covered) {
    const ColumnView& c = columns[size_t(ci)];
    const uint64_t n = c.count, m = std::min<uint64_t>(n, spec::kIdBlockValues);
    if (!m) continue;
    const size_t size = dtype_size(c.spec.dtype);
    std::string raw(m * size, '\0');
    uint64_t state = 0x2545f4914f6cdd1dULL;
    for (uint64_t i = 0; i < m; ++i) {
      state = state * 6364136223846793005ULL + 1442695040888963407ULL;
      std::memcpy(raw.data() + i * size, static_cast<const char*>(c.data) + int64_t((state >> 11) % n) * c.stride(), size);
    }
    std::string out;
    std::vector<StoredBlock> blocks;
    code_index_blocks(raw.data(), m, c.spec.dtype, zstd_level, 1, out, blocks);
    share[size_t(ci)] = double(out.size()) / double(m);
  }
  return share;
}

}  // namespace

// The indexes built after the columns (tree, node ranges and bitmaps: `node_indexes` per
// column, tails and covers, with the tails' sides at fraction tail_fraction_ and covers at
// tail_cover_) and the quantile codes asked for, estimated (see IndexEstimate's shares).
void ParticleFileWriter::estimate_indexes(IndexEstimate& e, const std::vector<uint64_t>& node_indexes,
                                          const std::vector<int>& tailed, const std::vector<TailSides>& sides,
                                          const std::vector<double>& shares) const {
  const uint64_t nodes = layout_.nodes.size(), blocks = (n_ + bv_ - 1) / bv_;
  e = {};
  e.tree = nodes * sizeof(TreeNode);
  for (size_t i = 0; i < plans_.size(); ++i) {
    e.ranges += node_indexes[i];
    if (plans_[i].index == IndexKind::quantile)  // asked: the codes, their block table or checksums, the edges
      e.asked_codes += uint64_t(asked_code_bytes_[i] * double(n_)) + kTableEntry * blocks + (spec::kQuantileBins + 1) * sizeof(double);
  }
  if (!(tail_fraction_ > 0)) return;
  const double row_bytes = std::log2(double(std::max<uint64_t>(n_, 2))) / 8.0;
  const double cover_want = tail_cover_ > 0 ? std::ceil(tail_cover_ * double(n_)) : 0.0;
  for (size_t t = 0; t < tailed.size(); ++t) {
    const size_t c = size_t(tailed[t]);
    const double entries = sides[t].low + sides[t].high;
    if (entries <= 0) continue;
    const size_t size = plans_[c].size;
    const double blocks_of = std::ceil(entries / spec::kIdBlockValues);
    e.tails += uint64_t(entries * ((size > 4 ? kTailValueShareWide : kTailValueShareNarrow) * double(size) + row_bytes) +
                        spec::kTailBoundsHead + blocks_of * (16 + 2 * kTableEntry));
    const double covered = std::min(sides[t].low, cover_want) + std::min(sides[t].high, cover_want);
    if (covered <= 0) continue;
    double cover = spec::kTailCoverHead;
    for (int o : cover_columns_)
      if (size_t(o) != c) cover += covered * shares[size_t(o)] + kTableEntry * std::ceil(covered / spec::kIdBlockValues) + 4;
    e.covers += uint64_t(cover);
  }
}

// The index budget (WriteOptions::index_budget, kIndexBudget by default): the tree, node
// ranges, bitmaps, tails and covers are estimated (estimate_indexes) and quantile codes
// asked for counted; when these exceed the budget, the covers shrink first, then the tails
// (each only when the options left it at its default: fit_value_indexes); the automatic
// quantile codes get what remains (choose_quantile_codes). Candidates are the columns
// scoring above 1/2 on spatial incoherence (column_incoherence; never the id column, which
// the id index finds). With index_budget 0 the writer chooses as before the budget: the
// candidates in decreasing score while all codes stay within kQuantileShare of the data
// bytes, the value indexes as asked.
void ParticleFileWriter::choose_indexes() {
  planned_.assign(plans_.size(), false);
  const bool budgeted = options_.index_budget > 0;
  // Format 2.7's writer (ids by their index) gives ids no quantile index: the id index finds
  // them, and the codes would only repeat it. With ids_by_index off it chooses as 2.6 did.
  const int ids = lossless_ && options_.ids_by_index ? id_column_of(columns_, options_) : -1;
  // Per column (a thread each): its incoherence when automatic, its node index estimated.
  std::vector<double> scores(plans_.size(), 0.0);
  std::vector<uint64_t> node_indexes(plans_.size(), 0);
  asked_code_bytes_.assign(plans_.size(), 0.0);
  parallel_for(plans_.size(), threads_, [&](uint64_t i) {
    ColumnPlan& p = plans_[i];
    if (budgeted)
      node_indexes[i] = dispatch_dtype(p.view->spec.dtype,
                                       [&](auto v) { return node_index_estimate_typed<decltype(v)>(p, layout_, lossless_); });
    if (budgeted && p.index == IndexKind::quantile)
      asked_code_bytes_[i] = quantile_code_bytes(p, layout_, bv_, lossless_, options_.zstd_level);
    if (p.index != IndexKind::automatic) return;
    p.index = IndexKind::none;
    if (int(i) == ids) return;  // found through the id index, which quantile codes would only repeat
    scores[i] = column_incoherence(p, layout_);
  });
  std::vector<std::pair<double, size_t>> candidates;
  for (size_t i = 0; i < plans_.size(); ++i)
    if (scores[i] > 0.5) candidates.push_back({scores[i], i});
  std::sort(candidates.begin(), candidates.end(), [](auto& a, auto& b) { return a.first > b.first || (a.first == b.first && a.second < b.second); });
  if (!budgeted) {
    const uint64_t code_cost = spec::align_up(n_, spec::kPage) + (spec::kQuantileBins + 1) * sizeof(double);
    uint64_t code_bytes = 0;
    for (const ColumnPlan& p : plans_)
      if (p.index == IndexKind::quantile) code_bytes += code_cost;
    for (const auto& [score, i] : candidates) {
      if (double(code_bytes + code_cost) > kQuantileShare * double(data_bytes_)) break;
      plans_[i].index = IndexKind::quantile;
      code_bytes += code_cost;
    }
    phases_.lap("choose indexes");
    return;
  }
  const double budget = options_.index_budget * double(data_bytes_);
  const double remaining = budget - double(fit_value_indexes(budget, node_indexes).total());
  phases_.lap("choose indexes");
  if (!candidates.empty()) choose_quantile_codes(candidates, remaining);
}

// The value indexes and covers within the budget, as far as they are the options' defaults
// (choose_indexes): what they and the rest (tree, ranges, bitmaps, codes asked) will take.
IndexEstimate ParticleFileWriter::fit_value_indexes(double budget, const std::vector<uint64_t>& node_indexes) {
  std::vector<int> tailed;
  if (lossless_ && n_ > 0) tailed = tail_columns_of(columns_, options_);
  else tail_fraction_ = 0;
  auto sides_at = [&](double fraction) {
    std::vector<TailSides> out(tailed.size());
    parallel_for(tailed.size(), threads_, [&](uint64_t t) {
      const ColumnView& c = columns_[size_t(tailed[t])];
      out[t] = dispatch_dtype(c.spec.dtype, [&](auto v) { return tail_sides_typed<decltype(v)>(c, fraction); });
    });
    return out;
  };
  std::vector<TailSides> sides = sides_at(tail_fraction_);
  const std::vector<double> shares = tailed.empty() ? std::vector<double>(columns_.size(), 0.0)
                                                    : cover_shares(columns_, cover_columns_, options_.zstd_level);
  IndexEstimate e;
  estimate_indexes(e, node_indexes, tailed, sides, shares);
  // Over the budget, the defaults give way, in proportion: the covers first (down to none),
  // then, when the tree, the ranges and the tails alone exceed it (small files: a tail's
  // tables and head do not shrink with it), the tails. Quantile codes asked for (or kept
  // from a series' first step) are kept: they may take the covers' share, not the tails'.
  const bool covers_default = options_.tail_cover == spec::kDefaultTailCover && !options_.tail_cover_columns;
  const bool tails_default = options_.tail_fraction == spec::kDefaultTailFraction && !options_.tail_columns;
  if (double(e.total()) > budget && e.covers > 0 && covers_default) {
    const double room = budget - double(e.total() - e.covers);
    tail_cover_ = room > 0 ? tail_cover_ * room / double(e.covers) : 0.0;
    if (tail_cover_ * double(n_) < 1) tail_cover_ = 0;
    estimate_indexes(e, node_indexes, tailed, sides, shares);
  }
  if (double(e.tree + e.ranges + e.tails + e.covers) > budget && e.tails > 0 && tails_default) {
    const double room = budget - double(e.tree + e.ranges);
    tail_fraction_ = room > 0 ? tail_fraction_ * room / double(e.tails + e.covers) : 0.0;
    if (tail_fraction_ * double(n_) < 1) tail_fraction_ = 0;
    tail_cover_ = std::min(tail_cover_, tail_fraction_);
    sides = sides_at(tail_fraction_);
    estimate_indexes(e, node_indexes, tailed, sides, shares);
  }
  return e;
}

// Automatic quantile codes in `remaining` bytes of the budget, from the candidates (score,
// column), most incoherent first. When all fit as raw codes, or none could, they are taken
// or not as they are. Otherwise each is tried with and without codes on sample blocks
// (try_quantile_index): the codes' net cost is their bytes less what the column's values
// save by being coded against them (binned residuals). Those whose codes fit what remains
// are taken: the ones that pay for themselves first (most incoherent first), then by
// incoherence per byte of net cost; the plans of the trial are kept for plan_codecs.
void ParticleFileWriter::choose_quantile_codes(const std::vector<std::pair<double, size_t>>& candidates, double remaining) {
  const uint64_t blocks = (n_ + bv_ - 1) / bv_;
  const double edges = (spec::kQuantileBins + 1) * sizeof(double);
  const double most = double(n_ + 8 * blocks) + edges;  // raw codes, their checksums, the edges
  if (double(candidates.size()) * most <= remaining || edges > remaining) {
    for (const auto& [score, i] : candidates)
      if (most <= remaining) plans_[i].index = IndexKind::quantile, remaining -= most;
    return;
  }
  std::vector<QuantileTrial> trials(candidates.size());
  if (lossless_) {
    parallel_for(candidates.size(), threads_, [&](uint64_t k) {
      trials[k] = try_quantile_index(plans_[candidates[k].second], layout_, bv_, options_.zstd_level);
    });
  } else {
    for (QuantileTrial& t : trials) t.codes = 1;  // every stream raw: the codes save nothing
  }
  std::vector<size_t> order(candidates.size());
  for (size_t k = 0; k < order.size(); ++k) order[k] = k;
  auto key = [&](size_t k) {
    const double net = trials[k].net();
    return net <= 0 ? std::make_pair(0, -candidates[k].first) : std::make_pair(1, -candidates[k].first / net);
  };
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return key(a) < key(b); });
  for (size_t k : order) {
    const size_t i = candidates[k].second;
    const double cost =
        trials[k].codes * double(n_) + double((trials[k].with_codes.raw() ? 8 : kTableEntry) * blocks) + edges;
    const bool take = cost <= remaining;
    if (take) remaining -= cost;
    if (lossless_) take_quantile_trial(plans_[i], trials[k], take), planned_[i] = true;
    else plans_[i].index = take ? IndexKind::quantile : IndexKind::none;
  }
  phases_.lap("quantile trials");
}

}  // namespace motes
