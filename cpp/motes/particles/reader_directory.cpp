// A particle file's section directory (ParticleFile::directory, reader.hpp): where each
// section past the schema and nodes is, checked for duplicates, column numbers and kinds
// before any consumer reads one; unknown kinds ignored (docs/format.md §7).
#include <array>
#include <set>

#include "motes/container/container.hpp"
#include "motes/particles/reader.hpp"
#include "motes/particles/spec.hpp"

namespace motes {

// Where every section past the schema and nodes is: the bulk streams of the columns to open,
// the per-column index sections remembered for later (ColumnIndexSlot), the id and tail indexes' parts;
// and the bytes each accounts for.
ParticleFile::Directory ParticleFile::directory() {
  const size_t ncol = schema_.size();
  index_slots_ = std::make_unique<ColumnIndexSlot[]>(ncol);
  streams_.resize(ncol);
  Directory d;
  d.values.assign(ncol, -1);
  d.codes.assign(ncol, -1);
  std::set<std::pair<uint32_t, uint32_t>> seen;
  auto named_column = [&](const TableEntry& e) {
    if (e.column >= ncol) fail(spec::section_kind_name(e.kind) + " section names column " + std::to_string(e.column));
    if (!seen.insert({e.kind, e.column}).second)
      fail(spec::section_kind_name(e.kind) + " section of column '" + schema_[e.column].name + "' appears twice");
  };
  auto tail_slot = [&](uint32_t i) -> std::array<int, 3>& { return d.tails.try_emplace(i, std::array<int, 3>{-1, -1, -1}).first->second; };
  for (size_t ti = 0; ti < table_.size(); ++ti) {
    const TableEntry& e = table_[ti];
    const bool coded = e.storage == container::kBlocks;
    if (!coded) d.accounted += e.length;
    switch (e.kind) {
      case spec::kSchema:
      case spec::kNodes:
      case spec::kBlockSums:   // read with their bulk section
      case spec::kBlockTable:
        stats_.index_bytes += e.length;
        break;
      case spec::kIdKeys:
      case spec::kIdRows:
      case spec::kIdFences: {
        int& at = e.kind == spec::kIdKeys ? d.id_keys : e.kind == spec::kIdRows ? d.id_rows : d.id_fences;
        if (at >= 0) fail(spec::section_kind_name(e.kind) + " section appears twice");
        at = int(ti);
        if (coded) stats_.index_bytes += e.length, d.accounted += e.length;
        break;
      }
      case spec::kTailValues:
      case spec::kTailRows:
      case spec::kTailBounds: {
        named_column(e);
        auto& at = tail_slot(e.column);
        (e.kind == spec::kTailValues ? at[0] : e.kind == spec::kTailRows ? at[1] : at[2]) = int(ti);
        stats_.tail_bytes += e.length;
        if (coded) d.accounted += e.length;
        break;
      }
      case spec::kTailCoverValues:  // one per covered column of each tail: listed by the tail's cover
      case spec::kDerivedTailCoverValues:  // likewise for a derived quantity's tail (2.4)
        if (e.column >= ncol) fail(spec::section_kind_name(e.kind) + " section names column " + std::to_string(e.column));
        (e.kind == spec::kTailCoverValues ? d.cover_values : d.derived_cover_values).push_back(ti);
        stats_.tail_bytes += e.length;
        if (coded) d.accounted += e.length;
        break;
      case spec::kTailCover:
        named_column(e);
        d.covers[e.column] = int(ti);
        stats_.tail_bytes += e.length;
        break;
      case spec::kDerived:
        if (e.column > 255 || !d.derived.emplace(e.column, int(ti)).second)
          fail("derived quantity section " + std::to_string(e.column) + (e.column > 255 ? " is out of range" : " appears twice"));
        stats_.tail_bytes += e.length;
        break;
      case spec::kDerivedTailValues:
      case spec::kDerivedTailRows:
      case spec::kDerivedTailBounds: {  // a derived quantity's tail, at columns + d
        const std::string what = spec::section_kind_name(e.kind) + " section of derived quantity " + std::to_string(e.column);
        if (e.column > 255) fail(what + " is out of range");
        int& at = tail_slot(uint32_t(ncol) + e.column)[e.kind - spec::kDerivedTailValues];
        if (at >= 0) fail(what + " appears twice");
        at = int(ti);
        stats_.tail_bytes += e.length;
        if (coded) d.accounted += e.length;
        break;
      }
      case spec::kDerivedTailCover:
        if (e.column > 255 || !d.covers.emplace(uint32_t(ncol) + e.column, int(ti)).second)
          fail("derived tail cover section of derived quantity " + std::to_string(e.column) +
               (e.column > 255 ? " is out of range" : " appears twice"));
        stats_.tail_bytes += e.length;
        break;
      case spec::kColumn:
      case spec::kQuantileCodes:
        named_column(e);
        d.bulk.push_back(ti);
        (e.kind == spec::kQuantileCodes ? d.codes : d.values)[e.column] = int(ti);
        break;
      case spec::kNodeRanges:
        named_column(e);
        index_slots_[e.column].ranges = int(ti);
        stats_.index_bytes += e.length;
        break;
      case spec::kBitmaps:
        named_column(e);
        index_slots_[e.column].bitmaps = int(ti);
        stats_.index_bytes += e.length;
        break;
      case spec::kQuantileEdges:
        named_column(e);
        index_slots_[e.column].edges = int(ti);
        stats_.quantile_bytes += e.length;
        break;
      default:
        break;  // unknown kinds: ignored (minor versions)
    }
  }
  return d;
}

}  // namespace motes
