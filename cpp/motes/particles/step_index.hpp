// The top-level index of a species written as several part files (an MPI write):
// per-part counts and bounds, and a binary tree over the parts whose nodes carry
// every column's range and a 32-bin bitmap over the species' global range, so a
// query skips whole part files without opening them. docs/format.md, "Step index".
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "motes/particles/reader.hpp"
#include "motes/particles/writer.hpp"
#include "motes/core/types.hpp"

namespace motes {

struct IndexPart {
  uint64_t count = 0;
  uint64_t file_bytes = 0;
  Box bounds{};
};

// Nodes in preorder; node 0 covers every part, a leaf exactly one.
struct IndexNode {
  uint32_t first_part = 0, part_count = 0;
  uint32_t subtree_end = 0;  // index of the first node after this subtree
  uint64_t count = 0;
  Box bounds{};
  bool is_leaf() const { return part_count == 1; }
};

// What rank 0 knows about one written part file.
struct PartSummary {
  uint64_t count = 0;
  uint64_t file_bytes = 0;
  Box bounds{};
  std::vector<ColumnSummary> columns;
  uint64_t header_checksum = 0;
};

// What writing a step index produced: the particles of all parts and the index's checksum.
struct StepIndexSummary {
  uint64_t count = 0;
  Box bounds{};
  uint64_t header_checksum = 0;
};

class StepIndex {
 public:
  static constexpr const char* kExtension = ".mpi";

  // Opens and validates an index file; FormatError naming the file and the problem.
  static std::shared_ptr<const StepIndex> open(const std::string& path);
  // The largest step index file accepted (a bigger one is refused before it is read).
  static constexpr uint64_t kMaxBytes = uint64_t(1) << 34;

  // Writes the index of `parts` (in part-number order) to `path` atomically. The root
  // bitmaps of the parts, each over its own range, are remapped to the global range.
  // Returns the particle count and bounds of all parts and the index's header checksum.
  static StepIndexSummary write(const std::string& path, const std::vector<ColumnSpec>& schema,
                         const std::vector<PartSummary>& parts, bool sync = true);

  // The file of part k: "<index path without .mpi>.p<k, 6 digits>.mpf".
  static std::string part_path(const std::string& index_path, size_t k);

  const std::string& path() const { return path_; }
  uint64_t header_checksum() const { return header_checksum_; }
  uint64_t particle_count() const { return count_; }
  const Box& bounds() const { return bounds_; }
  const std::vector<IndexPart>& parts() const { return parts_; }
  const std::vector<IndexNode>& nodes() const { return nodes_; }
  // One entry per column: spec, global range, NaN count, and node_min/node_max/node_bits
  // per index node (data and codes are null: the values live in the part files).
  const std::vector<ColumnIndex>& columns() const { return columns_; }

 private:
  std::string path_;
  uint64_t header_checksum_ = 0;
  uint64_t count_ = 0;
  Box bounds_{};
  std::vector<IndexPart> parts_;
  std::vector<IndexNode> nodes_;
  std::vector<ColumnIndex> columns_;
};

}  // namespace motes
