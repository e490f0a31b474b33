// The C API's parallel writers: the serial writer's state, written collectively.
#include "motes/capi/motes_mpi.h"

#include <cstring>

#include "motes/capi/writer_state.hpp"
#include "motes/parallel/comm.hpp"
#include "motes/parallel/mpi_io.hpp"

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
    w->write_collective = [dir, comm_holder](motes_writer& self) {
      motes::write_step_parallel(*comm_holder, dir, self.step, self.time, self.attributes, self.species, self.options,
                                 self.fields);
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

}  // extern "C"
