#include "motes/particles/writer.hpp"

#ifdef __GLIBC__
#include <malloc.h>
#endif

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <unordered_map>

#include "motes/container/container.hpp"
#include "motes/io/files.hpp"
#include "motes/particles/column_writer.hpp"
#include "motes/particles/id_index.hpp"
#include "motes/particles/spec.hpp"
#include "motes/core/threads.hpp"

namespace motes {

namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// Automatic quantile codes may add at most this fraction of the data bytes.
constexpr double kQuantileBudget = 0.10;

bool is_identifier(const std::string& s) {
  if (s.empty() || s.size() > 255) return false;
  auto alpha = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; };
  if (!alpha(s[0])) return false;
  for (char c : s)
    if (!alpha(c) && !(c >= '0' && c <= '9')) return false;
  return true;
}


template <class V>
std::string as_bytes(const V& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(typename V::value_type));
}

std::string encode_bitmaps(const ColumnPlan& p) {
  std::unordered_map<uint32_t, uint32_t> ids;
  std::vector<uint32_t> dictionary;
  std::vector<uint32_t> node_ids(p.node_bits.size());
  for (size_t i = 0; i < p.node_bits.size(); ++i) {
    auto [it, inserted] = ids.try_emplace(p.node_bits[i], uint32_t(dictionary.size()));
    if (inserted) dictionary.push_back(p.node_bits[i]);
    node_ids[i] = it->second;
  }
  uint32_t width = dictionary.size() <= 256 ? 1 : dictionary.size() <= 65536 ? 2 : 4;
  spec::BitmapsHeader h{p.gmin, p.gmax, uint32_t(dictionary.size()), width, p.nan_count};
  std::string out(reinterpret_cast<const char*>(&h), sizeof h);
  out += as_bytes(dictionary);
  for (uint32_t id : node_ids) out.append(reinterpret_cast<const char*>(&id), width);  // little-endian prefix
  return out;
}

}  // namespace

void validate_columns(const std::vector<ColumnView>& columns) {
  if (columns.size() > 65535) throw UsageError("too many columns (" + std::to_string(columns.size()) + ", at most 65535)");
  std::set<std::string> seen;
  for (const ColumnView& c : columns) {
    if (!is_identifier(c.spec.name))
      throw UsageError("column name '" + c.spec.name +
                       "' is not an identifier (letters, digits, '_', not starting with a digit, at most 255 bytes)");
    for (const char* word : kReservedWords)
      if (c.spec.name == word) throw UsageError("column name '" + c.spec.name + "' is a reserved word of the query language");
    if (!seen.insert(c.spec.name).second) throw UsageError("column '" + c.spec.name + "' is given twice");
    if (!dtype_valid(uint8_t(c.spec.dtype))) throw UsageError("column '" + c.spec.name + "' has an unknown dtype");
    if (c.count != columns[0].count)
      throw UsageError("columns have different lengths: '" + columns[0].spec.name + "' has " +
                       std::to_string(columns[0].count) + " values, '" + c.spec.name + "' has " +
                       std::to_string(c.count));
    if (c.count && !c.data) throw UsageError("column '" + c.spec.name + "' has no data pointer");
    if (c.spec.unit.size() > (1u << 20)) throw UsageError("unit metadata of column '" + c.spec.name + "' exceeds 1 MiB");
    if (!valid_utf8(c.spec.unit))
      throw UsageError("unit of column '" + c.spec.name + "' is not UTF-8 text: '" + printable(c.spec.unit) + "'");
  }
  for (const ColumnView& c : columns) {
    bool position = c.spec.name == "x" || c.spec.name == "y" || c.spec.name == "z";
    if (c.spec.index == IndexKind::quantile && (position || dtype_size(c.spec.dtype) == 1))
      throw UsageError("column '" + c.spec.name + "' cannot have a quantile index (" +
                       (position ? "positions are indexed by the tree itself" : "1-byte values are their own codes") + ")");
  }
  for (const char* axis : {"x", "y", "z"}) {
    if (!seen.count(axis))
      throw UsageError(std::string("position column '") + axis + "' is missing (need x, y and z)");
  }
}

