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
#include "motes/particles/kept.hpp"
#include "motes/particles/spec.hpp"
#include "motes/core/text.hpp"

namespace motes {

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
  throw UsageError("unknown column '" + name + "' (columns: " +
                   joined(schema_, [](const ColumnSpec& c) { return c.name; }) + ")");
}

bool ParticleFile::has_column(const std::string& name) const {
  for (const ColumnSpec& c : schema_)
    if (c.name == name) return true;
  return false;
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
  detail_level_ = a.detail_level;
  region_depth_ = a.region_depth;
  if (bool(detail_level_) != bool(features_ & container::kFeatureRegionalDetail))
    fail(detail_level_ ? "header gives detail level " + std::to_string(detail_level_) + " without the feature regional-detail"
                       : "requires regional-detail but gives no detail level");
  block_values_ = a.block_values;
  if (block_values_ == 0 || block_values_ > spec::kMaxBlockValues)
    fail("invalid block size of " + std::to_string(block_values_) + " values");
  for (int k = 0; k < 3; ++k) bounds_.lo[k] = a.bounds_lo[k], bounds_.hi[k] = a.bounds_hi[k];
  std::vector<TableEntry> table;
  for (const container::SectionEntry& e : container_->sections())
    table.push_back(TableEntry{e.kind, e.storage, e.column, e.offset, e.length, e.checksum});
  parse_sections(std::move(table), uint64_t(table.size()) * container::kEntryBytes, {a.column_count, a.node_count, a.level_count});
}

std::string ParticleFile::section(size_t i, uint64_t max_decoded) const {
  const TableEntry& e = table_[i];
  const std::string name = spec::section_kind_name(e.kind) + " section" + (e.column != spec::kNoColumn && e.kind != spec::kBlockSums && e.kind != spec::kBlockTable && e.column < schema_.size() ? " of column '" + schema_[e.column].name + "'" : "");
  std::optional<std::string_view> stored;
  if (i < prefetched_.size() && prefetched_[i].data()) stored = prefetched_[i];
  if (container_) return container_->section(i, name, max_decoded, stored);
  if (stored) {
    if (spec::kCheckSums && spec::checksum(stored->data(), stored->size()) != e.checksum)
      fail(spec::section_kind_name(e.kind) + " section checksum mismatch" + (e.column != spec::kNoColumn ? " (column " + std::to_string(e.column) + ")" : ""));
    return std::string(*stored);
  }
  std::string bytes = source_->read(e.offset, e.length);
  if (spec::kCheckSums && spec::checksum(bytes.data(), bytes.size()) != e.checksum)
    fail(spec::section_kind_name(e.kind) + " section checksum mismatch" + (e.column != spec::kNoColumn ? " (column " + std::to_string(e.column) + ")" : ""));
  return bytes;
}


// Every format's section table, consumed in passes: the schema and the node tree first (the
// rest is checked against them), then a directory of where every other section is (unknown
// kinds ignored, duplicates and bad column numbers refused), then one consumer per kind.
void ParticleFile::parse_sections(std::vector<TableEntry> table, uint64_t table_bytes, const Counts& counts) {
  table_ = std::move(table);
  cache_key_ = content_cache_key(*source_, header_checksum_);
  const auto [schema_at, nodes_at] = find_structure();
  read_structure();
  read_schema(schema_at, counts.columns);
  read_nodes(nodes_at, counts.nodes, counts.levels);
  Directory d = directory();
  d.accounted += spec::kHeaderBytes + table_bytes;
  for (size_t ti : d.bulk) open_bulk(ti, d);
  check_columns(d);
  attach_quantile_contexts();
  const uint64_t size = source_->size();
  stats_.file_bytes = size;
  stats_.padding_bytes = size > d.accounted ? size - d.accounted : 0;
  if (d.id_keys >= 0 || d.id_rows >= 0 || d.id_fences >= 0) open_id_index(d.id_keys, d.id_rows, d.id_fences);
  if (features_ & container::kFeatureIdsByIndex) attach_id_column(d);
  open_derived(d);
  tails_.resize(schema_.size() + derived_.size());
  for (auto& [column, at] : d.tails) open_tail_index(column, at[0], at[1], at[2]);
  open_tail_covers(d);
}

