#include "motes/particles/reader.hpp"

#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <set>
#include <array>

#include "motes/codec/codec.hpp"
#include "motes/container/container.hpp"
#include "motes/core/bytes.hpp"
#include "motes/particles/spec.hpp"

namespace motes {

namespace {

// A double no larger (no smaller) than the native value, so pruning stays conservative.
template <class T>
double lower_double(T v) {
  double d = double(v);
  if constexpr (std::is_integral_v<T> && sizeof(T) == 8) {
    if (d > -9007199254740992.0 && d < 9007199254740992.0) return d;
    return std::nextafter(d, -INFINITY);
  }
  return d;
}
template <class T>
double upper_double(T v) {
  double d = double(v);
  if constexpr (std::is_integral_v<T> && sizeof(T) == 8) {
    if (d > -9007199254740992.0 && d < 9007199254740992.0) return d;
    return std::nextafter(d, INFINITY);
  }
  return d;
}

std::string kind_name(uint32_t kind) {
  switch (kind) {
    case spec::kSchema: return "schema";
    case spec::kNodes: return "nodes";
    case spec::kColumn: return "column data";
    case spec::kNodeRanges: return "node ranges";
    case spec::kBitmaps: return "bitmaps";
    case spec::kQuantileEdges: return "quantile edges";
    case spec::kQuantileCodes: return "quantile codes";
    case spec::kBlockSums: return "block checksums";
    case spec::kBlockTable: return "block table";
    case spec::kIdKeys: return "id index keys";
    case spec::kIdRows: return "id index rows";
    case spec::kIdFences: return "id index fences";
    case spec::kTailValues: return "tail index values";
    case spec::kTailRows: return "tail index rows";
    case spec::kTailBounds: return "tail index bounds";
  }
  return "section kind " + std::to_string(kind);
}

}  // namespace

ParticleFile::~ParticleFile() = default;

std::shared_ptr<ParticleFile> ParticleFile::open(const std::string& path, bool verify) {
  // A regular file only (a FIFO, /dev/zero or a directory is refused before any read).
  return open(open_file_source(path, "particle file"), verify);
}

std::shared_ptr<ParticleFile> ParticleFile::open(std::shared_ptr<const ByteSource> source, bool verify) {
  std::shared_ptr<ParticleFile> f(new ParticleFile());
  f->source_ = std::move(source);
  const uint64_t size = f->source_->size();
  if (size < spec::kPage)
    f->fail("file is " + std::to_string(size) + " bytes, shorter than the 4096-byte header (truncated or not a motes file)");
  unsigned char head[12];
  f->source_->read(0, sizeof head, head);
  if (std::memcmp(head, spec::kMagic, 8) != 0) f->fail("not a motes particle file (bad magic)");
  const uint16_t major = load<uint16_t>(head + 8), minor = load<uint16_t>(head + 10);
  if (major == spec::kLegacyMajor) f->parse_v1();
  else if (major == spec::kVersionMajor) f->parse_v2();
  else
    f->fail("format version " + std::to_string(major) + "." + std::to_string(minor) +
            " is not supported (this motes reads versions 1.x and 2.x)");
  if (verify) f->verify_data();
  return f;
}

void ParticleFile::fail(const std::string& what) const { throw FormatError(source_->name() + ": " + what); }

size_t ParticleFile::column(const std::string& name) const {
  for (size_t i = 0; i < schema_.size(); ++i)
    if (schema_[i].name == name) return i;
  std::string names;
  for (const ColumnSpec& c : schema_) names += (names.empty() ? "" : ", ") + c.name;
  throw UsageError("unknown column '" + name + "' (columns: " + names + ")");
}

bool ParticleFile::has_column(const std::string& name) const {
  for (const ColumnSpec& c : schema_)
    if (c.name == name) return true;
  return false;
}

void ParticleFile::parse_v1() {
  const uint64_t size = source_->size();
  spec::Format1Header h;
  source_->read(0, sizeof h, &h);
  if (spec::kCheckSums && spec::checksum(&h, spec::kHeaderChecksumAt) != h.header_checksum)
    fail("header checksum mismatch (corrupted header)");
  major_ = h.version_major;
  minor_ = h.version_minor;
  header_checksum_ = h.header_checksum;
  if (h.file_size != size)
    fail("file is " + std::to_string(size) + " bytes but its header says " + std::to_string(h.file_size) +
         (size < h.file_size ? " (truncated)" : " (trailing bytes)"));
  if (h.header_bytes != spec::kHeaderBytes) fail("header size " + std::to_string(h.header_bytes) + " is not " + std::to_string(spec::kHeaderBytes));
  count_ = h.particle_count;
  if (count_ > size) fail("particle count " + std::to_string(count_) + " cannot fit in a " + std::to_string(size) + "-byte file");
  lod_count_ = h.lod_count;
  leaf_size_ = h.leaf_size;
  if (h.block_bytes < 4096 || h.block_bytes % 4096) fail("invalid block size " + std::to_string(h.block_bytes));
  block_values_ = h.block_bytes;  // format 1: bytes per checksum block (values per block vary by dtype)
  for (int a = 0; a < 3; ++a) bounds_.lo[a] = h.bounds_lo[a], bounds_.hi[a] = h.bounds_hi[a];
  if (h.section_count > (1u << 24)) fail("implausible section count " + std::to_string(h.section_count));
  const uint64_t table_bytes = uint64_t(h.section_count) * sizeof(spec::Format1SectionEntry);
  if (h.section_table_offset < spec::kPage || h.section_table_offset > size || table_bytes > size - h.section_table_offset)
    fail("section table lies outside the file");
  std::vector<spec::Format1SectionEntry> raw(h.section_count);
  if (table_bytes) source_->read(h.section_table_offset, table_bytes, raw.data());
  if (spec::kCheckSums && spec::checksum(raw.data(), table_bytes) != h.section_table_checksum) fail("section table checksum mismatch");
  std::vector<Sec> table;
  uint64_t index_read = 0;
  for (const spec::Format1SectionEntry& e : raw) {
    if (e.offset < spec::kPage || e.offset > size || e.length > size - e.offset) fail(kind_name(e.kind) + " section lies outside the file");
    const bool bulk = spec::is_bulk(e.kind);
    if (!bulk) {
      index_read += e.length;  // sections do not overlap: more than the file means a damaged table
      if (index_read > size) fail("index sections add up to more than the file (overlapping sections)");
    }
    table.push_back(Sec{e.kind, container::kRaw, e.column, e.offset, e.length, e.checksum});
  }
  parse_common(table, table_bytes, h.column_count, h.node_count, h.level_count);
}

void ParticleFile::parse_v2() {
  container_ = std::make_unique<container::Reader>(source_, spec::kMagic, spec::kVersionMajor, "particle file");
  const container::Header& h = container_->header();
  major_ = h.version_major;
  minor_ = h.version_minor;
  features_ = h.required_features;
  if (features_ & container::kFieldOnlyFeatures)
    fail("requires " + container::feature_names(features_ & container::kFieldOnlyFeatures) +
         ", a feature of field files only");
  header_checksum_ = h.header_checksum;
  spec::ParticleArea a;
  std::memcpy(&a, h.kind_area, sizeof a);
  for (uint8_t z : a.zero)
    if (z) fail("header has nonzero reserved bytes");
  count_ = a.particle_count;
  // Every block of BV values costs at least its 24-byte table entry and a few stored bytes, so a
  // byte of file holds well under 4096 values; a header claiming more is damaged (and would
  // make a reader allocate for values that cannot be there).
  if (count_ / 4096 > source_->size()) fail("particle count " + std::to_string(count_) + " cannot fit in the file");
  if (uint64_t(a.node_count) / 256 > source_->size())
    fail("node count " + std::to_string(a.node_count) + " cannot fit in the file");
  lod_count_ = a.lod_count;
  leaf_size_ = a.leaf_size;
  block_values_ = a.block_values;
  if (block_values_ == 0 || block_values_ > spec::kMaxBlockValues)
    fail("invalid block size of " + std::to_string(block_values_) + " values");
  for (int k = 0; k < 3; ++k) bounds_.lo[k] = a.bounds_lo[k], bounds_.hi[k] = a.bounds_hi[k];
  std::vector<Sec> table;
  for (const container::SectionEntry& e : container_->sections())
    table.push_back(Sec{e.kind, e.storage, e.column, e.offset, e.length, e.checksum});
  parse_common(table, uint64_t(table.size()) * container::kEntryBytes, a.column_count, a.node_count, a.level_count);
}

std::string ParticleFile::section(size_t i, uint64_t max_decoded) const {
  const Sec& e = table_[i];
  const std::string name = kind_name(e.kind) + " section" + (e.column != spec::kNoColumn && e.kind != spec::kBlockSums && e.kind != spec::kBlockTable && e.column < schema_.size() ? " of column '" + schema_[e.column].name + "'" : "");
  const std::string* stored = i < prefetched_.size() && !prefetched_[i].empty() ? &prefetched_[i] : nullptr;
  if (container_) return container_->section(i, name, max_decoded, stored);
  if (stored) {
    if (spec::kCheckSums && spec::checksum(stored->data(), stored->size()) != e.checksum)
      fail(kind_name(e.kind) + " section checksum mismatch" + (e.column != spec::kNoColumn ? " (column " + std::to_string(e.column) + ")" : ""));
    return *stored;
  }
  std::string bytes = source_->read(e.offset, e.length);
  if (spec::kCheckSums && spec::checksum(bytes.data(), bytes.size()) != e.checksum)
    fail(kind_name(e.kind) + " section checksum mismatch" + (e.column != spec::kNoColumn ? " (column " + std::to_string(e.column) + ")" : ""));
  return bytes;
}

void ParticleFile::parse_common(const std::vector<Sec>& table, uint64_t table_bytes, uint32_t column_count,
                                uint32_t node_count, uint32_t level_count) {
  table_ = table;
  const bool v2 = major_ >= 2;
  const uint64_t size = source_->size();
  int schema_at = -1, nodes_at = -1;
  for (size_t i = 0; i < table_.size(); ++i) {
    if (table_[i].kind == spec::kSchema) {
      if (schema_at >= 0) fail("schema section appears twice");
      schema_at = int(i);
    }
    if (table_[i].kind == spec::kNodes) {
      if (nodes_at >= 0) fail("nodes section appears twice");
      nodes_at = int(i);
    }
  }
  if (schema_at < 0) fail("schema section is missing");
  if (nodes_at < 0) fail("nodes section is missing");
  read_structure();

  // Schema.
  {
    const std::string s = section(size_t(schema_at), uint64_t(column_count) * (16 + 255) + (uint64_t(64) << 20));
    const unsigned char* p = reinterpret_cast<const unsigned char*>(s.data());
    std::string problem = spec::decode_schema(p, p + s.size(), column_count, v2, schema_);
    if (!problem.empty()) fail(problem);
  }
  const size_t ncol = schema_.size();

  // Tree.
  {
    const std::string s = section(size_t(nodes_at), uint64_t(node_count) * sizeof(TreeNode));
    if (s.size() != uint64_t(node_count) * sizeof(TreeNode) || node_count == 0)
      fail("nodes section has " + std::to_string(s.size()) + " bytes for " + std::to_string(node_count) + " nodes");
    nodes_.resize(node_count);
    std::memcpy(nodes_.data(), s.data(), s.size());
  }
  try {
    levels_ = compute_levels(nodes_, lod_count_, count_);
  } catch (const FormatError& e) {
    fail(e.what());
  }
  if (levels_.level_count() != level_count) fail("level count does not match the node tree");
  for (const TreeNode& tn : nodes_)
    if (tn.is_leaf() && tn.own_count > leaf_size_) fail("a leaf holds more points than the leaf size");

  // Per-column sections: bulk streams now, index sections remembered for later.
  const uint64_t nn = nodes_.size();
  lazy_ = std::make_unique<Lazy[]>(ncol);
  streams_.resize(ncol);
  std::vector<int> values_at(ncol, -1), codes_at(ncol, -1);
  stats_.file_bytes = size;
  uint64_t accounted = spec::kHeaderBytes + table_bytes;
  std::set<std::pair<uint32_t, uint32_t>> seen;
  int id_keys = -1, id_rows = -1, id_fences = -1;
  std::map<uint32_t, std::array<int, 3>> tail_at;  // column -> values, rows, bounds sections
  for (size_t ti = 0; ti < table_.size(); ++ti) {
    const Sec& e = table_[ti];
    if (e.storage != container::kBlocks) accounted += e.length;
    if (e.kind == spec::kSchema || e.kind == spec::kNodes) {
      stats_.index_bytes += e.length;
      continue;
    }
    if (e.kind == spec::kBlockSums || e.kind == spec::kBlockTable) {
      stats_.index_bytes += e.length;
      continue;  // handled with their bulk section
    }
    if (e.kind == spec::kIdKeys || e.kind == spec::kIdRows || e.kind == spec::kIdFences) {
      int& at = e.kind == spec::kIdKeys ? id_keys : e.kind == spec::kIdRows ? id_rows : id_fences;
      if (at >= 0) fail(kind_name(e.kind) + " section appears twice");
      at = int(ti);
      if (e.storage == container::kBlocks) stats_.index_bytes += e.length, accounted += e.length;
      continue;
    }
    if (e.kind == spec::kTailValues || e.kind == spec::kTailRows || e.kind == spec::kTailBounds) {
      if (e.column >= ncol) fail(kind_name(e.kind) + " section names column " + std::to_string(e.column));
      if (!seen.insert({e.kind, e.column}).second) fail(kind_name(e.kind) + " section of column '" + schema_[e.column].name + "' appears twice");
      auto& at = tail_at[e.column];
      (e.kind == spec::kTailValues ? at[0] : e.kind == spec::kTailRows ? at[1] : at[2]) = int(ti);
      stats_.tail_bytes += e.length;
      if (e.storage == container::kBlocks) accounted += e.length;
      continue;
    }
    if (e.kind < spec::kColumn || e.kind > spec::kQuantileCodes) continue;  // unknown kinds: ignored (minor versions)
    if (e.column >= ncol) fail(kind_name(e.kind) + " section names column " + std::to_string(e.column));
    const ColumnSpec& c = schema_[e.column];
    const size_t sz = dtype_size(c.dtype);
    if (!seen.insert({e.kind, e.column}).second) fail(kind_name(e.kind) + " section of column '" + c.name + "' appears twice");
    const std::string col = " of column '" + c.name + "'";
    Lazy& lz = lazy_[e.column];
    switch (e.kind) {
      case spec::kColumn:
      case spec::kQuantileCodes: {
        const bool is_codes = e.kind == spec::kQuantileCodes;
        const uint8_t dtype = is_codes ? uint8_t(DType::u8) : uint8_t(c.dtype);
        const uint64_t esize = is_codes ? 1 : sz;
        const uint64_t per_block = v2 ? block_values_ : block_values_ / esize;  // format 1: block_bytes
        const uint64_t blocks = (count_ + per_block - 1) / per_block;
        BlockStream stream;
        if (e.storage == container::kBlocks) {
          const Sec* t = nullptr;
          for (const Sec& s : table_)
            if (s.kind == spec::kBlockTable && s.column == ti) {
              if (t) fail("block table" + col + " appears twice");
              t = &s;
            }
          if (!t) fail("block table" + col + " is missing");
          const std::string tb = section(size_t(t - table_.data()), blocks * sizeof(container::BlockEntry));
          const container::SectionEntry bulk{uint16_t(e.kind), e.storage, 0, e.column, e.offset, e.length, 0};
          std::vector<StoredBlock> bl = container::decode_block_table(tb, blocks, bulk, kind_name(e.kind) + col, *container_);
          uint64_t stored = 0;
          for (const StoredBlock& b : bl) stored += b.stored;
          accounted += stored;
          (is_codes ? stats_.quantile_bytes : stats_.data_bytes) += stored;
          stream = BlockStream::coded(source_, kind_name(e.kind) + col, dtype, count_, per_block, std::move(bl));
        } else {
          if (e.storage != container::kRaw) fail(kind_name(e.kind) + col + " has storage " + std::to_string(e.storage));
          const uint64_t want = count_ * esize;
          if (e.length != want) fail(kind_name(e.kind) + col + " has " + std::to_string(e.length) + " bytes, expected " + std::to_string(want));
          if (e.offset % spec::kPage) fail(kind_name(e.kind) + col + " is not page aligned");
          (is_codes ? stats_.quantile_bytes : stats_.data_bytes) += e.length;
          const Sec* sums = nullptr;
          for (const Sec& s : table_)
            if (s.kind == spec::kBlockSums && s.column == ti) {
              if (sums) fail("block checksums" + col + " appear twice");
              sums = &s;
            }
          if (!sums) fail("block checksums" + col + " are missing");
          const std::string sb = section(size_t(sums - table_.data()), blocks * 8);
          if (sb.size() != blocks * 8) fail("block checksums" + col + " have the wrong length");
          std::vector<uint64_t> sv(blocks);
          if (!sb.empty()) std::memcpy(sv.data(), sb.data(), sb.size());
          stream = BlockStream::contiguous(source_, kind_name(e.kind) + col, dtype, count_, per_block, e.offset, std::move(sv));
        }
        (is_codes ? streams_[e.column].codes : streams_[e.column].values) = std::move(stream);
        (is_codes ? codes_at : values_at)[e.column] = int(ti);
        if (!is_codes) stats_.raw_data_bytes += count_ * sz;
        break;
      }
      case spec::kNodeRanges:
        if (!v2 && e.length != 2 * nn * sz) fail("node ranges" + col + " have the wrong length");
        lz.ranges = int(ti);
        stats_.index_bytes += e.length;
        break;
      case spec::kBitmaps:
        lz.bitmaps = int(ti);
        stats_.index_bytes += e.length;
        break;
      case spec::kQuantileEdges:
        if (!v2 && e.length != (spec::kQuantileBins + 1) * 8) fail("quantile edges" + col + " have the wrong length");
        lz.edges = int(ti);
        stats_.quantile_bytes += e.length;
        break;
    }
  }
  for (size_t i = 0; i < ncol; ++i) {
    const ColumnSpec& c = schema_[i];
    const std::string col = " of column '" + c.name + "'";
    if (values_at[i] < 0) {
      if (count_ > 0) fail("data" + col + " is missing");
      streams_[i].values = BlockStream::contiguous(source_, "column data" + col, uint8_t(c.dtype), 0, 1, 0, {});
    }
    if (lazy_[i].ranges < 0) fail("node ranges" + col + " are missing");
    if (lazy_[i].bitmaps < 0) fail("bitmaps" + col + " are missing");
    if (c.index == IndexKind::quantile) {
      if (lazy_[i].edges < 0 || (codes_at[i] < 0 && count_ > 0)) fail("quantile index" + col + " is incomplete");
      streams_[i].has_codes = codes_at[i] >= 0;
    }
  }
  // Values coded relative to their quantile bins decode with the codes and the bins' bases.
  for (size_t i = 0; i < ncol; ++i) {
    if (!streams_[i].has_codes || !streams_[i].values.is_coded()) continue;
    const std::string eb = section(size_t(lazy_[i].edges), (spec::kQuantileBins + 1) * 8);
    if (eb.size() != (spec::kQuantileBins + 1) * 8) fail("quantile edges of column '" + schema_[i].name + "' have the wrong length");
    auto edges = std::make_shared<std::vector<double>>(spec::kQuantileBins + 1);
    std::memcpy(edges->data(), eb.data(), eb.size());
    auto bases = std::make_shared<std::vector<uint64_t>>(codec::quantile_bases(uint8_t(schema_[i].dtype), edges->data()));
    streams_[i].values.set_quantile_context(&streams_[i].codes, std::move(bases), std::move(edges));
  }
  stats_.padding_bytes = size > accounted ? size - accounted : 0;
  if (id_keys >= 0 || id_rows >= 0 || id_fences >= 0) open_id_index(id_keys, id_rows, id_fences);
  tails_.resize(ncol);
  for (auto& [column, at] : tail_at) open_tail_index(column, at[0], at[1], at[2]);
}

std::vector<StoredBlock> ParticleFile::index_blocks(int bulk, uint64_t entries, const std::string& what) const {
  const uint64_t blocks = (entries + spec::kIdBlockValues - 1) / spec::kIdBlockValues;
  const Sec* t = nullptr;
  for (const Sec& s : table_)
    if (s.kind == spec::kBlockTable && s.column == uint32_t(bulk)) {
      if (t) fail("block table of the " + what + " appears twice");
      t = &s;
    }
  if (!t) fail("block table of the " + what + " is missing");
  const std::string tb = section(size_t(t - table_.data()), blocks * sizeof(container::BlockEntry));
  const Sec& e = table_[size_t(bulk)];
  const container::SectionEntry entry{uint16_t(e.kind), e.storage, 0, e.column, e.offset, e.length, 0};
  return container::decode_block_table(tb, blocks, entry, what, *container_);
}

void ParticleFile::open_id_index(int keys, int rows, int fences) {
  if (keys < 0 || rows < 0 || fences < 0) fail("the id index lacks its keys, rows or fences section");
  const Sec& k = table_[size_t(keys)];
  const Sec& r = table_[size_t(rows)];
  const Sec& f = table_[size_t(fences)];
  if (k.column >= schema_.size() || r.column != k.column || f.column != k.column || !id_dtype(schema_[k.column].dtype))
    fail("the id index names column " + std::to_string(k.column) + ", not an integer id column");
  if (k.storage != container::kBlocks || r.storage != container::kBlocks) fail("the id index is not stored as coded blocks");
  const uint64_t blocks = (count_ + spec::kIdBlockValues - 1) / spec::kIdBlockValues;
  auto key_blocks = index_blocks(keys, count_, "id index keys");
  auto row_blocks = index_blocks(rows, count_, "id index rows");
  const std::string fb = section(size_t(fences), blocks * 16);
  id_index_ = std::make_unique<IdIndex>(source_, source_->name(), k.column, count_, std::move(key_blocks), std::move(row_blocks), fb);
}

void ParticleFile::open_tail_index(uint32_t column, int values, int rows, int bounds) {
  const std::string col = " of column '" + schema_[column].name + "'";
  if (values < 0 || rows < 0 || bounds < 0) fail("the tail index" + col + " lacks its values, rows or bounds section");
  if (table_[size_t(values)].storage != container::kBlocks || table_[size_t(rows)].storage != container::kBlocks)
    fail("the tail index" + col + " is not stored as coded blocks");
  // The bounds section first: it gives the entry count the block tables are checked against.
  const std::string b = section(size_t(bounds), spec::kTailBoundsHead + (count_ / spec::kIdBlockValues + 1) * 16);
  uint64_t counts[2] = {0, 0};
  if (b.size() >= 16) std::memcpy(counts, b.data(), 16);
  if (counts[0] > count_ || counts[1] > count_ - counts[0]) fail("the tail index" + col + " counts more entries than particles");
  const uint64_t entries = counts[0] + counts[1];
  auto value_blocks = index_blocks(values, entries, "tail index values" + col);
  auto row_blocks = index_blocks(rows, entries, "tail index rows" + col);
  tails_[column] = std::make_unique<TailIndex>(source_, source_->name(), column, schema_[column].dtype, count_,
                                               std::move(value_blocks), std::move(row_blocks), b);
}

void ParticleFile::read_structure() {
  // The metadata region (every section but the bulk data) is read ahead in the background:
  // the per-column indexes a query decodes later are then in memory, not a seek each.
  // The sections every read needs now (schema, nodes, block tables and checksums, quantile
  // edges), which writers put together, are read at once.
  uint64_t meta_lo = UINT64_MAX, lo = UINT64_MAX, hi = 0, bytes = 0;
  for (const Sec& e : table_) {
    const bool bulk = spec::is_bulk(e.kind);
    if (bulk || !e.length) continue;
    meta_lo = std::min(meta_lo, e.offset);
    const bool needed = e.kind == spec::kSchema || e.kind == spec::kNodes || e.kind == spec::kBlockSums ||
                        e.kind == spec::kBlockTable || e.kind == spec::kQuantileEdges;
    if (!needed) continue;
    lo = std::min(lo, e.offset), hi = std::max(hi, e.offset + e.length), bytes += e.length;
  }
  if (meta_lo < source_->size()) source_->will_need({{meta_lo, source_->size() - meta_lo}});
  if (hi <= lo || hi - lo > 2 * bytes + (64 << 10) || hi - lo > (uint64_t(256) << 20)) return;
  const std::string span = source_->read(lo, hi - lo);
  prefetched_.assign(table_.size(), std::string());
  for (size_t i = 0; i < table_.size(); ++i) {
    const Sec& e = table_[i];
    const bool bulk = spec::is_bulk(e.kind);
    if (!bulk && e.length && e.offset >= lo && e.offset + e.length <= hi) prefetched_[i] = span.substr(e.offset - lo, e.length);
  }
}

const ColumnIndex& ParticleFile::index(size_t i) const {
  if (i >= schema_.size()) throw UsageError("column index out of range");
  Lazy& lz = lazy_[i];
  std::call_once(lz.once, [&] { decode_index(i, lz.index); });
  return lz.index;
}

void ParticleFile::decode_index(size_t i, ColumnIndex& c) const {
  c.spec = schema_[i];
  c.index = c.spec.index;
  const Lazy& lz = lazy_[i];
  const size_t sz = dtype_size(c.spec.dtype);
  const uint64_t nn = nodes_.size();
  const std::string col = " of column '" + c.spec.name + "'";
  {
    const std::string s = section(size_t(lz.ranges), 2 * nn * sz);
    if (s.size() != 2 * nn * sz) fail("node ranges" + col + " have the wrong length");
    const unsigned char* p = reinterpret_cast<const unsigned char*>(s.data());
    c.node_min.resize(nn);
    c.node_max.resize(nn);
    dispatch_dtype(c.spec.dtype, [&](auto v) {
      using T = decltype(v);
      for (uint64_t k = 0; k < nn; ++k) {
        c.node_min[k] = lower_double(load<T>(p + k * sz));
        c.node_max[k] = upper_double(load<T>(p + (nn + k) * sz));
      }
    });
  }
  {
    const std::string s = section(size_t(lz.bitmaps), sizeof(spec::BitmapsHeader) + 4 * (nn + 1) + 4 * nn);
    spec::BitmapsHeader bh;
    if (s.size() < sizeof bh) fail("bitmaps" + col + " are truncated");
    std::memcpy(&bh, s.data(), sizeof bh);
    if (bh.id_width != 1 && bh.id_width != 2 && bh.id_width != 4) fail("bitmaps" + col + " have id width " + std::to_string(bh.id_width));
    if (s.size() != sizeof bh + uint64_t(bh.dictionary_size) * 4 + nn * bh.id_width) fail("bitmaps" + col + " have the wrong length");
    c.global_min = bh.global_min;
    c.global_max = bh.global_max;
    c.nan_count = bh.nan_count;
    c.dictionary_size = bh.dictionary_size;
    c.id_width = bh.id_width;
    const unsigned char* dict = reinterpret_cast<const unsigned char*>(s.data()) + sizeof bh;
    const unsigned char* ids = dict + uint64_t(bh.dictionary_size) * 4;
    c.node_bits.resize(nn);
    for (uint64_t k = 0; k < nn; ++k) {
      uint32_t id = 0;
      std::memcpy(&id, ids + k * bh.id_width, bh.id_width);
      if (id >= bh.dictionary_size) fail("bitmaps" + col + " reference a missing dictionary entry");
      c.node_bits[k] = load<uint32_t>(dict + uint64_t(id) * 4);
    }
  }
  if (c.index == IndexKind::quantile) {
    const std::string s = section(size_t(lz.edges), (spec::kQuantileBins + 1) * 8);
    if (s.size() != (spec::kQuantileBins + 1) * 8) fail("quantile edges" + col + " have the wrong length");
    c.edges.resize(spec::kQuantileBins + 1);
    std::memcpy(c.edges.data(), s.data(), s.size());
    for (uint32_t k = 1; k <= spec::kQuantileBins; ++k)
      if (!(c.edges[k] >= c.edges[k - 1])) fail("quantile edges" + col + " are not sorted");
  }
}

void ParticleFile::verify_data(const std::function<void(uint64_t, uint64_t)>& progress) const {
  for (size_t i = 0; i < schema_.size(); ++i) index(i);
  std::vector<const BlockStream*> streams;
  uint64_t total = 0, done = 0;
  for (const Streams& s : streams_) {
    streams.push_back(&s.values);
    if (s.has_codes) streams.push_back(&s.codes);
  }
  for (const BlockStream* s : streams) total += s->block_count();
  if (id_index_) id_index_->verify();
  for (size_t i = 0; i < tails_.size(); ++i)
    if (tails_[i]) tails_[i]->verify(streams_[i].values);
  for (const BlockStream* s : streams)
    for (uint64_t b = 0; b < s->block_count(); ++b) {
      s->verify_block(b);
      if (progress) progress(++done, total);
    }
}

}  // namespace motes
