// The parallel layer's options and reports (parallel.hpp), in a header without MPI: the
// Python extension binds them, and the C API's writers hold them, in builds without MPI too.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "motes/core/types.hpp"
#include "motes/dataset/dataset.hpp"
#include "motes/parallel/aggregation.hpp"
#include "motes/particles/writer.hpp"

namespace motes {

enum class AggregationMethod { adaptive, aug };

// One rank's block of a global grid field for a parallel write (as H5Block's views): `spec`
// is the global field's (the same on every rank: name, dtype, dims, geometry, components);
// the block's interior is samples [offset, offset + count) along (x, y, z); values[c] points
// at component c's first interior sample in an array of `array_dims` (x, y, z) samples, which
// may be larger than `count` (ghost zones, dropped on write): interior sample (i, j, k) is
// element i + array_dims[0] * (j + array_dims[1] * k) from there. A rank without a block
// gives a zero count. The ranks' blocks must cover the grid exactly once.
struct FieldBlockInput {
  fields::FieldSpec spec;
  fields::Dims offset{0, 0, 0}, count{0, 0, 0}, array_dims{0, 0, 0};
  std::vector<const void*> values;
};

struct ParallelWriteOptions {
  WriteOptions write;  // layout and sync of every part file; layout.threads 0 = cores / ranks on the node
  // target_bytes (0 = automatic), overfull, best_axis; bytes_per_particle is taken from the schema.
  AggregationOptions aggregation;
  AggregationMethod method = AggregationMethod::adaptive;
  double lock_timeout = default_lock_timeout();  // seconds rank 0 waits for another writer's lock
};

// What one collective write did; the same on every rank.
struct ParallelWriteReport {
  struct Species {
    std::string name;
    uint64_t count = 0;
    uint32_t parts = 0;
    uint64_t target_bytes = 0;
    Balance balance;  // of the part files' data bytes
    uint64_t moved = 0;  // particles sent to an aggregator other than their own rank
  };
  std::vector<Species> species;
  struct Field {
    std::string name;
    uint32_t parts = 0;      // part files (1: the field's one file)
    uint64_t file_bytes = 0;
  };
  std::vector<Field> fields;  // written from every rank's block
  uint64_t file_bytes = 0;  // all part files
  // Slowest rank per phase (seconds). exchange: grouping the particles by part and posting
  // the messages; write: writing the parts, which overlaps with the messages' transfer.
  double plan_seconds = 0, exchange_seconds = 0, write_seconds = 0, commit_seconds = 0, total_seconds = 0;
};

struct PartitionRequest {
  std::optional<Box> box;            // this rank's region (inclusive); none: an even share (all ranks alike)
  std::string where;                 // optional filter
  double quality = 1.0;              // level of detail in [0, 1]: a preview spread over the ranks
  std::optional<double> fraction;    // or a share of the particles (QuerySpec::fraction)
  std::vector<std::string> columns;  // empty: all
  unsigned threads = 0;              // 0 = cores / ranks on the node
};

}  // namespace motes
