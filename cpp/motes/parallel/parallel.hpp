// Parallel write and read with MPI (docs/format.md section 12). Every function here is
// collective over the communicator it is given and raises the same error on every
// rank when any rank fails, so callers never hang on a peer that gave up.
//
// Write: ranks summarise their particles -> rank 0 plans the aggregation (adaptive
// k-d tree or AUG; a file's aggregator is the rank holding most of it, within caps)
// -> non-blocking point-to-point transfers of columns to the aggregators, which
// meanwhile write the parts of their own particles -> each aggregator writes one part
// file per leaf with the serial writer (codecs chosen once) -> rank 0 writes the step
// index and then the manifest entry (the step appears atomically).
// Read: any number of ranks; part files are assigned to read aggregators spread
// over the ranks (or shared evenly when there are fewer ranks than files); each
// rank receives the particles in its box, or an even share.
//
// The public header of the parallel layer. Implemented in write.cpp and read.cpp, over
// comm.hpp (communicator helpers), agree.hpp (collective agreement on failures) and
// wire.hpp (the messages between ranks, encoded without MPI); its options and reports are
// in options.hpp (without MPI: the Python extension binds them in every build).
#pragma once

#include <mpi.h>

#include <optional>
#include <string>
#include <vector>

#include "motes/dataset/dataset.hpp"
#include "motes/parallel/aggregation.hpp"
#include "motes/parallel/options.hpp"
#include "motes/query/engine.hpp"
#include "motes/query/selection.hpp"

namespace motes {

// Collective: rank 0 opens the dataset directory `dir`, creating it when absent; every
// rank raises the same error when that fails (e.g. a non-empty directory without a manifest).
void open_dataset_parallel(MPI_Comm comm, const std::string& dir);

// Writes step `index` of the dataset directory `dir` (created when absent) from every
// rank's local columns. Every rank passes the same step index, time, attributes and
// species with the same column names and dtypes (any lengths, zero included); a rank
// that differs makes every rank raise UsageError naming the ranks and columns. Column
// units are taken from rank 0.
// `fields` (whole grids) are given on rank 0 only, which writes them with the step;
// `field_blocks` on every rank (each rank's block of each grid: the same fields in the same
// order everywhere), written by aggregators in parts (field_write.hpp).
ParallelWriteReport write_step_parallel(MPI_Comm comm, const std::string& dir, int64_t index, double time,
                                        const nlohmann::json& attributes, const std::vector<SpeciesColumns>& species,
                                        const ParallelWriteOptions& options = {},
                                        const std::vector<FieldInput>& fields = {},
                                        const std::vector<FieldBlockInput>& field_blocks = {});

struct LocalParticles {
  std::vector<ColumnSpec> schema;                   // of the returned columns
  std::vector<std::vector<unsigned char>> columns;  // raw little-endian values, count each
  uint64_t count = 0;
};

// Reads the particles of `path` (a particle file or a step index) on every rank of
// `comm`, whatever the number of ranks that wrote it.
LocalParticles read_partition(MPI_Comm comm, const std::string& path, const PartitionRequest& request);

}  // namespace motes
