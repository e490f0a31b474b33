// Writes one particle file (writer.hpp) in phases, one method of ParticleFileWriter each:
// the error-bounded columns moved to their grids, the layout, the row stage, the columns'
// ranges, index kinds and codecs, the columns, the value indexes (id, tails), the metadata
// sections (writer_sections.cpp) and the commit. What the writer is given is checked in
// writer_inputs.cpp.
#include "motes/particles/writer.hpp"

#ifdef __GLIBC__
#include <malloc.h>
#endif

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <optional>

#include "motes/container/container.hpp"
#include "motes/core/text.hpp"
#include "motes/core/threads.hpp"
#include "motes/io/files.hpp"
#include "motes/particles/column_writer.hpp"
#include "motes/particles/id_index.hpp"
#include "motes/particles/spec.hpp"
#include "motes/particles/tail_cover.hpp"

namespace motes {

namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

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

struct IndexEstimate {
  uint64_t tree = 0, ranges = 0, tails = 0, covers = 0, asked_codes = 0;
  uint64_t total() const { return tree + ranges + tails + covers + asked_codes; }
};

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

// A column's tail (tail_index.cpp): its entries on each side, as make_tail_collector's
// limits and the collector's cap on ties will leave them, from a smaller even sample.
struct TailSides {
  double low = 0, high = 0;
};
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

// Raw streams are written in place by the threads that gather them.
struct FileRawWriter final : RawWriter {
  AtomicFile& file;
  explicit FileRawWriter(AtomicFile& f) : file(f) {}
  void write_at(const void* data, size_t n, uint64_t offset) override {
    file.pwrite_all(data, n, offset);
    file.start_writeback(offset, n);
  }
};

// One particle file on its way to disk: write() runs the phases in order, each a method
// that ends its entry of the phase table (WriteSummary::phases). The file is created
// once the columns are planned, written from the first byte after the header page on,
// and committed (header last, synced, renamed) by commit().
class ParticleFileWriter {
 public:
  ParticleFileWriter(const std::string& path, const std::vector<ColumnView>& given, const WriteOptions& options,
                     CodecMemo* memo);
  ParticleFileWriter(const ParticleFileWriter&) = delete;
  ParticleFileWriter& operator=(const ParticleFileWriter&) = delete;
  WriteSummary write();

 private:
  void quantize_bounded_columns();
  void check_block_options() const;
  void lay_out();
  void stage_rows();
  void scan_columns();
  void choose_indexes();
  void plan_codecs();
  void write_column_streams();
  void write_id_index();
  void write_tail_indexes();
  void write_derived();
  void cover(TailIndexSections& t, double fraction, unsigned threads) const;
  void place_tail(TailIndexSections t);
  container::SectionsBuilder sections();
  void commit(container::SectionsBuilder& meta);

  const ColumnView& position(const char* axis) const;
  void progress(const std::string& stage, uint64_t done, uint64_t total) const {
    if (options_.progress) options_.progress(stage, done, total);
  }
  // Moves the coded blocks of window slot `slot` into the file (write_columns' place).
  void place_window(unsigned slot);
  // Writes a value index's coded blocks next in the file; their offsets become the file's.
  void append_blocks(const std::string& bytes, std::vector<StoredBlock>& blocks);

