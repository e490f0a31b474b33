// Writes one particle file (writer.hpp) in phases, one method of ParticleFileWriter
// (file_writer.hpp) each: the error-bounded columns moved to their grids, the layout, the
// row stage, the columns' ranges, index kinds (writer_indexes.cpp) and codecs, the columns,
// the value indexes (id, tails), the metadata sections (writer_sections.cpp) and the
// commit. What the writer is given is checked in writer_inputs.cpp.
#include "motes/particles/writer.hpp"

#include "motes/particles/file_writer.hpp"

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

// Raw streams are written in place by the threads that gather them.
struct FileRawWriter final : RawWriter {
  AtomicFile& file;
  explicit FileRawWriter(AtomicFile& f) : file(f) {}
  void write_at(const void* data, size_t n, uint64_t offset) override {
    file.pwrite_all(data, n, offset);
    file.start_writeback(offset, n);
  }
};

}  // namespace

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

WriteSummary write_particle_file(const std::string& path, const std::vector<ColumnView>& columns,
                                 const WriteOptions& options, CodecMemo* memo) {
  validate_columns(columns);
  return ParticleFileWriter(path, columns, options, memo).write();
}

}  // namespace motes
