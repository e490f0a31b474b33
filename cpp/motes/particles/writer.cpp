#include "motes/particles/writer.hpp"

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <limits>
#include <memory>
#include <mutex>
#include <set>
#include <unordered_map>

#include "motes/io/files.hpp"
#include "motes/particles/spec.hpp"
#include "motes/core/parallel.hpp"

namespace motes {

namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// Automatic quantile codes may add at most this fraction of the data bytes.
constexpr double kFineBudget = 0.10;

bool is_identifier(const std::string& s) {
  if (s.empty() || s.size() > 255) return false;
  auto alpha = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; };
  if (!alpha(s[0])) return false;
  for (char c : s)
    if (!alpha(c) && !(c >= '0' && c <= '9')) return false;
  return true;
}


// Everything the writer learns about one column on its way to disk.
struct ColumnPlan {
  const ColumnView* view;
  size_t size;
  FineIndex fine;
  double gmin = 0, gmax = 0;
  uint64_t nan_count = 0;
  std::vector<double> edges;  // fine only: 257 quantile edges
  uint64_t data_offset = 0, codes_offset = 0;
  std::vector<uint64_t> data_sums, code_sums;
  std::vector<char> node_min, node_max;  // per node, native dtype bytes (subtree)
  std::vector<uint32_t> node_bits;       // per node (subtree)
};

template <class T>
const T& value_at(const ColumnView& c, uint64_t row) {
  return *reinterpret_cast<const T*>(static_cast<const char*>(c.data) + int64_t(row) * c.stride());
}

template <class T>
void scan_global(ColumnPlan& p, unsigned threads) {
  const ColumnView& c = *p.view;
  const char* base = static_cast<const char*>(c.data);
  const int64_t stride = c.stride();
  std::mutex m;
  bool any = false;
  T mn{}, mx{};
  uint64_t nans = 0;
  parallel_ranges(c.count, threads, 1 << 16, [&](uint64_t b, uint64_t e) {
    bool local_any = false;
    T lmn{}, lmx{};
    uint64_t lnan = 0;
    for (uint64_t i = b; i < e; ++i) {
      T v = *reinterpret_cast<const T*>(base + int64_t(i) * stride);
      if constexpr (std::is_floating_point_v<T>) {
        if (std::isnan(v)) {
          ++lnan;
          continue;
        }
      }
      if (!local_any) lmn = lmx = v, local_any = true;
      lmn = std::min(lmn, v);
      lmx = std::max(lmx, v);
    }
    std::lock_guard lock(m);
    nans += lnan;
    if (!local_any) return;
    if (!any) mn = lmn, mx = lmx, any = true;
    mn = std::min(mn, lmn);
    mx = std::max(mx, lmx);
  });
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
  const uint64_t n = p.view->count;
  std::vector<uint32_t> leaves;
  for (uint32_t i = 0; i < layout.nodes.size(); ++i)
    if (layout.nodes[i].is_leaf() && layout.nodes[i].own_count >= 16) leaves.push_back(i);
  if (leaves.size() < 16) return 0.0;
  const size_t samples = std::min<size_t>(256, leaves.size());
  auto bin_of_row = [&](uint64_t row, uint32_t& bits) {
    double v = double(value_at<T>(*p.view, row));
    if (!std::isnan(v)) bits |= 1u << spec::bitmap_bin(v, p.gmin, p.gmax);
  };
  double leaf_bins = 0, random_bins = 0;
  uint64_t state = 0x9e3779b97f4a7c15ULL;
  for (size_t s = 0; s < samples; ++s) {
    uint32_t leaf = leaves[s * leaves.size() / samples];
    uint32_t leaf_bits = 0, random_bits = 0;
    for (uint32_t r = lv.run_begin[leaf]; r < lv.run_begin[leaf + 1]; ++r)
      for (uint32_t k = 0; k < lv.runs[r].count; ++k) {
        bin_of_row(layout.order[lv.runs[r].start + k], leaf_bits);
        state = state * 6364136223846793005ULL + 1442695040888963407ULL;  // LCG: a fixed pseudo-random row
        bin_of_row((state >> 11) % n, random_bits);
      }
    leaf_bins += std::popcount(leaf_bits);
    random_bins += std::popcount(random_bits);
  }
  return random_bins >= 8.0 * double(samples) ? leaf_bins / random_bins : 0.0;
}

