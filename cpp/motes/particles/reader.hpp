// Reader of one particle file (format 1 or 2) from any byte source. Opening validates the
// header, the section table, the schema and the node tree; each column's index (node
// ranges, bitmaps, quantile edges) is decoded and checked on first use; values and
// quantile codes are BlockStreams, read through a BlockReader (container/block_stream.hpp).
#pragma once

#include <array>
#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "motes/particles/id_index.hpp"
#include "motes/particles/derived.hpp"
#include "motes/particles/tail_index.hpp"
#include "motes/container/block_stream.hpp"
#include "motes/core/types.hpp"
#include "motes/io/byte_source.hpp"
#include "motes/particles/layout/tree.hpp"

namespace motes::container {
class Reader;
}

namespace motes {

// The index of one column, decoded for queries. Node ranges are widened to doubles that
// bound the native values (exact except for huge 64-bit integers).
struct ColumnIndex {
  ColumnSpec spec;
  IndexKind index = IndexKind::none;
  std::vector<double> edges;  // 257 quantile edges (index == quantile)
  double global_min = 0, global_max = 0;
  uint64_t nan_count = 0;
  std::vector<double> node_min, node_max;  // per node, over its subtree
  std::vector<uint32_t> node_bits;         // per node, 32-bin bitmap over [global_min, global_max]
  uint64_t dictionary_size = 0;
  uint32_t id_width = 0;
};

struct FileStats {
  uint64_t file_bytes = 0;
  uint64_t data_bytes = 0;      // the columns' values as stored
  uint64_t raw_data_bytes = 0;  // the columns' values as numbers (count x dtype size)
  uint64_t index_bytes = 0, padding_bytes = 0;
  uint64_t quantile_bytes = 0;  // quantile codes and edges as stored
  uint64_t tail_bytes = 0;      // tail indexes (values, rows, bounds, covers) as stored
};

class ParticleFile {
 public:
  // Opens and validates a file; FormatError naming the file and the problem. With
  // verify_data, also checks every data block and decodes every index section.
  static std::shared_ptr<ParticleFile> open(const std::string& path, bool verify_data = false);
  static std::shared_ptr<ParticleFile> open(std::shared_ptr<const ByteSource> source, bool verify_data = false);
  ParticleFile(const ParticleFile&) = delete;
  ParticleFile& operator=(const ParticleFile&) = delete;

  const std::string& path() const { return source_->name(); }
  const ByteSource& source() const { return *source_; }
  uint64_t particle_count() const { return count_; }
  const std::vector<ColumnSpec>& schema() const { return schema_; }
  // Column i's index, decoded and checked on first use (thread-safe); FormatError naming the
  // file and the section when it is damaged.
  const ColumnIndex& index(size_t i) const;
  // Column i's values in file order, and its quantile codes (null without a quantile index).
  const BlockStream& values(size_t i) const { return streams_.at(i).values; }
  const BlockStream* codes(size_t i) const { return streams_.at(i).has_codes ? &streams_[i].codes : nullptr; }
  // Index of column `name`; UsageError listing the columns when there is none.
  size_t column(const std::string& name) const;
  bool has_column(const std::string& name) const;
  // The node tree and the levels derived from it: read, derived and checked on first use
  // (thread-safe; FormatError naming the file then), since what an index answers alone (a
  // tail count, a covered tail query) needs neither. Kept across opens of the same contents.
  const std::vector<TreeNode>& nodes() const { return tree().nodes; }
  const Levels& levels() const { return tree().levels; }
  // As the header says (the tree, once read, is checked against them).
  uint32_t node_count() const { return node_count_; }
  uint32_t level_count() const { return level_count_; }
  uint32_t lod_count() const { return lod_count_; }
  uint32_t leaf_size() const { return leaf_size_; }
  uint32_t detail_level() const { return detail_level_; }
  uint32_t region_depth() const { return region_depth_; }
  uint32_t block_values() const { return block_values_; }
  const Box& bounds() const { return bounds_; }
  uint16_t version_major() const { return major_; }
  uint16_t version_minor() const { return minor_; }
  uint64_t required_features() const { return features_; }
  // The id index (particles/id_index.hpp), or null when the file has none.
  const IdIndex* id_index() const { return id_index_.get(); }
  // Column i's tail index (particles/tail_index.hpp), or null when it has none; i = columns
  // + d: derived quantity d's.
  const TailIndex* tail_index(size_t i) const { return i < tails_.size() ? tails_[i].get() : nullptr; }
  // The derived quantities (format 2.4, particles/derived.hpp), by number.
  const std::vector<DerivedQuantity>& derived() const { return derived_; }
  // Checks derived quantity d's tail index (every block, order, fences, limits, covers)
  // against `values`, the quantity's values in file order, which this layer cannot compute
  // (verify_derived does, particles/derived_check.hpp); FormatError naming what is wrong.
  void verify_derived_tail(size_t d, const BlockStream& values) const;
  // The header's checksum: it covers every other checksum, so it identifies the whole file.
  uint64_t header_checksum() const { return header_checksum_; }
  FileStats stats() const { return stats_; }
  // Where the file's bytes go, section by section (`motes info --sizes`): what each section
  // is for (`role`: "values", "quantile index", "node ranges", "bitmaps", "id index", "tail
  // index", "tail covers", "derived quantities", "tree", "schema", "other"), the column it
  // belongs to (empty: the file's), its kind's name and its stored bytes. A block table or
  // block checksums count with the section they describe; the header, the section table and
  // padding are one entry of role "header and padding".
  struct SectionSize {
    std::string role, column, kind;
    uint64_t bytes = 0;
  };
  std::vector<SectionSize> section_sizes() const;

