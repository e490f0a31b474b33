// The C API's parallel writers: the serial writer's state, written collectively.
#include "motes/capi/motes_mpi.h"

#include <cstring>

#include "motes/capi/writer_state.hpp"
#include "motes/parallel/comm.hpp"
#include "motes/parallel/parallel.hpp"

extern "C" {

motes_status motes_writer_open_parallel(const char* path, MPI_Comm comm, motes_writer** writer) {
  return guarded([&] {
    if (!path || !writer) return fail(MOTES_ERROR_USAGE, "motes_writer_open_parallel: path and writer must not be NULL");
    *writer = nullptr;
    // A private duplicate: motes' messages never mix with the caller's on `comm`.
    std::shared_ptr<MPI_Comm> comm_holder = motes::mpi::duplicate(comm, "motes_writer_open_parallel");
    MPI_Comm own = *comm_holder;
    std::string dir = path;
    motes::open_dataset_parallel(own, dir);
    auto w = std::make_unique<motes_writer>();
    w->write_collective = [dir, comm_holder](const motes_writer::Step& s, const motes::ParallelWriteOptions& o) {
      motes::write_step_parallel(*comm_holder, dir, s.index, s.time, s.attributes, s.species, o, s.fields,
                                 s.field_blocks);
    };
    w->check_background = [] {
      int level = 0;
      MPI_Query_thread(&level);
      if (level < MPI_THREAD_MULTIPLE)
        throw motes::UsageError("background writes of a parallel writer run MPI on a thread of their own: initialise "
                                "MPI with MPI_Init_thread(..., MPI_THREAD_MULTIPLE, ...)");
    };
    *writer = w.release();
    return MOTES_OK;
  });
}

motes_status motes_writer_open_parallel_f(const char* path, MPI_Fint comm, motes_writer** writer) {
  return motes_writer_open_parallel(path, MPI_Comm_f2c(comm), writer);
}

motes_status motes_writer_set_aggregation(motes_writer* w, uint64_t target_bytes, const char* method, int best_axis) {
  return guarded([&] {
    if (!w || !method) return fail(MOTES_ERROR_USAGE, "motes_writer_set_aggregation: NULL argument");
    if (!w->write_collective) return fail(MOTES_ERROR_USAGE, "motes_writer_set_aggregation: the writer is not parallel");
    if (std::strcmp(method, "adaptive") != 0 && std::strcmp(method, "aug") != 0)
      return fail(MOTES_ERROR_USAGE, std::string("aggregation method must be 'adaptive' or 'aug', got '") + method + "'");
    w->options.aggregation.target_bytes = target_bytes;
    w->options.aggregation.best_axis = best_axis != 0;
    w->options.method = std::strcmp(method, "aug") == 0 ? motes::AggregationMethod::aug : motes::AggregationMethod::adaptive;
    return MOTES_OK;
  });
}

motes_status motes_writer_set_field_block(motes_writer* w, const char* name, motes_dtype dtype, int ndim,
                                          const uint64_t* global_dims, const uint64_t* offset, const uint64_t* count,
                                          const uint64_t* array_dims, const uint64_t* ghost_lo, int components,
                                          const void* const* data, const char* const* component_names,
                                          const double* origin, const double* spacing, int cell_centred,
                                          const char* unit) {
  return guarded([&] {
    if (!w || !name || !global_dims || !offset || !count || !data)
      return fail(MOTES_ERROR_USAGE, "motes_writer_set_field_block: NULL argument");
    if (!w->write_collective) return fail(MOTES_ERROR_USAGE, "motes_writer_set_field_block: the writer is not parallel");
    if (!w->in_step) return fail(MOTES_ERROR_USAGE, "no step begun: call motes_writer_begin_step first");
    if ((array_dims == nullptr) != (ghost_lo == nullptr))
      return fail(MOTES_ERROR_USAGE, "field '" + std::string(name) + "': give array_dims and ghost_lo both, or neither");
    for (const motes::FieldBlockInput& b : w->field_blocks)
      if (b.spec.name == name) return fail(MOTES_ERROR_USAGE, "field '" + std::string(name) + "' is set twice");
    for (const motes::FieldInput& f : w->fields)
      if (f.spec.name == name) return fail(MOTES_ERROR_USAGE, "field '" + std::string(name) + "' is set twice");
    motes::FieldBlockInput b;
    b.spec = c_field_spec(name, dtype, ndim, global_dims, components, component_names, origin, spacing, cell_centred, unit);
    b.count = b.array_dims = {1, 1, 1};  // axes past ndim: one sample
    uint64_t first = 0;  // the interior's first sample in the array
    for (int a = ndim - 1; a >= 0; --a) {
      const size_t k = size_t(a);
      b.offset[k] = offset[a];
      b.count[k] = count[a];
      b.array_dims[k] = array_dims ? array_dims[a] : count[a];
      const uint64_t lo = ghost_lo ? ghost_lo[a] : 0;
      if (lo > b.array_dims[k] || b.count[k] > b.array_dims[k] - lo)
        return fail(MOTES_ERROR_USAGE, "field '" + std::string(name) + "': the interior (ghost_lo " + std::to_string(lo) +
                                           ", count " + std::to_string(b.count[k]) + ") does not fit an array of " +
                                           std::to_string(b.array_dims[k]) + " samples along axis " + std::to_string(a));
      first = first * b.array_dims[k] + lo;
    }
    const bool empty = b.count[0] * b.count[1] * b.count[2] == 0;
    const size_t size = motes::dtype_size(b.spec.dtype);
    for (int c = 0; c < components; ++c) {
      if (!data[c] && !empty)
        return fail(MOTES_ERROR_USAGE, "field '" + std::string(name) + "': component " + std::to_string(c) + " is NULL");
      b.values.push_back(data[c] ? static_cast<const unsigned char*>(data[c]) + first * size : nullptr);
    }
    w->field_blocks.push_back(std::move(b));
    return MOTES_OK;
  });
}

}  // extern "C"