// spec::fine_code, made fast for millions of values: a uniform grid over the
// column's range remembers each cell's first code, so a value usually needs one
// or two comparisons. Every answer is checked against the edges; a value the
// grid cannot place (rounding at cell borders, runs of equal edges) takes the
// full search.
class CodeLookup {
 public:
  explicit CodeLookup(const std::vector<double>& edges, double lo, double hi) : edges_(edges.data()), lo_(lo) {
    scale_ = hi > lo ? double(kCells) / (hi - lo) : 0.0;
    for (uint32_t c = 0; c < kCells; ++c) first_[c] = spec::fine_code(lo + double(c) / (scale_ > 0 ? scale_ : 1.0), edges_);
  }
  uint8_t operator()(double v) const {
    double t = (v - lo_) * scale_;
    uint32_t cell = t >= 0 ? (t < double(kCells) ? uint32_t(t) : kCells - 1) : 0;  // NaN lands in cell 0
    uint32_t r = first_[cell];
    if (r > 0 && !(edges_[r] <= v)) return spec::fine_code(v, edges_);
    for (int steps = 0; r < spec::kFineBins - 1 && edges_[r + 1] <= v; ++r)
      if (++steps > 4) return spec::fine_code(v, edges_);
    return uint8_t(r);
  }

 private:
  static constexpr uint32_t kCells = 4096;
  const double* edges_;
  double lo_, scale_;
  uint8_t first_[kCells];
};

template <class T>
void compute_edges(ColumnPlan& p) {
  const ColumnView& c = *p.view;
  uint64_t n = c.count;
  uint64_t s = std::min<uint64_t>(n, 1 << 16);
  std::vector<double> sample;
  sample.reserve(s);
  for (uint64_t k = 0; k < s; ++k) {
    double v = double(value_at<T>(c, k * n / s));
    if (!std::isnan(v)) sample.push_back(v);
  }
  std::sort(sample.begin(), sample.end());
  p.edges.assign(spec::kFineBins + 1, 0.0);
  if (sample.empty()) return;
  for (uint32_t b = 0; b <= spec::kFineBins; ++b)
    p.edges[b] = sample[std::min<size_t>(sample.size() - 1, size_t(b) * sample.size() / spec::kFineBins)];
  p.edges[0] = p.gmin;
  p.edges[spec::kFineBins] = p.gmax;
}