  const std::string& path_;
  const WriteOptions& options_;
  CodecMemo* const memo_;
  const unsigned threads_;
  const bool lossless_;
  const uint32_t bv_;  // values per block
  WriteSummary summary_;
  Phases& phases_ = summary_.phases;
  // The caller's columns; error-bounded ones then point at their values on the grid.
  std::vector<ColumnView> columns_;
  std::vector<codec::Grid> grids_;
  std::vector<std::vector<unsigned char>> quantized_;
  Layout layout_;
  uint64_t n_ = 0;           // particles
  uint64_t data_bytes_ = 0;  // the columns' raw bytes
  Clock::time_point columns_start_;
  std::optional<RowStage> stage_;
  std::vector<ColumnPlan> plans_;
  std::optional<AtomicFile> file_;
  uint64_t offset_ = spec::kPage;  // where the next bytes go
  std::optional<IdIndexSections> ids_;
  std::vector<TailIndexSections> tails_;
  std::vector<int> cover_columns_;  // the columns tail covers hold (tail_cover_columns_of)
  std::vector<DerivedQuantity> derived_;
  // The tail fraction and cover share written (the options', unless the index budget
  // shrank them: choose_indexes), and the columns whose codecs choose_indexes chose.
  double tail_fraction_ = 0, tail_cover_ = 0;
  std::vector<bool> planned_;
  std::vector<double> asked_code_bytes_;  // per value, of the quantile codes asked for (choose_indexes)
  void estimate_indexes(IndexEstimate& e, const std::vector<uint64_t>& node_indexes, const std::vector<int>& tailed,
                        const std::vector<TailSides>& sides, const std::vector<double>& shares) const;
  IndexEstimate fit_value_indexes(double budget, const std::vector<uint64_t>& node_indexes);
  void choose_quantile_codes(const std::vector<std::pair<double, size_t>>& candidates, double remaining);
};

ParticleFileWriter::ParticleFileWriter(const std::string& path, const std::vector<ColumnView>& given,
                                       const WriteOptions& options, CodecMemo* memo)
    : path_(path),
      options_(options),
      memo_(memo),
      threads_(options.layout.threads ? options.layout.threads : default_threads()),
      lossless_(options.compression == Compression::lossless),
      bv_(options.block_values),
      columns_(given),
      grids_(given.size()),
      quantized_(given.size()),
      tail_fraction_(options.tail_fraction),
      tail_cover_(options.tail_cover) {}

WriteSummary ParticleFileWriter::write() {
  quantize_bounded_columns();
  check_block_options();
  cover_columns_ = tail_cover_columns_of(columns_, options_);  // their UsageErrors before any work
  check_derived(columns_, options_);
  phases_.lap("quantize");
  lay_out();
  stage_rows();
  scan_columns();
  choose_indexes();
  plan_codecs();
  write_column_streams();
  write_id_index();
  write_tail_indexes();
  write_derived();
  container::SectionsBuilder meta = sections();
  commit(meta);
  return std::move(summary_);
}

const ColumnView& ParticleFileWriter::position(const char* axis) const {
  for (const ColumnView& c : columns_)
    if (c.spec.name == axis) return c;
  throw UsageError(std::string("missing column ") + axis);
}

// Error-bounded columns are moved to their grids first: the layout, the index and the
// codecs then see the values as they will be stored (queries are exact on those).
void ParticleFileWriter::quantize_bounded_columns() {
  for (size_t i = 0; i < columns_.size(); ++i) {
    ColumnView& c = columns_[i];
    if (!(c.spec.error_bound > 0)) continue;
    double lo, hi;
    finite_range(c, threads_, lo, hi);
    grids_[i] = codec::make_grid(uint8_t(c.spec.dtype), lo, hi, c.spec.error_bound, c.spec.name);
    const size_t size = dtype_size(c.spec.dtype);
    quantized_[i].resize(std::max<uint64_t>(c.count, 1) * size);
    std::atomic<uint64_t> worst_bits{0};
    parallel_ranges(c.count, threads_, 1 << 16, [&](uint64_t b, uint64_t e) {
      double w = codec::quantize(uint8_t(c.spec.dtype), grids_[i], static_cast<const char*>(c.data) + int64_t(b) * c.stride(),
                                 c.stride(), e - b, quantized_[i].data() + b * size);
      uint64_t bits;
      std::memcpy(&bits, &w, 8);
      for (uint64_t cur = worst_bits.load(); bits > cur && !worst_bits.compare_exchange_weak(cur, bits);) {
      }
    });
    double worst;
    uint64_t wb = worst_bits.load();
    std::memcpy(&worst, &wb, 8);
    if (!(worst <= c.spec.error_bound))  // the grid's margin makes this impossible; a check, not a hope
      throw Error("column '" + c.spec.name + "': a stored value differs by " + number_text(worst) + " from the given one, more than its bound " +
                  number_text(c.spec.error_bound) + " (a bug: please report it)");
    c.data = quantized_[i].data();
    c.stride_bytes = std::nullopt;
  }
}

void ParticleFileWriter::check_block_options() const {
  uint32_t widest = 1;
  for (const ColumnView& c : columns_) widest = std::max<uint32_t>(widest, uint32_t(dtype_size(c.spec.dtype)));
  if (bv_ < 64 || bv_ > spec::kMaxBlockValues || uint64_t(bv_) * widest > codec::kMaxBlockBytes)
    throw UsageError("block_values must be in [64, " + std::to_string(spec::kMaxBlockValues) +
                     "] and hold at most 1 MiB of values, got " + std::to_string(bv_));
  if (!(options_.index_budget >= 0 && options_.index_budget <= 1))
    throw UsageError("index_budget must be in [0, 1] (0: no budget), got " + number_text(options_.index_budget));
  if (options_.zstd_level < -7 || options_.zstd_level > 19)
    throw UsageError("zstd_level must be in [-7, 19], got " + std::to_string(options_.zstd_level));
}

void ParticleFileWriter::lay_out() {
  const auto t0 = Clock::now();
  progress("layout", 0, 1);
  layout_ = build_layout(position("x"), position("y"), position("z"), options_.layout);
  progress("layout", 1, 1);
  n_ = columns_[0].count;
  summary_.layout_seconds = seconds_since(t0);
  phases_.merge(layout_.phases, "layout ");
  phases_.restart();
  columns_start_ = Clock::now();
  for (const ColumnView& c : columns_) data_bytes_ += n_ * dtype_size(c.spec.dtype);
}

// The row stage: every column's rows side by side, for the gathers in file order
// (row_stage.hpp). Made after the layout, whose sort keys are gone by then: the stage and
// the keys together would raise the write's peak memory.
void ParticleFileWriter::stage_rows() {
  if (options_.stage_rows && data_bytes_ >= options_.stage_min_bytes &&
      RowStage::pays(position("x"), position("y"), position("z"))) {
#ifdef __GLIBC__
    // The treelets' buffers, freed into the worker threads' malloc arenas, stay resident
    // there (about 8 bytes per particle): give them back before the stage's copy.
    malloc_trim(0);
#endif
    stage_.emplace(columns_, threads_);
  }
  phases_.lap("row stage");
}

// Each column's range and NaN count; the index kind asked for (positions, 1-byte columns
// and empty files get none).
void ParticleFileWriter::scan_columns() {
  plans_.resize(columns_.size());
  for (size_t i = 0; i < columns_.size(); ++i) {
    ColumnPlan& p = plans_[i];
    p.view = &columns_[i];
    p.size = dtype_size(columns_[i].spec.dtype);
    p.grid = grids_[i];
    scan_column(p, threads_);
    p.index = columns_[i].spec.index;
    if (is_position_column(columns_[i].spec.name) || p.size == 1 || n_ == 0) p.index = IndexKind::none;
  }
  phases_.lap("scan");
}

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

// Tail collectors, quantile edges, and the codec plans: from the memo where it has them
// for a column, else chosen on samples (and kept in the memo).
void ParticleFileWriter::plan_codecs() {
  std::vector<bool> tailed(plans_.size(), false);
  if (lossless_ && n_ > 0)
    for (int c : tail_columns_of(columns_, options_)) tailed[size_t(c)] = tail_fraction_ > 0;  // 0: the budget left none
  const uint64_t sampled = std::min<uint64_t>(n_, bv_) * codec_sample_starts(n_, bv_).size();
  std::vector<CodecMemo::Key> keys;
  std::vector<const CodecMemo::Entry*> reused(plans_.size(), nullptr);
  for (size_t i = 0; i < plans_.size(); ++i) {
    keys.push_back({columns_[i].spec.name, columns_[i].spec.dtype, plans_[i].index, plans_[i].grid.step > 0, lossless_,
                    options_.zstd_level});
    if (memo_ && !planned_[i]) reused[i] = memo_->reusable(keys[i], sampled);
  }
  parallel_for(plans_.size(), threads_, [&](uint64_t i) {
    ColumnPlan& p = plans_[i];
    if (tailed[i]) p.tail = make_tail_collector(columns_[i], tail_fraction_);
    if (planned_[i]) return;  // chosen by choose_indexes' trial, edges included
    if (p.index == IndexKind::quantile) compute_quantile_edges(p);
    if (reused[i]) {
      p.values.plan = reused[i]->values;
      p.codes.plan = reused[i]->codes;
    } else {
      choose_codecs(p, layout_, bv_, lossless_, options_.zstd_level);
    }
  });
  for (size_t i = 0; memo_ && n_ && i < plans_.size(); ++i)
    if (!reused[i]) memo_->keep(keys[i], sampled, plans_[i].values.plan, plans_[i].codes.plan);
  // The id column stored only as its id index (written after the columns).
  if (const int ic = id_column_of(columns_, options_); ic >= 0 && lossless_ && n_ > 0 && options_.ids_by_index)
    plans_[size_t(ic)].values.by_index = true;
  phases_.lap("plan");
}

// Raw streams first, page aligned, in schema order (read in place); coded blocks follow,
// window by window (the first rows of every column before the next rows of any).
void ParticleFileWriter::write_column_streams() {
  for (ColumnPlan& p : plans_) {
    if (p.values.plan.raw() && !p.values.by_index) {
      p.values.offset = offset_;
      offset_ = spec::align_up(offset_ + n_ * p.size, spec::kPage);
    }
    if (p.index == IndexKind::quantile && p.codes.plan.raw()) {
      p.codes.offset = offset_;
      offset_ = spec::align_up(offset_ + n_, spec::kPage);
    }
  }
  file_.emplace(path_, options_.sync);
  FileRawWriter raw_out(*file_);
  // The runs in file order, copied: the column passes walk them in order (indexes into
  // the node-ordered runs would miss the cache once per run).
  std::vector<Run> runs_by_start = layout_.levels.runs(layout_.nodes).runs;
  std::sort(runs_by_start.begin(), runs_by_start.end(), [](const Run& a, const Run& b) { return a.start < b.start; });
  const uint64_t blocks = (n_ + bv_ - 1) / bv_;
  const uint64_t window = std::max<uint64_t>(1, options_.window_rows / bv_);  // blocks per window
  progress("columns", 0, blocks);
  // The pipeline codes the next window while one is placed.
  write_columns(plans_, layout_, runs_by_start, bv_, window, threads_, stage_ ? &*stage_ : nullptr, raw_out,
                [&](unsigned slot) { place_window(slot); }, [&](uint64_t done) { progress("columns", done, blocks); });
  stage_.reset();  // before the id index's sort buffers
  phases_.lap("columns");
}

// Coded blocks are placed window by window, in order, each window's columns in order.
void ParticleFileWriter::place_window(unsigned slot) {
  for (ColumnPlan& p : plans_)
    for (StreamOut* s : {&p.values, &p.codes}) {
      std::string& bytes = s->window[slot];
      if (bytes.empty()) continue;
      for (size_t b : s->window_blocks[slot]) s->blocks[b].offset += offset_;
      file_->pwrite_all(bytes.data(), bytes.size(), offset_);
      file_->start_writeback(offset_, bytes.size());
      offset_ += bytes.size();
      bytes.clear();
      s->window_blocks[slot].clear();
    }
}

void ParticleFileWriter::append_blocks(const std::string& bytes, std::vector<StoredBlock>& blocks) {
  for (StoredBlock& b : blocks) b.offset += offset_;
  file_->pwrite_all(bytes.data(), bytes.size(), offset_);
  offset_ += bytes.size();
}

// The id index (2.1): the id column's values sorted with their file positions, after the columns.
void ParticleFileWriter::write_id_index() {
  if (const int ic = id_column_of(columns_, options_); ic >= 0 && lossless_ && n_ > 0) {
    progress("id index", 0, 1);
    const ColumnView& v = columns_[size_t(ic)];
    ids_ = build_id_index(uint32_t(ic), v.spec.dtype, v.data, v.stride(), n_, layout_.order.data(), options_.zstd_level,
                          threads_, options_.ids_by_index);
    append_blocks(ids_->keys, ids_->key_blocks);
    append_blocks(ids_->rows, ids_->row_blocks);
    progress("id index", 1, 1);
  }
  phases_.lap("id index");
}

// Tail indexes (2.2), each with its cover (2.3) after it, placed in column order. They are
// made at once, a column to a thread (each a sort of its entries and a gather of the
// covered columns at their rows: small tasks that one core ran one after another).
void ParticleFileWriter::write_tail_indexes() {
  std::vector<std::optional<TailIndexSections>> done(plans_.size());
  parallel_for(plans_.size(), threads_, [&](uint64_t i) {
    if (!plans_[i].tail) return;
    done[i] = plans_[i].tail->finish(uint32_t(i), n_, options_.zstd_level, 1);
    plans_[i].tail.reset();
    if (done[i]) cover(*done[i], tail_cover_, 1);
  });
  for (std::optional<TailIndexSections>& t : done)
    if (t) place_tail(std::move(*t));
  phases_.lap("tail indexes");
}

// Derived quantities (2.4): each one's values computed in the caller's order (derive_values)
// and summarised; its tail, at column = columns + d, placed and covered as the columns' are.
// The values themselves are not stored.
void ParticleFileWriter::write_derived() {
  if (options_.derived.empty() || !lossless_ || n_ == 0) return;
  const double fraction = options_.tail_fraction > 0 ? options_.tail_fraction : spec::kDefaultTailFraction;
  for (size_t d = 0; d < options_.derived.size(); ++d) {
    progress("derived quantities", d, options_.derived.size());
    const DerivedSpec& spec = options_.derived[d];
    DerivedSections s = derived_sections(spec, options_.derive ? options_.derive(spec.expression, columns_) : derive_values(spec.expression, columns_), layout_.order.data(), n_,
                                         uint32_t(columns_.size() + d), fraction, options_.zstd_level, threads_);
    derived_.push_back(std::move(s.quantity));
    if (s.tail) {
      cover(*s.tail, options_.tail_cover, threads_);  // asked by name: outside the budget
      place_tail(std::move(*s.tail));
    }
  }
  progress("derived quantities", options_.derived.size(), options_.derived.size());
  phases_.lap("derived quantities");
}

// A tail's cover (2.3): the covered columns' values at the `fraction` of each side.
void ParticleFileWriter::cover(TailIndexSections& t, double fraction, unsigned threads) const {
  cover_tail(t, columns_, cover_columns_, layout_.order.data(), n_, fraction, options_.zstd_level, threads);
}

// A tail's values and rows next in the file, then its cover after them.
void ParticleFileWriter::place_tail(TailIndexSections t) {
  append_blocks(t.values, t.value_blocks);
  append_blocks(t.rows, t.row_blocks);
  for (TailIndexSections::Cover& c : t.covers) append_blocks(c.values, c.blocks);
  t.entry_rows = {};
  tails_.push_back(std::move(t));
}

// The per-node indexes complete (subtree ranges and bitmaps), the metadata sections after
// the bulk data (writer_sections.cpp).
container::SectionsBuilder ParticleFileWriter::sections() {
  offset_ = spec::align_up(offset_, 8);
  for (ColumnPlan& p : plans_) finish_node_index(p, layout_);
  return metadata_sections(offset_, lossless_, n_, plans_, layout_, ids_ ? &*ids_ : nullptr, tails_, derived_);
}

// The sections, the section table and the header (2.0, 2.1 with an id index, 2.2 with tail
// indexes), then sync and rename (SectionsBuilder::write); the summary.
void ParticleFileWriter::commit(container::SectionsBuilder& meta) {
  spec::ParticleArea area{};
  area.particle_count = n_;
  area.column_count = uint32_t(plans_.size());
  area.node_count = uint32_t(layout_.nodes.size());
  area.level_count = layout_.levels.level_count();
  area.lod_count = options_.layout.lod_count;
  area.leaf_size = options_.layout.leaf_size;
  area.block_values = bv_;
  area.detail_level = layout_.levels.detail_level;
  area.region_depth = layout_.levels.region_depth;
  if (area.detail_level) meta.features |= container::kFeatureRegionalDetail;
  for (int a = 0; a < 3; ++a) area.bounds_lo[a] = layout_.bounds.lo[a], area.bounds_hi[a] = layout_.bounds.hi[a];
  const bool covered = std::any_of(tails_.begin(), tails_.end(), [](const TailIndexSections& t) { return !t.covers.empty(); });
  const uint16_t minor = (meta.features & container::kFeatureIdsByIndex)       ? spec::kVersionMinor
                         : (meta.features & container::kFeatureRegionalDetail) ? spec::kRegionalVersionMinor
                         : (meta.features & container::kFeaturePackedBlocks) ? spec::kPackedVersionMinor
                         : !derived_.empty() ? spec::kDerivedVersionMinor
                         : covered         ? spec::kCoverVersionMinor
                         : !tails_.empty() ? spec::kTailVersionMinor
                         : ids_            ? spec::kIdVersionMinor
                                           : spec::kPlainVersionMinor;
  const container::Header h = meta.write(*file_, spec::kMagic, spec::kVersionMajor, minor, &area, sizeof area);
  phases_.lap("metadata and sync");

  summary_.particle_count = n_;
  summary_.file_bytes = h.file_size;
  summary_.header_checksum = h.header_checksum;
  summary_.data_bytes = data_bytes_;
  for (const ColumnPlan& p : plans_) {
    summary_.stored_bytes += p.values.by_index ? 0 : p.values.plan.raw() ? n_ * p.size : [&] {
      uint64_t t = 0;
      for (const StoredBlock& b : p.values.blocks) t += b.stored;
      return t;
    }();
    summary_.columns.push_back(ColumnSummary{p.view->spec.name, p.view->spec.dtype, p.index, p.gmin, p.gmax, p.nan_count,
                                             p.node_bits.empty() ? 0u : p.node_bits[0]});
  }
  summary_.node_count = uint32_t(layout_.nodes.size());
  summary_.level_count = layout_.levels.level_count();
  summary_.bounds = layout_.bounds;
  summary_.write_seconds = seconds_since(columns_start_);
}

}  // namespace

WriteSummary write_particle_file(const std::string& path, const std::vector<ColumnView>& columns,
                                 const WriteOptions& options, CodecMemo* memo) {
  validate_columns(columns);
  return ParticleFileWriter(path, columns, options, memo).write();
}

}  // namespace motes
