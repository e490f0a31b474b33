// The metadata sections of a particle file, placed after its bulk data (writer.cpp): those
// every read needs first, together (schema, tree, the streams' block tables and checksums,
// quantile edges, the value indexes' tables); then the per-node indexes (node ranges,
// bitmaps), which queries read column by column.
#include "motes/particles/column_writer.hpp"

#include <algorithm>
#include <unordered_map>

#include "motes/particles/spec.hpp"
#include "motes/particles/tail_cover.hpp"

namespace motes {

namespace {

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

// The extent of a coded stream's blocks in the file.
std::pair<uint64_t, uint64_t> extent(const StreamOut& s) {
  if (s.blocks.empty()) return {spec::kPage, 0};
  uint64_t lo = UINT64_MAX, hi = 0;
  for (const StoredBlock& b : s.blocks) lo = std::min(lo, b.offset), hi = std::max(hi, b.offset + b.stored);
  return {lo, hi - lo};
}

// Whether any of the coded blocks (back to back in `coded`) holds packed words, which a
// reader must know (container::kFeaturePackedBlocks).
bool any_packed(const std::string& coded, const std::vector<StoredBlock>& blocks) {
  size_t at = 0;
  for (const StoredBlock& b : blocks) {
    if (at + 1 < coded.size() && codec::addressable_layout(uint8_t(coded[at + 1]))) return true;
    at += b.stored;
  }
  return false;
}

// A column's stream in the section table: raw values with their block checksums, or coded
// blocks (within their extent) with their block table.
void add_stream(container::SectionsBuilder& meta, uint32_t kind, uint32_t column, const StreamOut& s, uint64_t bytes) {
  if (s.plan.raw()) {
    uint32_t at = meta.bulk(kind, column, container::kRaw, s.offset, bytes);
    meta.add(spec::kBlockSums, at, as_bytes(s.sums));
  } else {
    if (codec::addressable_layout(uint8_t(s.plan.layout))) meta.features |= container::kFeaturePackedBlocks;
    auto [lo, len] = extent(s);
    uint32_t at = meta.bulk(kind, column, container::kBlocks, lo, len);
    meta.add(spec::kBlockTable, at, container::encode_block_table(s.blocks));
  }
}

}  // namespace

container::SectionsBuilder metadata_sections(uint64_t base, bool lossless, uint64_t n, const std::vector<ColumnPlan>& plans,
                                             const Layout& layout, const IdIndexSections* ids,
                                             const std::vector<TailIndexSections>& tails,
                                             const std::vector<DerivedQuantity>& derived) {
  // The tree and the block tables are read whole by every open: raw, since decoding them was
  // a third of opening a 16M-particle file (zstd: 147 KB of nodes and 405 KB of tables into
  // 1.8 MB, about 2 ms) for 0.25 % of its size (docs/format.md §4.3).
  container::SectionsBuilder meta{base, lossless, {}, {}, 0, {spec::kNodes, spec::kBlockTable}};
  std::vector<ColumnSpec> schema;
  for (const ColumnPlan& p : plans)
    schema.push_back(ColumnSpec{p.view->spec.name, p.view->spec.dtype, p.index, p.view->spec.unit, p.view->spec.error_bound});
  meta.add(spec::kSchema, spec::kNoColumn, spec::encode_schema(schema, true));
  meta.add(spec::kNodes, spec::kNoColumn, as_bytes(layout.nodes));
  static_assert(sizeof(TreeNode) == 8);
  for (uint32_t i = 0; i < plans.size(); ++i) {
    const ColumnPlan& p = plans[i];
    if (p.values.by_index) meta.features |= container::kFeatureIdsByIndex;
    else add_stream(meta, spec::kColumn, i, p.values, n * p.size);
    if (p.index == IndexKind::quantile) {
      meta.add(spec::kQuantileEdges, i, as_bytes(p.edges));
      add_stream(meta, spec::kQuantileCodes, i, p.codes, n);
    }
  }
  if (ids) {
    const uint64_t at = ids->key_blocks.front().offset;
    const uint32_t k = meta.bulk(spec::kIdKeys, ids->column, container::kBlocks, at, ids->keys.size());
    meta.add(spec::kBlockTable, k, container::encode_block_table(ids->key_blocks));
    const uint32_t r = meta.bulk(spec::kIdRows, ids->column, container::kBlocks, at + ids->keys.size(), ids->rows.size());
    meta.add(spec::kBlockTable, r, container::encode_block_table(ids->row_blocks));
    meta.add(spec::kIdFences, ids->column, ids->fences);
    if (any_packed(ids->keys, ids->key_blocks) || any_packed(ids->rows, ids->row_blocks))
      meta.features |= container::kFeaturePackedBlocks;
  }
  // A column's tail, or a derived quantity's (t.column = columns + d: its own kinds, laid
  // out as a column's, naming d).
  const uint32_t ncol = uint32_t(plans.size());
  for (const DerivedQuantity& q : derived) meta.add(spec::kDerived, uint32_t(&q - derived.data()), encode_derived(q));
  for (const TailIndexSections& t : tails) {
    const bool of_derived = t.column >= ncol;
    const uint32_t column = of_derived ? t.column - ncol : t.column;
    const uint32_t kv = of_derived ? spec::kDerivedTailValues : spec::kTailValues,
                   kr = of_derived ? spec::kDerivedTailRows : spec::kTailRows,
                   kb = of_derived ? spec::kDerivedTailBounds : spec::kTailBounds,
                   kcv = of_derived ? spec::kDerivedTailCoverValues : spec::kTailCoverValues,
                   kc = of_derived ? spec::kDerivedTailCover : spec::kTailCover;
    const uint32_t v = meta.bulk(kv, column, container::kBlocks, t.value_blocks.front().offset, t.values.size());
    meta.add(spec::kBlockTable, v, container::encode_block_table(t.value_blocks));
    const uint32_t r = meta.bulk(kr, column, container::kBlocks, t.row_blocks.front().offset, t.rows.size());
    meta.add(spec::kBlockTable, r, container::encode_block_table(t.row_blocks));
    meta.add(kb, column, t.bounds);
    if (any_packed(t.values, t.value_blocks) || any_packed(t.rows, t.row_blocks)) meta.features |= container::kFeaturePackedBlocks;
    if (t.covers.empty()) continue;
    TailCoverHead head{t.low_covered, t.high_covered, {}};
    for (const TailIndexSections::Cover& c : t.covers) {
      const uint32_t k = meta.bulk(kcv, c.column, container::kBlocks, c.blocks.front().offset, c.values.size());
      meta.add(spec::kBlockTable, k, container::encode_block_table(c.blocks));
      head.sections.push_back(k);
      if (any_packed(c.values, c.blocks)) meta.features |= container::kFeaturePackedBlocks;
    }
    meta.add(kc, column, encode_tail_cover(head));
  }
  for (uint32_t i = 0; i < plans.size(); ++i) {
    const ColumnPlan& p = plans[i];
    // The positions' node ranges raw: every box query reads them first, and their zstd
    // decoding was a third of a box query's work on a freshly opened file (4M particles: 1.1
    // of 3.3 ms) for 0.3 % of its size (docs/format.md §9, step 4).
    meta.add(spec::kNodeRanges, i, std::string(p.node_min.begin(), p.node_min.end()) + std::string(p.node_max.begin(), p.node_max.end()),
             is_position_column(p.view->spec.name));
    meta.add(spec::kBitmaps, i, encode_bitmaps(p));
  }
  return meta;
}

}  // namespace motes