// Streams one column in file order: gathers blocks, updates each node's own
// min/max/bitmap, writes data (and quantile codes) with block checksums.
template <class T>
void write_column(ColumnPlan& p, const Layout& layout, const std::vector<uint32_t>& runs_by_start,
                  AtomicFile& file, uint32_t block_bytes) {
  const ColumnView& c = *p.view;
  const Levels& lv = layout.levels;
  const uint64_t n = c.count;
  const size_t nodes = layout.nodes.size();
  std::vector<T> own_min(nodes), own_max(nodes);
  std::vector<uint8_t> own_any(nodes, 0);
  std::vector<uint32_t> own_bits(nodes, 0);
  const uint64_t per_block = block_bytes / sizeof(T);
  std::vector<T> buf(std::min<uint64_t>(per_block, std::max<uint64_t>(n, 1)));
  std::vector<uint8_t> codes;
  const bool fine = p.fine == FineIndex::quantile;
  std::unique_ptr<CodeLookup> code_of;
  if (fine) codes.resize(buf.size()), code_of = std::make_unique<CodeLookup>(p.edges, p.gmin, p.gmax);
  const char* base = static_cast<const char*>(c.data);
  const int64_t stride = c.stride();
  size_t run_cursor = 0;
  for (uint64_t cb = 0; cb < n; cb += per_block) {
    uint64_t ce = std::min(n, cb + per_block);
    uint64_t len = ce - cb;
    const uint64_t* ord = layout.order.data() + cb;
    for (uint64_t i = 0; i < len; ++i) {
      if (i + 64 < len) __builtin_prefetch(base + int64_t(ord[i + 64]) * stride);
      buf[i] = *reinterpret_cast<const T*>(base + int64_t(ord[i]) * stride);
    }
    // Runs are disjoint and sorted by start: walk those overlapping [cb, ce).
    while (run_cursor < runs_by_start.size()) {
      const Run& r = lv.runs[runs_by_start[run_cursor]];
      uint64_t rb = std::max<uint64_t>(r.start, cb), re = std::min<uint64_t>(r.start + r.count, ce);
      if (r.start >= ce) break;
      uint32_t node = r.node;
      T mn = own_min[node], mx = own_max[node];
      bool any = own_any[node];
      uint32_t bits = own_bits[node];
      for (uint64_t k = rb; k < re; ++k) {
        T v = buf[k - cb];
        if constexpr (std::is_floating_point_v<T>) {
          if (std::isnan(v)) continue;
        }
        if (!any) mn = mx = v, any = true;
        mn = std::min(mn, v);
        mx = std::max(mx, v);
        bits |= 1u << spec::bitmap_bin(double(v), p.gmin, p.gmax);
      }
      own_min[node] = mn, own_max[node] = mx, own_any[node] = any, own_bits[node] = bits;
      if (r.start + r.count <= ce) ++run_cursor; else break;
    }
    file.pwrite_all(buf.data(), len * sizeof(T), p.data_offset + cb * sizeof(T));
    file.start_writeback(p.data_offset + cb * sizeof(T), len * sizeof(T));
    p.data_sums.push_back(spec::checksum(buf.data(), len * sizeof(T)));
    if (fine) {
      for (uint64_t i = 0; i < len; ++i) codes[i] = (*code_of)(double(buf[i]));
      // Codes blocks cover the same points as data blocks.
      file.pwrite_all(codes.data(), len, p.codes_offset + cb);
      file.start_writeback(p.codes_offset + cb, len);
      p.code_sums.push_back(spec::checksum(codes.data(), len));
    }
  }
  // Subtree stats, children before parents (reverse preorder).
  for (size_t k = nodes; k-- > 0;) {
    const TreeNode& tn = layout.nodes[k];
    if (tn.is_leaf()) continue;
    for (size_t child : {k + 1, size_t(tn.right)}) {
      if (!own_any[child]) continue;
      if (!own_any[k]) own_min[k] = own_min[child], own_max[k] = own_max[child], own_any[k] = 1;
      own_min[k] = std::min(own_min[k], own_min[child]);
      own_max[k] = std::max(own_max[k], own_max[child]);
      own_bits[k] |= own_bits[child];
    }
  }
  p.node_min.resize(nodes * sizeof(T));
  p.node_max.resize(nodes * sizeof(T));
  std::memcpy(p.node_min.data(), own_min.data(), nodes * sizeof(T));
  std::memcpy(p.node_max.data(), own_max.data(), nodes * sizeof(T));
  p.node_bits = std::move(own_bits);
}

// Appends metadata sections to one buffer placed after the bulk data.
struct MetadataBuilder {
  uint64_t base;
  std::string bytes;
  std::vector<spec::SectionEntry> table;

  void add(uint32_t kind, uint32_t column, const void* data, size_t n) {
    while (bytes.size() % 8) bytes.push_back('\0');
    table.push_back(spec::SectionEntry{kind, column, base + bytes.size(), n, spec::checksum(data, n)});
    bytes.append(static_cast<const char*>(data), n);
  }
  void add(uint32_t kind, uint32_t column, const std::string& s) { add(kind, column, s.data(), s.size()); }
};

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
    for (const char* word : {"and", "or", "not", "inf", "nan"})
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
    if (c.spec.fine == FineIndex::quantile && (position || dtype_size(c.spec.dtype) == 1))
      throw UsageError("column '" + c.spec.name + "' cannot have a quantile index (" +
                       (position ? "positions are indexed by the tree itself" : "1-byte values are their own codes") + ")");
  }
  for (const char* axis : {"x", "y", "z"}) {
    if (!seen.count(axis))
      throw UsageError(std::string("position column '") + axis + "' is missing (need x, y and z)");
  }
}

