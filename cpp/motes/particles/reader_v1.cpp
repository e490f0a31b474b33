// Format 1 (motes 0.1): its fixed header and raw section table, read into the table every
// format shares (reader.cpp). Kept in a file of its own, as zstd keeps each legacy format in
// lib/legacy/: format 1 files stay readable forever, and nothing else here needs to know them.
#include <cstring>

#include "motes/particles/reader.hpp"
#include "motes/particles/spec.hpp"

namespace motes {

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
  std::vector<TableEntry> table;
  uint64_t index_read = 0;
  for (const spec::Format1SectionEntry& e : raw) {
    if (e.offset < spec::kPage || e.offset > size || e.length > size - e.offset) fail(spec::section_kind_name(e.kind) + " section lies outside the file");
    const bool bulk = spec::is_bulk(e.kind);
    if (!bulk) {
      index_read += e.length;  // sections do not overlap: more than the file means a damaged table
      if (index_read > size) fail("index sections add up to more than the file (overlapping sections)");
    }
    table.push_back(TableEntry{e.kind, container::kRaw, e.column, e.offset, e.length, e.checksum});
  }
  parse_sections(std::move(table), table_bytes, {h.column_count, h.node_count, h.level_count});
  check_v1_lengths();
}

// Format 1 stores node ranges and quantile edges raw, so their lengths are checked at open
// (format 2's are zstd frames, checked when decoded).
void ParticleFile::check_v1_lengths() const {
  const uint64_t nn = node_count_;
  for (size_t i = 0; i < schema_.size(); ++i) {
    const std::string col = " of column '" + schema_[i].name + "'";
    const ColumnIndexSlot& lz = index_slots_[i];
    if (lz.ranges >= 0 && table_[size_t(lz.ranges)].length != 2 * nn * dtype_size(schema_[i].dtype))
      fail("node ranges" + col + " have the wrong length");
    if (lz.edges >= 0 && table_[size_t(lz.edges)].length != (spec::kQuantileBins + 1) * 8)
      fail("quantile edges" + col + " have the wrong length");
  }
}


}  // namespace motes
