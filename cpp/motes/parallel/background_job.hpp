// A collective write as a background job (dataset/background.hpp), without MPI: the step's
// arrays and this rank's field blocks copied into the job (unless borrowed), and the job set
// to call `write` with them on the writer's thread. The Python extension and the C API's
// parallel writers both queue their collective steps so; each passes the MPI call itself.
#pragma once

#include <functional>
#include <vector>

#include "motes/dataset/background.hpp"
#include "motes/parallel/options.hpp"

namespace motes {

// What a queued collective write is given: the job's views (its copies, or the caller's
// arrays when borrowed) and the blocks'.
using CollectiveWrite = std::function<void(const nlohmann::json& attributes, const std::vector<SpeciesColumns>& species,
                                           const std::vector<FieldInput>& fields,
                                           const std::vector<FieldBlockInput>& blocks)>;

// Fills `job` (whose index, time, attributes, species and fields are set) for a collective
// write of `blocks` too: copies the arrays unless `borrow`, and sets job.custom. Returns the
// bytes copied.
uint64_t make_collective_job(StepJob& job, std::vector<FieldBlockInput> blocks, bool borrow, CollectiveWrite write);

}  // namespace motes