WriteSummary write_particle_file(const std::string& path, const std::vector<ColumnView>& columns,
                                 const WriteOptions& options) {
  validate_columns(columns);
  if (options.block_bytes < 4096 || options.block_bytes % 4096)
    throw UsageError("block_bytes must be a positive multiple of 4096");
  auto find = [&](const char* name) -> const ColumnView& {
    for (const ColumnView& c : columns)
      if (c.spec.name == name) return c;
    throw UsageError(std::string("missing column ") + name);
  };
  auto progress = [&](const std::string& stage, uint64_t done, uint64_t total) {
    if (options.progress) options.progress(stage, done, total);
  };
  unsigned threads = options.layout.threads ? options.layout.threads : default_threads();
  auto t0 = Clock::now();
  progress("layout", 0, 1);
  Layout layout = build_layout(find("x"), find("y"), find("z"), options.layout);
  progress("layout", 1, 1);
  const uint64_t n = columns[0].count;
  WriteSummary summary;
  summary.layout_seconds = seconds_since(t0);
  auto t1 = Clock::now();

  std::vector<ColumnPlan> plans(columns.size());
  for (size_t i = 0; i < columns.size(); ++i) {
    ColumnPlan& p = plans[i];
    p.view = &columns[i];
    p.size = dtype_size(columns[i].spec.dtype);
    dispatch_dtype(columns[i].spec.dtype, [&](auto v) { scan_global<decltype(v)>(p, threads); });
    const std::string& name = columns[i].spec.name;
    bool position = name == "x" || name == "y" || name == "z";
    p.fine = columns[i].spec.fine;
    if (position || p.size == 1 || n == 0) p.fine = FineIndex::none;
  }
  // Automatic quantile indexes: the most incoherent columns first (score above 1/2),
  // while all codes together stay within kFineBudget of the data bytes.
  const uint64_t code_cost = spec::align_up(n, spec::kPage) + (spec::kFineBins + 1) * sizeof(double);
  uint64_t data_bytes = 0, code_bytes = 0;
  std::vector<std::pair<double, size_t>> candidates;
  for (size_t i = 0; i < plans.size(); ++i) {
    data_bytes += n * plans[i].size;
    if (plans[i].fine == FineIndex::quantile) code_bytes += code_cost;
    if (plans[i].fine != FineIndex::automatic) continue;
    plans[i].fine = FineIndex::none;
    double score = dispatch_dtype(columns[i].spec.dtype, [&](auto v) { return incoherence<decltype(v)>(plans[i], layout); });
    if (score > 0.5) candidates.push_back({score, i});
  }
  std::sort(candidates.begin(), candidates.end(), [](auto& a, auto& b) { return a.first > b.first || (a.first == b.first && a.second < b.second); });
  for (const auto& [score, i] : candidates) {
    if (double(code_bytes + code_cost) > kFineBudget * double(data_bytes)) break;
    plans[i].fine = FineIndex::quantile;
    code_bytes += code_cost;
  }
  for (ColumnPlan& p : plans)
    if (p.fine == FineIndex::quantile) dispatch_dtype(p.view->spec.dtype, [&](auto v) { compute_edges<decltype(v)>(p); });

  // Bulk sections first, page aligned, in schema order.
  uint64_t offset = spec::kPage;
  for (ColumnPlan& p : plans) {
    p.data_offset = offset;
    offset = spec::align_up(offset + n * p.size, spec::kPage);
    if (p.fine == FineIndex::quantile) {
      p.codes_offset = offset;
      offset = spec::align_up(offset + n, spec::kPage);
    }
  }

  AtomicFile file(path, options.sync);
  std::vector<uint32_t> runs_by_start(layout.levels.runs.size());
  for (uint32_t i = 0; i < runs_by_start.size(); ++i) runs_by_start[i] = i;
  std::sort(runs_by_start.begin(), runs_by_start.end(),
            [&](uint32_t a, uint32_t b) { return layout.levels.runs[a].start < layout.levels.runs[b].start; });
  std::atomic<uint64_t> done{0};
  progress("columns", 0, plans.size());
  parallel_for(plans.size(), threads, [&](uint64_t i) {
    ColumnPlan& p = plans[i];
    dispatch_dtype(p.view->spec.dtype, [&](auto v) {
      write_column<decltype(v)>(p, layout, runs_by_start, file, options.block_bytes);
    });
    progress("columns", done.fetch_add(1) + 1, plans.size());
  });

  MetadataBuilder meta{offset, {}, {}};
  std::vector<ColumnSpec> schema;
  for (const ColumnPlan& p : plans) schema.push_back(ColumnSpec{p.view->spec.name, p.view->spec.dtype, p.fine, p.view->spec.unit});
  meta.add(spec::kSchema, spec::kNoColumn, spec::encode_schema(schema));
  meta.add(spec::kNodes, spec::kNoColumn, as_bytes(layout.nodes));
  static_assert(sizeof(TreeNode) == 8);
  for (uint32_t i = 0; i < plans.size(); ++i) {
    ColumnPlan& p = plans[i];
    uint32_t data_index = uint32_t(meta.table.size());
    meta.table.push_back(spec::SectionEntry{spec::kColumn, i, p.data_offset, n * p.size, 0});
    meta.add(spec::kBlockSums, data_index, as_bytes(p.data_sums));
    meta.add(spec::kNodeRanges, i, as_bytes(p.node_min) + as_bytes(p.node_max));
    meta.add(spec::kBitmaps, i, encode_bitmaps(p));
    if (p.fine == FineIndex::quantile) {
      meta.add(spec::kFineEdges, i, as_bytes(p.edges));
      uint32_t codes_index = uint32_t(meta.table.size());
      meta.table.push_back(spec::SectionEntry{spec::kFineCodes, i, p.codes_offset, n, 0});
      meta.add(spec::kBlockSums, codes_index, as_bytes(p.code_sums));
    }
  }
  while (meta.bytes.size() % 8) meta.bytes.push_back('\0');
  uint64_t table_offset = meta.base + meta.bytes.size();
  std::string table = as_bytes(meta.table);
  uint64_t file_size = table_offset + table.size();

  spec::Header h{};
  std::memcpy(h.magic, spec::kMagic, 8);
  h.version_major = spec::kVersionMajor;
  h.version_minor = spec::kVersionMinor;
  h.header_bytes = spec::kHeaderBytes;
  h.particle_count = n;
  h.column_count = uint32_t(plans.size());
  h.node_count = uint32_t(layout.nodes.size());
  h.level_count = layout.levels.level_count();
  h.lod_count = options.layout.lod_count;
  h.leaf_size = options.layout.leaf_size;
  h.block_bytes = options.block_bytes;
  h.section_table_offset = table_offset;
  h.section_count = uint32_t(meta.table.size());
  h.file_size = file_size;
  h.section_table_checksum = spec::checksum(table.data(), table.size());
  for (int a = 0; a < 3; ++a) h.bounds_lo[a] = layout.bounds.lo[a], h.bounds_hi[a] = layout.bounds.hi[a];
  h.header_checksum = spec::checksum(&h, spec::kHeaderChecksumAt);
  std::string page0(spec::kPage, '\0');
  std::memcpy(page0.data(), &h, sizeof h);

  file.pwrite_all(meta.bytes.data(), meta.bytes.size(), meta.base);
  file.pwrite_all(table.data(), table.size(), table_offset);
  file.pwrite_all(page0.data(), page0.size(), 0);  // last: a torn write never has a valid header
  file.commit();

  summary.particle_count = n;
  summary.file_bytes = file_size;
  summary.header_checksum = h.header_checksum;
  for (const ColumnPlan& p : plans) {
    summary.data_bytes += n * p.size;
    summary.columns.push_back(ColumnSummary{p.view->spec.name, p.view->spec.dtype, p.fine, p.gmin, p.gmax, p.nan_count,
                                            p.node_bits.empty() ? 0u : p.node_bits[0]});
  }
  summary.node_count = uint32_t(layout.nodes.size());
  summary.level_count = layout.levels.level_count();
  summary.bounds = layout.bounds;
  summary.write_seconds = seconds_since(t1);
  return summary;
}

}  // namespace motes
