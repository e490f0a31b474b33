// The particles of one species in one step: a single particle file (serial
// writes) or the part files of a step index (MPI writes). Queries and analyses
// run over a Collection; parts are opened on first use.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "motes/particles/reader.hpp"
#include "motes/particles/step_index.hpp"

namespace motes {

class Collection {
 public:
  // Opens a particle file (.mpf) or a step index (.mpi, by its extension).
  static std::shared_ptr<const Collection> open(const std::string& path);
  // The same, for a species a manifest describes: part k must have header checksum
  // part_checksums[k] when given (checked when the part is opened); `owner` ("step 3,
  // species 'e'") names the species in errors. dataset/species.hpp checks the rest.
  static std::shared_ptr<const Collection> open_pinned(const std::string& path, const std::string& owner,
                                                       std::vector<uint64_t> part_checksums);
  static std::shared_ptr<const Collection> of(std::shared_ptr<const ParticleFile> file);
  static std::shared_ptr<const Collection> of(std::shared_ptr<const StepIndex> index);

  const std::string& path() const { return path_; }
  uint64_t particle_count() const { return count_; }
  size_t part_count() const { return part_count_.size(); }
  uint64_t part_particle_count(size_t k) const { return part_count_.at(k); }
  uint64_t part_offset(size_t k) const { return part_offset_.at(k); }  // particles in parts before k
  const Box& bounds() const { return bounds_; }
  const std::vector<ColumnSpec>& schema() const { return schema_; }
  // Index of column `name`; UsageError listing the columns when there is none.
  size_t column(const std::string& name) const;
  // The header checksum of the step index, or of the single file.
  uint64_t header_checksum() const;
  // The step index, null for a single file.
  const StepIndex* index() const { return index_.get(); }
  // Part k, opened and checked against the index on first use (thread-safe).
  std::shared_ptr<const ParticleFile> part(size_t k) const;

 private:
  std::string path_;
  uint64_t count_ = 0;
  Box bounds_{};
  std::vector<ColumnSpec> schema_;
  std::vector<uint64_t> part_count_, part_offset_;
  std::shared_ptr<const StepIndex> index_;
  std::vector<uint64_t> part_checksums_;  // expected header checksums of the parts (may be empty)
  std::string owner_;                     // "step S, species P" when opened from a manifest
  mutable std::vector<std::shared_ptr<const ParticleFile>> parts_;
  mutable std::unique_ptr<std::mutex> lock_ = std::make_unique<std::mutex>();
};

}  // namespace motes