  // FormatError when the file's size changed since it was opened (truncated under the
  // reader): checked before a query reads mapped data, where it would otherwise die of SIGBUS.
  void check_unchanged() const { source_->check_unchanged(); }

  // Checks every data block and decodes every column's index, and computes every derived
  // quantity again (particles/derived_check.hpp); FormatError naming the section and block.
  // Calls progress(done, total) per block when given.
  void verify_data(const std::function<void(uint64_t, uint64_t)>& progress = {}) const;

 private:
  ParticleFile() = default;
  struct TableEntry {  // a section table entry, either format
    uint32_t kind;
    uint8_t storage;
    uint32_t column;
    uint64_t offset, length, checksum;
  };
  struct Streams {
    BlockStream values, codes;
    bool has_codes = false;
  };
  struct Tree {  // the node tree and its levels: decoded once per contents (particles/kept.hpp)
    std::vector<TreeNode> nodes;
    Levels levels;
  };
  // A column's index sections (node ranges, bitmaps, quantile edges) and the index decoded
  // from them on first use (index(i)).
  struct ColumnIndexSlot {
    std::once_flag once;
    std::shared_ptr<const ColumnIndex> index;  // shared by the opens of the same contents
    int ranges = -1, bitmaps = -1, edges = -1;  // section numbers
  };
  // Where the sections past the schema and nodes are (ParticleFile::directory).
  struct Directory {
    std::vector<size_t> bulk;        // column data and quantile code sections, in table order
    std::vector<int> values, codes;  // per column: its data and codes sections, -1 without
    int id_keys = -1, id_rows = -1, id_fences = -1;
    std::map<uint32_t, std::array<int, 3>> tails;  // column -> values, rows, bounds sections
    std::map<uint32_t, int> covers;                 // column -> its tail's cover section (2.3)
    std::vector<size_t> cover_values;               // the covers' kind-16 sections, in table order
    // 2.4: derived quantity d -> its kind-18 section. Its tail and cover are in `tails` and
    // `covers` at columns + d, the cover's kind-22 sections in derived_cover_values.
    std::map<uint32_t, int> derived;
    std::vector<size_t> derived_cover_values;
    uint64_t accounted = 0;  // bytes of the file that the header and sections account for
  };
  struct Counts {  // what the header says the sections hold
    uint32_t columns, nodes, levels;
  };
  // The formats' headers (format 1 in reader_v1.cpp), then their shared section table.
  void parse_v1();
  void check_v1_lengths() const;
  void parse_v2();
  void parse_sections(std::vector<TableEntry> table, uint64_t table_bytes, const Counts& counts);
  std::pair<size_t, size_t> find_structure() const;
  void read_structure();
  void read_schema(size_t at, uint32_t column_count);
  void read_nodes(size_t at, uint32_t node_count, uint32_t level_count);
  Directory directory();
  void open_bulk(size_t ti, Directory& d);
  void check_columns(const Directory& d);
  void attach_id_column(const Directory& d);
  void attach_quantile_contexts();
  void open_id_index(int keys, int rows, int fences);
  void open_tail_index(uint32_t column, int values, int rows, int bounds);
  // The covers of the tail indexes (2.3): each listed kind-16 section once, every one listed.
  void open_tail_covers(const Directory& d);
  // The derived quantities (2.4): numbered 0 … D−1, each once, names distinct from each
  // other's and the columns'; a derived tail or cover only for a quantity defined.
  void open_derived(const Directory& d);
  // " of column 'energy'" or " of derived quantity 'vmag'": tail slot i in messages.
  std::string tail_owner(uint32_t i) const;
  const TableEntry& companion(size_t bulk, uint32_t kind, const std::string& what) const;
  uint64_t values_per_block(uint64_t value_size) const;
  // The coded blocks of bulk section `bulk`, from its block table (named `table_name`).
  std::vector<StoredBlock> block_table(size_t bulk, uint64_t blocks, const std::string& what,
                                       const std::string& table_name) const;
  // The block table of bulk section `bulk`, a value index's stream of `entries` entries.
  std::vector<StoredBlock> index_blocks(int bulk, uint64_t entries, const std::string& what) const;
  // The bytes of section i, checked and decoded; a zstd section may decode to at most
  // max_decoded bytes (what its kind can hold), checked before anything is allocated.
  std::string section(size_t i, uint64_t max_decoded = UINT64_MAX) const;
  void decode_index(size_t i, ColumnIndex& c) const;
  // The tree from the nodes section, checked (its shape, leaves, and the header's level count).
  std::shared_ptr<const Tree> decode_tree() const;
  const Tree& tree() const {
    if (const Tree* t = tree_ready_.load(std::memory_order_acquire)) return *t;
    return load_tree();
  }
  const Tree& load_tree() const;
  [[noreturn]] void fail(const std::string& what) const;