namespace {

// Raw streams are written in place by the threads that gather them.
struct FileRawWriter final : RawWriter {
  AtomicFile& file;
  explicit FileRawWriter(AtomicFile& f) : file(f) {}
  void write_at(const void* data, size_t n, uint64_t offset) override {
    file.pwrite_all(data, n, offset);
    file.start_writeback(offset, n);
  }
};

// The column the id index is built on (WriteOptions::id_column), or -1 for none.
int id_column_of(const std::vector<ColumnView>& columns, const WriteOptions& options) {
  if (options.id_column.empty()) return -1;
  for (size_t i = 0; i < columns.size(); ++i) {
    const ColumnSpec& s = columns[i].spec;
    if (options.id_column == "auto" ? s.name == "id" : s.name == options.id_column) {
      if (id_dtype(s.dtype) && !(s.error_bound > 0)) return int(i);
      if (options.id_column == "auto") return -1;  // a column named id of another type: no index
      throw UsageError("the id column '" + s.name + "' must be int32, uint32, int64 or uint64 and stored exactly, not " +
                       dtype_name(s.dtype));
    }
  }
  if (options.id_column != "auto") throw UsageError("the id column '" + options.id_column + "' is not among the columns");
  return -1;
}

// The columns that get a tail index: those named, or by default every column but the
// positions and the id column. UsageError naming a column that is not there.
std::vector<int> tail_columns_of(const std::vector<ColumnView>& columns, const WriteOptions& options) {
  std::vector<int> out;
  if (options.tail_fraction == 0) return out;
  if (!(options.tail_fraction > 0 && options.tail_fraction <= 0.25))
    throw UsageError("the tail fraction must be in (0, 0.25] (0: no tail indexes), got " + number_text(options.tail_fraction));
  if (options.tail_columns) {
    for (const std::string& name : *options.tail_columns) {
      size_t i = 0;
      while (i < columns.size() && columns[i].spec.name != name) ++i;
      if (i == columns.size()) throw UsageError("tail index column '" + name + "' is not among the columns");
      if (std::find(out.begin(), out.end(), int(i)) == out.end()) out.push_back(int(i));
    }
    return out;
  }
  const int id = id_column_of(columns, options);
  for (size_t i = 0; i < columns.size(); ++i) {
    const std::string& name = columns[i].spec.name;
    if (name != "x" && name != "y" && name != "z" && int(i) != id) out.push_back(int(i));
  }
  return out;
}

// The extent of a coded stream's blocks in the file.
std::pair<uint64_t, uint64_t> extent(const StreamOut& s) {
  if (s.blocks.empty()) return {spec::kPage, 0};
  uint64_t lo = UINT64_MAX, hi = 0;
  for (const StoredBlock& b : s.blocks) lo = std::min(lo, b.offset), hi = std::max(hi, b.offset + b.stored);
  return {lo, hi - lo};
}

}  // namespace

const CodecMemo::Entry* CodecMemo::reusable(const Key& key, uint64_t sampled) const {
  for (const Entry& e : entries)
    if (e.key == key) return e.sampled >= sampled ? &e : nullptr;
  return nullptr;
}

void CodecMemo::keep(const Key& key, uint64_t sampled, const codec::Plan& values, const codec::Plan& codes) {
  for (Entry& e : entries)
    if (e.key == key) return void(e = Entry{key, sampled, values, codes});
  entries.push_back(Entry{key, sampled, values, codes});
}