// The schema and nodes sections: exactly one of each.
std::pair<size_t, size_t> ParticleFile::find_structure() const {
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
  return {size_t(schema_at), size_t(nodes_at)};
}

void ParticleFile::read_schema(size_t at, uint32_t column_count) {
  const std::string s = section(at, uint64_t(column_count) * (16 + 255) + (uint64_t(64) << 20));
  const unsigned char* p = reinterpret_cast<const unsigned char*>(s.data());
  std::string problem = spec::decode_schema(p, p + s.size(), column_count, major_ >= 2, schema_);
  if (!problem.empty()) fail(problem);
}

// Where the node tree is; it is read when first used (load_tree), unless an earlier open of
// the same contents kept it.
void ParticleFile::read_nodes(size_t at, uint32_t node_count, uint32_t level_count) {
  nodes_at_ = at, node_count_ = node_count, level_count_ = level_count;
  try {
    check_regions(detail_level_, region_depth_, level_count);
  } catch (const FormatError& e) {
    fail(e.what());
  }
  if (auto kept = kept_as<Tree>(cache_key_, kKeptTree); kept && kept->levels.level_count() == level_count) {
    tree_ = std::move(kept);
    tree_ready_.store(tree_.get(), std::memory_order_release);
  }
}

// The node tree and its levels (checked against the header's level count), kept across
// opens of the same contents.
const ParticleFile::Tree& ParticleFile::load_tree() const {
  std::lock_guard lock(tree_mutex_);
  if (!tree_) {
    std::shared_ptr<const Tree> t = decode_tree();
    const uint64_t bytes = t->nodes.size() * sizeof(TreeNode) + t->levels.run_count * sizeof(Run) +
                           t->nodes.size() * (2 + 4 + 8 + 4) + t->levels.level_start.size() * 8;
    kept_put(cache_key_, kKeptTree, t, bytes);
    tree_ = std::move(t);
  }
  tree_ready_.store(tree_.get(), std::memory_order_release);
  return *tree_;
}

std::shared_ptr<const ParticleFile::Tree> ParticleFile::decode_tree() const {
  const std::string s = section(nodes_at_, uint64_t(node_count_) * sizeof(TreeNode));
  if (s.size() != uint64_t(node_count_) * sizeof(TreeNode) || node_count_ == 0)
    fail("nodes section has " + std::to_string(s.size()) + " bytes for " + std::to_string(node_count_) + " nodes");
  auto t = std::make_shared<Tree>();
  t->nodes.resize(node_count_);
  std::memcpy(t->nodes.data(), s.data(), s.size());
  try {
    t->levels = compute_levels(t->nodes, lod_count_, count_, detail_level_, region_depth_);
  } catch (const FormatError& e) {
    fail(e.what());
  }
  for (const TreeNode& tn : t->nodes)
    if (tn.is_leaf() && tn.own_count > leaf_size_) fail("a leaf holds more points than the leaf size");
  if (t->levels.level_count() != level_count_) fail("level count does not match the node tree");
  return t;
}

// The one section of `kind` (a block table or block checksums) that belongs to bulk section
// `bulk`; `what` names it in the messages.
const ParticleFile::TableEntry& ParticleFile::companion(size_t bulk, uint32_t kind, const std::string& what) const {
  const bool plural = kind == spec::kBlockSums;
  const TableEntry* found = nullptr;
  for (const TableEntry& s : table_)
    if (s.kind == kind && s.column == bulk) {
      if (found) fail(what + (plural ? " appear twice" : " appears twice"));
      found = &s;
    }
  if (!found) fail(what + (plural ? " are missing" : " is missing"));
  return *found;
}

// Format 1 counts a block in bytes (block_values_ holds bytes per block), format 2 in values.
uint64_t ParticleFile::values_per_block(uint64_t value_size) const {
  return major_ == spec::kLegacyMajor ? block_values_ / value_size : block_values_;
}