  std::shared_ptr<const ByteSource> source_;
  std::unique_ptr<container::Reader> container_;  // format 2
  uint64_t count_ = 0;
  uint32_t lod_count_ = 0, leaf_size_ = 0, block_values_ = 0, detail_level_ = 0, region_depth_ = 0;
  uint16_t major_ = 0, minor_ = 0;
  uint64_t features_ = 0;
  uint64_t header_checksum_ = 0;
  uint64_t cache_key_ = 0;  // names the file's contents across opens (0: not a file)
  Box bounds_{};
  std::vector<ColumnSpec> schema_;
  uint32_t node_count_ = 0, level_count_ = 0;
  size_t nodes_at_ = 0;                        // the nodes section's number
  mutable std::mutex tree_mutex_;              // load_tree()
  mutable std::shared_ptr<const Tree> tree_;   // once loaded
  mutable std::atomic<const Tree*> tree_ready_{nullptr};
  std::vector<TableEntry> table_;
  // Stored bytes of the sections read at open (by section number; empty views for the
  // others), in the spans read at once.
  std::vector<std::string_view> prefetched_;
  std::vector<std::unique_ptr<std::string>> prefetch_spans_;
  std::vector<Streams> streams_;
  std::unique_ptr<ColumnIndexSlot[]> index_slots_;
  FileStats stats_;
  std::unique_ptr<IdIndex> id_index_;  // format 2.1, when the writer built one
  std::vector<DerivedQuantity> derived_;           // format 2.4
  std::vector<std::unique_ptr<TailIndex>> tails_;  // format 2.2: per column, null without one

 public:
  ~ParticleFile();
};

// Values [start, start + m) of `file`'s column `c` as float64, read through `reader`: what
// numeric expressions compute on, for the query evaluator (query/evaluate.cpp) and the check
// of derived quantities (particles/derived_check.cpp) alike.
inline void column_doubles(const ParticleFile& file, BlockReader& reader, size_t c, uint64_t start, uint32_t m,
                           double* out) {
  dispatch_dtype(file.schema()[c].dtype, [&](auto zero) {
    using T = decltype(zero);
    const T* p = reader.values<T>(file.values(c), start, m);
    for (uint32_t i = 0; i < m; ++i) out[i] = double(p[i]);
  });
}

}  // namespace motes
