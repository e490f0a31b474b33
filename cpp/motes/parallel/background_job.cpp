#include "motes/parallel/background_job.hpp"

#include <memory>

namespace motes {

uint64_t make_collective_job(StepJob& job, std::vector<FieldBlockInput> blocks, bool borrow, CollectiveWrite write) {
  uint64_t copied = borrow ? 0 : job.copy_arrays();
  if (!borrow)
    for (FieldBlockInput& b : blocks) {
      const uint64_t bytes = b.array_dims[0] * b.array_dims[1] * b.array_dims[2] * dtype_size(b.spec.dtype);
      for (const void*& v : b.values) v = job.keep_copy(v, bytes), copied += bytes;
    }
  // The job's views (copied or borrowed) are what the write reads, after the job has moved
  // into the writer's queue: shared, not pointing into the job object.
  auto species = std::make_shared<std::vector<SpeciesColumns>>(job.species);
  auto fields = std::make_shared<std::vector<FieldInput>>(job.fields);
  auto shared_blocks = std::make_shared<std::vector<FieldBlockInput>>(std::move(blocks));
  job.custom = [write = std::move(write), attributes = job.attributes, species, fields,
                shared_blocks](StepOutcome&) { write(attributes, *species, *fields, *shared_blocks); };
  return copied;
}

}  // namespace motes