WriteSummary write_particle_file(const std::string& path, const std::vector<ColumnView>& given,
                                 const WriteOptions& options, CodecMemo* memo) {
  validate_columns(given);
  unsigned threads = options.layout.threads ? options.layout.threads : default_threads();
  WriteSummary summary;
  Phases& phases = summary.phases;
  // Error-bounded columns are moved to their grids first: the layout, the index and the
  // codecs then see the values as they will be stored (queries are exact on those).
  std::vector<ColumnView> columns = given;
  std::vector<codec::Grid> grids(columns.size());
  std::vector<std::vector<unsigned char>> quantized(columns.size());
  for (size_t i = 0; i < columns.size(); ++i) {
    ColumnView& c = columns[i];
    if (!(c.spec.error_bound > 0)) continue;
    double lo, hi;
    finite_range(c, threads, lo, hi);
    grids[i] = codec::make_grid(uint8_t(c.spec.dtype), lo, hi, c.spec.error_bound, c.spec.name);
    const size_t size = dtype_size(c.spec.dtype);
    quantized[i].resize(std::max<uint64_t>(c.count, 1) * size);
    std::atomic<uint64_t> worst_bits{0};
    parallel_ranges(c.count, threads, 1 << 16, [&](uint64_t b, uint64_t e) {
      double w = codec::quantize(uint8_t(c.spec.dtype), grids[i], static_cast<const char*>(c.data) + int64_t(b) * c.stride(),
                                 c.stride(), e - b, quantized[i].data() + b * size);
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
    c.data = quantized[i].data();
    c.stride_bytes = std::nullopt;
  }
  const uint32_t bv = options.block_values;
  uint32_t widest = 1;
  for (const ColumnView& c : columns) widest = std::max<uint32_t>(widest, uint32_t(dtype_size(c.spec.dtype)));
  if (bv < 64 || bv > spec::kMaxBlockValues || uint64_t(bv) * widest > codec::kMaxBlockBytes)
    throw UsageError("block_values must be in [64, " + std::to_string(spec::kMaxBlockValues) +
                     "] and hold at most 1 MiB of values, got " + std::to_string(bv));
  if (options.zstd_level < -7 || options.zstd_level > 19)
    throw UsageError("zstd_level must be in [-7, 19], got " + std::to_string(options.zstd_level));
  auto find = [&](const char* name) -> const ColumnView& {
    for (const ColumnView& c : columns)
      if (c.spec.name == name) return c;
    throw UsageError(std::string("missing column ") + name);
  };
  auto progress = [&](const std::string& stage, uint64_t done, uint64_t total) {
    if (options.progress) options.progress(stage, done, total);
  };
  auto t0 = Clock::now();
  progress("layout", 0, 1);
  phases.lap("quantize");
  Layout layout = build_layout(find("x"), find("y"), find("z"), options.layout);
  progress("layout", 1, 1);
  const uint64_t n = columns[0].count;
  summary.layout_seconds = seconds_since(t0);
  phases.merge(layout.phases, "layout ");
  phases.restart();
  auto t1 = Clock::now();
  // The row stage: every column's rows side by side, for the gathers in file order
  // (row_stage.hpp). Made after the layout, whose sort keys are gone by then: the stage and
  // the keys together would raise the write's peak memory.
  uint64_t data_bytes = 0;  // the columns' raw bytes
  for (const ColumnView& c : columns) data_bytes += n * dtype_size(c.spec.dtype);
  std::optional<RowStage> stage;
  if (options.stage_rows && data_bytes >= options.stage_min_bytes && RowStage::pays(find("x"), find("y"), find("z"))) {
#ifdef __GLIBC__
    // The treelets' buffers, freed into the worker threads' malloc arenas, stay resident
    // there (about 8 bytes per particle): give them back before the stage's copy.
    malloc_trim(0);
#endif
    stage.emplace(columns, threads);
  }
  phases.lap("row stage");

  std::vector<ColumnPlan> plans(columns.size());
  for (size_t i = 0; i < columns.size(); ++i) {
    ColumnPlan& p = plans[i];
    p.view = &columns[i];
    p.size = dtype_size(columns[i].spec.dtype);
    p.grid = grids[i];
    scan_column(p, threads);
    const std::string& name = columns[i].spec.name;
    bool position = name == "x" || name == "y" || name == "z";
    p.index = columns[i].spec.index;
    if (position || p.size == 1 || n == 0) p.index = IndexKind::none;
  }
  phases.lap("scan");
  // Automatic quantile indexes: the most incoherent columns first (score above 1/2),
  // while all codes together stay within kQuantileBudget of the data bytes.
  const uint64_t code_cost = spec::align_up(n, spec::kPage) + (spec::kQuantileBins + 1) * sizeof(double);
  uint64_t code_bytes = 0;
  std::vector<std::pair<double, size_t>> candidates;
  for (size_t i = 0; i < plans.size(); ++i) {
    if (plans[i].index == IndexKind::quantile) code_bytes += code_cost;
    if (plans[i].index != IndexKind::automatic) continue;
    plans[i].index = IndexKind::none;
    double score = column_incoherence(plans[i], layout);
    if (score > 0.5) candidates.push_back({score, i});
  }
  std::sort(candidates.begin(), candidates.end(), [](auto& a, auto& b) { return a.first > b.first || (a.first == b.first && a.second < b.second); });
  for (const auto& [score, i] : candidates) {
    if (double(code_bytes + code_cost) > kQuantileBudget * double(data_bytes)) break;
    plans[i].index = IndexKind::quantile;
    code_bytes += code_cost;
  }
  phases.lap("choose indexes");
  const bool lossless = options.compression == Compression::lossless;
  std::vector<bool> tailed(plans.size(), false);
  if (lossless && n > 0)
    for (int c : tail_columns_of(columns, options)) tailed[size_t(c)] = true;
  // Codec plans: from the memo where it has them for this column, else chosen on samples.
  const uint64_t sampled = std::min<uint64_t>(n, bv) * codec_sample_starts(n, bv).size();
  std::vector<CodecMemo::Key> keys;
  std::vector<const CodecMemo::Entry*> reused(plans.size(), nullptr);
  for (size_t i = 0; i < plans.size(); ++i) {
    keys.push_back({columns[i].spec.name, columns[i].spec.dtype, plans[i].index, plans[i].grid.step > 0, lossless,
                    options.zstd_level});
    if (memo) reused[i] = memo->reusable(keys[i], sampled);
  }
  parallel_for(plans.size(), threads, [&](uint64_t i) {
    ColumnPlan& p = plans[i];
    if (tailed[i]) p.tail = make_tail_collector(columns[i], options.tail_fraction);
    if (p.index == IndexKind::quantile) compute_quantile_edges(p);
    if (reused[i]) {
      p.values.plan = reused[i]->values;
      p.codes.plan = reused[i]->codes;
    } else {
      choose_codecs(p, layout, bv, lossless, options.zstd_level);
    }
  });
  for (size_t i = 0; memo && n && i < plans.size(); ++i)
    if (!reused[i]) memo->keep(keys[i], sampled, plans[i].values.plan, plans[i].codes.plan);
  phases.lap("plan");

  // Raw streams first, page aligned, in schema order (read in place); coded blocks follow,
  // window by window (the first rows of every column before the next rows of any).
  uint64_t offset = spec::kPage;
  for (ColumnPlan& p : plans) {
    if (p.values.plan.raw()) {
      p.values.offset = offset;
      offset = spec::align_up(offset + n * p.size, spec::kPage);
    }
    if (p.index == IndexKind::quantile && p.codes.plan.raw()) {
      p.codes.offset = offset;
      offset = spec::align_up(offset + n, spec::kPage);
    }
  }

  AtomicFile file(path, options.sync);
  FileRawWriter raw_out(file);
  // The runs in file order, copied: the column passes walk them in order (indexes into
  // the node-ordered runs would miss the cache once per run).
  std::vector<Run> runs_by_start = layout.levels.runs;
  std::sort(runs_by_start.begin(), runs_by_start.end(), [](const Run& a, const Run& b) { return a.start < b.start; });
  const uint64_t blocks = (n + bv - 1) / bv;
  const uint64_t window = std::max<uint64_t>(1, options.window_rows / bv);  // blocks per window
  // Coded blocks are placed window by window, in order, each window's columns in order;
  // the pipeline codes the next window while one is placed (write_columns).
  auto place = [&](unsigned slot) {
    for (ColumnPlan& p : plans)
      for (StreamOut* s : {&p.values, &p.codes}) {
        std::string& bytes = s->window[slot];
        if (bytes.empty()) continue;
        for (size_t b : s->window_blocks[slot]) s->blocks[b].offset += offset;
        file.pwrite_all(bytes.data(), bytes.size(), offset);
        file.start_writeback(offset, bytes.size());
        offset += bytes.size();
        bytes.clear();
        s->window_blocks[slot].clear();
      }
  };
  progress("columns", 0, blocks);
  write_columns(plans, layout, runs_by_start, bv, window, threads, stage ? &*stage : nullptr, raw_out, place,
                [&](uint64_t done) { progress("columns", done, blocks); });
  stage.reset();  // before the id index's sort buffers
  phases.lap("columns");
  // The id index (2.1): the id column's values sorted with their file positions, after the columns.
  std::optional<IdIndexSections> ids;
  if (const int ic = id_column_of(columns, options); ic >= 0 && lossless && n > 0) {
    progress("id index", 0, 1);
    const ColumnView& v = columns[size_t(ic)];
    ids = build_id_index(uint32_t(ic), v.spec.dtype, v.data, v.stride(), n, layout.order.data(), options.zstd_level, threads);
    for (auto [bytes, blocks] : {std::pair{&ids->keys, &ids->key_blocks}, std::pair{&ids->rows, &ids->row_blocks}}) {
      for (StoredBlock& b : *blocks) b.offset += offset;
      file.pwrite_all(bytes->data(), bytes->size(), offset);
      offset += bytes->size();
    }
    progress("id index", 1, 1);
  }
  phases.lap("id index");
  // Tail indexes (2.2), column by column.
  std::vector<TailIndexSections> tails;
  for (uint32_t i = 0; i < plans.size(); ++i) {
    if (!plans[i].tail) continue;
    std::optional<TailIndexSections> t = plans[i].tail->finish(i, n, options.zstd_level, threads);
    plans[i].tail.reset();
    if (!t) continue;
    for (auto [bytes, blocks] : {std::pair{&t->values, &t->value_blocks}, std::pair{&t->rows, &t->row_blocks}}) {
      for (StoredBlock& b : *blocks) b.offset += offset;
      file.pwrite_all(bytes->data(), bytes->size(), offset);
      offset += bytes->size();
    }
    tails.push_back(std::move(*t));
  }
  phases.lap("tail indexes");
  offset = spec::align_up(offset, 8);
  for (ColumnPlan& p : plans) finish_node_index(p, layout);

  container::SectionsBuilder meta{offset, lossless, {}, {}, 0};
  std::vector<ColumnSpec> schema;
  for (const ColumnPlan& p : plans)
    schema.push_back(ColumnSpec{p.view->spec.name, p.view->spec.dtype, p.index, p.view->spec.unit, p.view->spec.error_bound});
  // Sections every read needs first, together (schema, tree, block tables and checksums,
  // quantile edges); then the per-node indexes, which queries read column by column.
  meta.add(spec::kSchema, spec::kNoColumn, spec::encode_schema(schema, true));
  meta.add(spec::kNodes, spec::kNoColumn, as_bytes(layout.nodes));
  static_assert(sizeof(TreeNode) == 8);
  auto add_stream = [&](uint32_t kind, uint32_t column, const StreamOut& s, uint64_t bytes) {
    if (s.plan.raw()) {
      uint32_t at = meta.bulk(kind, column, container::kRaw, s.offset, bytes);
      meta.add(spec::kBlockSums, at, as_bytes(s.sums));
    } else {
      auto [lo, len] = extent(s);
      uint32_t at = meta.bulk(kind, column, container::kBlocks, lo, len);
      meta.add(spec::kBlockTable, at, container::encode_block_table(s.blocks));
    }
  };
  for (uint32_t i = 0; i < plans.size(); ++i) {
    ColumnPlan& p = plans[i];
    add_stream(spec::kColumn, i, p.values, n * p.size);
    if (p.index == IndexKind::quantile) {
      meta.add(spec::kQuantileEdges, i, as_bytes(p.edges));
      add_stream(spec::kQuantileCodes, i, p.codes, n);
    }
  }
  if (ids) {
    const uint64_t at = ids->key_blocks.front().offset;
    const uint32_t k = meta.bulk(spec::kIdKeys, ids->column, container::kBlocks, at, ids->keys.size());
    meta.add(spec::kBlockTable, k, container::encode_block_table(ids->key_blocks));
    const uint32_t r = meta.bulk(spec::kIdRows, ids->column, container::kBlocks, at + ids->keys.size(), ids->rows.size());
    meta.add(spec::kBlockTable, r, container::encode_block_table(ids->row_blocks));
    meta.add(spec::kIdFences, ids->column, ids->fences);
  }
  for (const TailIndexSections& t : tails) {
    const uint32_t v = meta.bulk(spec::kTailValues, t.column, container::kBlocks, t.value_blocks.front().offset, t.values.size());
    meta.add(spec::kBlockTable, v, container::encode_block_table(t.value_blocks));
    const uint32_t r = meta.bulk(spec::kTailRows, t.column, container::kBlocks, t.row_blocks.front().offset, t.rows.size());
    meta.add(spec::kBlockTable, r, container::encode_block_table(t.row_blocks));
    meta.add(spec::kTailBounds, t.column, t.bounds);
  }
  for (uint32_t i = 0; i < plans.size(); ++i) {
    ColumnPlan& p = plans[i];
    meta.add(spec::kNodeRanges, i, std::string(p.node_min.begin(), p.node_min.end()) + std::string(p.node_max.begin(), p.node_max.end()));
    meta.add(spec::kBitmaps, i, encode_bitmaps(p));
  }
  spec::ParticleArea area{};
  area.particle_count = n;
  area.column_count = uint32_t(plans.size());
  area.node_count = uint32_t(layout.nodes.size());
  area.level_count = layout.levels.level_count();
  area.lod_count = options.layout.lod_count;
  area.leaf_size = options.layout.leaf_size;
  area.block_values = bv;
  for (int a = 0; a < 3; ++a) area.bounds_lo[a] = layout.bounds.lo[a], area.bounds_hi[a] = layout.bounds.hi[a];
  const container::Header h =
      meta.write(file, spec::kMagic, spec::kVersionMajor,
                 !tails.empty() ? spec::kVersionMinor : ids ? spec::kIdVersionMinor : spec::kPlainVersionMinor, &area, sizeof area);
  phases.lap("metadata and sync");

  summary.particle_count = n;
  summary.file_bytes = h.file_size;
  summary.header_checksum = h.header_checksum;
  summary.data_bytes = data_bytes;
  for (const ColumnPlan& p : plans) {
    summary.stored_bytes += p.values.plan.raw() ? n * p.size : [&] {
      uint64_t t = 0;
      for (const StoredBlock& b : p.values.blocks) t += b.stored;
      return t;
    }();
    summary.columns.push_back(ColumnSummary{p.view->spec.name, p.view->spec.dtype, p.index, p.gmin, p.gmax, p.nan_count,
                                            p.node_bits.empty() ? 0u : p.node_bits[0]});
  }
  summary.node_count = uint32_t(layout.nodes.size());
  summary.level_count = layout.levels.level_count();
  summary.bounds = layout.bounds;
  summary.write_seconds = seconds_since(t1);
  return summary;
}

}  // namespace motes