// A column's data or quantile codes: a stream of coded blocks (through their block table)
// or of raw ones (through their checksums).
void ParticleFile::open_bulk(size_t ti, Directory& d) {
  const TableEntry& e = table_[ti];
  const ColumnSpec& c = schema_[e.column];
  const bool is_codes = e.kind == spec::kQuantileCodes;
  const uint8_t dtype = is_codes ? uint8_t(DType::u8) : uint8_t(c.dtype);
  const uint64_t esize = is_codes ? 1 : dtype_size(c.dtype);
  const uint64_t per_block = values_per_block(esize);
  const uint64_t blocks = (count_ + per_block - 1) / per_block;
  const std::string what = spec::section_kind_name(e.kind) + " of column '" + c.name + "'";
  uint64_t& stats = is_codes ? stats_.quantile_bytes : stats_.data_bytes;
  BlockStream stream;
  if (e.storage == container::kBlocks) {
    std::vector<StoredBlock> bl = block_table(ti, blocks, what, "block table of column '" + c.name + "'");
    uint64_t stored = 0;
    for (const StoredBlock& b : bl) stored += b.stored;
    d.accounted += stored;
    stats += stored;
    stream = BlockStream::coded(source_, what, dtype, count_, per_block, std::move(bl));
  } else {
    if (e.storage != container::kRaw) fail(what + " has storage " + std::to_string(e.storage));
    const uint64_t want = count_ * esize;
    if (e.length != want) fail(what + " has " + std::to_string(e.length) + " bytes, expected " + std::to_string(want));
    if (e.offset % spec::kPage) fail(what + " is not page aligned");
    stats += e.length;
    const TableEntry& sums = companion(ti, spec::kBlockSums, "block checksums of column '" + c.name + "'");
    const std::string sb = section(size_t(&sums - table_.data()), blocks * 8);
    if (sb.size() != blocks * 8) fail("block checksums of column '" + c.name + "' have the wrong length");
    std::vector<uint64_t> sv(blocks);
    if (!sb.empty()) std::memcpy(sv.data(), sb.data(), sb.size());
    stream = BlockStream::contiguous(source_, what, dtype, count_, per_block, e.offset, std::move(sv));
  }
  stream.set_cache_key(cache_key_, ti);
  (is_codes ? streams_[e.column].codes : streams_[e.column].values) = std::move(stream);
  if (!is_codes) stats_.raw_data_bytes += count_ * esize;
}

// The coded blocks of bulk section `bulk` (`blocks` of them), from its block table.
std::vector<StoredBlock> ParticleFile::block_table(size_t bulk, uint64_t blocks, const std::string& what,
                                                   const std::string& table_name) const {
  const TableEntry& t = companion(bulk, spec::kBlockTable, table_name);
  const std::string tb = section(size_t(&t - table_.data()), blocks * sizeof(container::BlockEntry));
  const TableEntry& e = table_[bulk];
  const container::SectionEntry entry{uint16_t(e.kind), e.storage, 0, e.column, e.offset, e.length, 0};
  return container::decode_block_table(tb, blocks, entry, what, *container_);
}

// Every column has its data (none needed when empty), node ranges and bitmaps, and a
// quantile-indexed one its edges and codes.
void ParticleFile::check_columns(const Directory& d) {
  for (size_t i = 0; i < schema_.size(); ++i) {
    const ColumnSpec& c = schema_[i];
    const std::string col = " of column '" + c.name + "'";
    const bool by_index = (features_ & container::kFeatureIdsByIndex) && d.id_keys >= 0 && table_[size_t(d.id_keys)].column == i;
    if (d.values[i] < 0 && !(by_index && count_ > 0)) {
      if (count_ > 0) fail("data" + col + " is missing");
      streams_[i].values = BlockStream::contiguous(source_, "column data" + col, uint8_t(c.dtype), 0, 1, 0, {});
    }
    if (index_slots_[i].ranges < 0) fail("node ranges" + col + " are missing");
    if (index_slots_[i].bitmaps < 0) fail("bitmaps" + col + " are missing");
    if (c.index == IndexKind::quantile) {
      if (index_slots_[i].edges < 0 || (d.codes[i] < 0 && count_ > 0)) fail("quantile index" + col + " is incomplete");
      streams_[i].has_codes = d.codes[i] >= 0;
    }
  }
}

