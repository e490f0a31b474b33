// Memory-mapped reader of one particle file: validates every header and index
// section on open, exposes columns as zero-copy typed arrays in file order.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "motes/particles/layout/tree.hpp"
#include "motes/core/types.hpp"

namespace motes {

// The index of one column, decoded for queries. Node ranges are widened to
// doubles that bound the native values (exact except for huge 64-bit integers).
struct ColumnIndex {
  ColumnSpec spec;
  FineIndex fine = FineIndex::none;
  const void* data = nullptr;        // particle_count values in file order
  const uint8_t* codes = nullptr;    // quantile codes (fine == quantile)
  std::vector<double> edges;         // 257 quantile edges (fine == quantile)
  double global_min = 0, global_max = 0;
  uint64_t nan_count = 0;
  std::vector<double> node_min, node_max;  // per node, over its subtree
  std::vector<uint32_t> node_bits;         // per node, 32-bin bitmap over [global_min, global_max]
  uint64_t dictionary_size = 0;
  uint32_t id_width = 0;
};

struct FileStats {
  uint64_t file_bytes = 0, data_bytes = 0, index_bytes = 0, padding_bytes = 0, fine_bytes = 0;
};

class ParticleFile {
 public:
  // Opens and validates `path`; throws FormatError naming the file and the problem.
  // With verify_data, also checks every data block checksum.
  static std::shared_ptr<ParticleFile> open(const std::string& path, bool verify_data = false);
  ~ParticleFile();
  ParticleFile(const ParticleFile&) = delete;
  ParticleFile& operator=(const ParticleFile&) = delete;

  const std::string& path() const { return path_; }
  uint64_t particle_count() const { return count_; }
  const std::vector<ColumnIndex>& columns() const { return columns_; }
  // Index of column `name`; UsageError listing the columns when there is none.
  size_t column(const std::string& name) const;
  bool has_column(const std::string& name) const;
  const std::vector<TreeNode>& nodes() const { return nodes_; }
  const Levels& levels() const { return levels_; }
  uint32_t lod_count() const { return lod_count_; }
  uint32_t leaf_size() const { return leaf_size_; }
  const Box& bounds() const { return bounds_; }
  uint16_t version_major() const { return major_; }
  uint16_t version_minor() const { return minor_; }
  // The header's checksum: it covers every other checksum, so it identifies the whole file.
  uint64_t header_checksum() const { return header_checksum_; }
  FileStats stats() const { return stats_; }

  // FormatError when the file's size changed since it was opened (truncated under the
  // reader): checked before a query reads mapped data, where it would otherwise die of SIGBUS.
  void check_unchanged() const;

  // Checks every bulk block checksum; throws FormatError naming the section and block.
  // Calls progress(done, total) per block when given.
  void verify_data(const std::function<void(uint64_t, uint64_t)>& progress = {}) const;

 private:
  ParticleFile() = default;
  void parse();
  std::string read_at(uint64_t offset, uint64_t length) const;  // pread, FormatError when short
  [[noreturn]] void fail(const std::string& what) const;

  std::string path_;
  int fd_ = -1;  // kept open: check_unchanged() and the index reads use it
  const unsigned char* map_ = nullptr;
  uint64_t size_ = 0;
  uint64_t count_ = 0;
  uint32_t lod_count_ = 0, leaf_size_ = 0, block_bytes_ = 0;
  uint16_t major_ = 0, minor_ = 0;
  uint64_t header_checksum_ = 0;
  Box bounds_{};
  std::vector<TreeNode> nodes_;
  Levels levels_;
  std::vector<ColumnIndex> columns_;
  struct Bulk {
    std::string what;
    uint64_t offset, length, block_bytes;
    std::vector<uint64_t> sums;
  };
  std::vector<Bulk> bulk_;
  FileStats stats_;
};

}  // namespace motes