// Format 2.7 (ids-by-index): the id column has no data of its own; its values are those its
// id index determines, computed when first read.
void ParticleFile::attach_id_column(const Directory& d) {
  if (!id_index_) {
    if (count_ > 0) fail("requires ids-by-index but has no id index");
    return;
  }
  const uint32_t c = id_index_->column();
  const ColumnSpec& spec = schema_[c];
  if (d.values[c] >= 0) fail("stores column '" + spec.name + "' both as data and by its id index (ids-by-index)");
  const uint64_t per_block = values_per_block(dtype_size(spec.dtype));
  streams_[c].values = BlockStream::derived(source_, "column data of column '" + spec.name + "' (from its id index)",
                                            uint8_t(spec.dtype), count_, per_block, id_index_->column_values(spec.dtype));
  streams_[c].values.set_cache_key(cache_key_, table_.size() + size_t(d.id_keys));  // no section has that number
  stats_.raw_data_bytes += count_ * dtype_size(spec.dtype);
}

// Values coded relative to their quantile bins decode with the codes and the bins' bases.
void ParticleFile::attach_quantile_contexts() {
  for (size_t i = 0; i < schema_.size(); ++i) {
    if (!streams_[i].has_codes || !streams_[i].values.is_coded()) continue;
    const std::string eb = section(size_t(index_slots_[i].edges), (spec::kQuantileBins + 1) * 8);
    if (eb.size() != (spec::kQuantileBins + 1) * 8) fail("quantile edges of column '" + schema_[i].name + "' have the wrong length");
    auto edges = std::make_shared<std::vector<double>>(spec::kQuantileBins + 1);
    std::memcpy(edges->data(), eb.data(), eb.size());
    auto bases = std::make_shared<std::vector<uint64_t>>(codec::quantile_bases(uint8_t(schema_[i].dtype), edges->data()));
    streams_[i].values.set_quantile_context(&streams_[i].codes, std::move(bases), std::move(edges));
  }
}

void ParticleFile::read_structure() {
  // The metadata region (every section but the bulk data) is read ahead in the background:
  // the per-column indexes a query decodes later are then in memory, not a seek each.
  // The sections every read needs now (schema, block tables and checksums, quantile edges),
  // which writers put together, are read at once; the node tree when first used.
  uint64_t meta_lo = UINT64_MAX;
  std::vector<ByteRange> needed;
  for (const TableEntry& e : table_) {
    const bool bulk = spec::is_bulk(e.kind);
    if (bulk || !e.length) continue;
    meta_lo = std::min(meta_lo, e.offset);
    if (e.kind == spec::kSchema || e.kind == spec::kBlockSums || e.kind == spec::kBlockTable ||
        e.kind == spec::kQuantileEdges)
      needed.push_back({e.offset, e.length});
  }
  if (meta_lo < source_->size()) source_->will_need({{meta_lo, source_->size() - meta_lo}});
  // One read per run of them (gaps under 64 KiB read through; the node tree between the
  // schema and the block tables is a gap of its own).
  prefetched_.assign(table_.size(), std::string_view());
  for (const ByteRange& r : coalesce(std::move(needed), 64 << 10)) {
    if (r.length > (uint64_t(256) << 20)) continue;
    const std::string& span = *prefetch_spans_.emplace_back(std::make_unique<std::string>(source_->read(r.offset, r.length)));
    for (size_t i = 0; i < table_.size(); ++i) {
      const TableEntry& e = table_[i];
      if (!spec::is_bulk(e.kind) && e.length && e.offset >= r.offset && e.offset + e.length <= r.offset + r.length)
        prefetched_[i] = std::string_view(span.data() + (e.offset - r.offset), e.length);
    }
  }
}

}  // namespace motes
