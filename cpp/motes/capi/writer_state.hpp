// What a C API writer holds between calls, and the one error-to-status translation
// (through the error table, core/errors.hpp), shared by the serial (motes.cpp) and MPI
// (motes_mpi.cpp) entry points.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "motes/capi/motes.h"
#include "motes/core/errors.hpp"
#include "motes/dataset/background.hpp"
#include "motes/dataset/dataset.hpp"
#include "motes/parallel/options.hpp"

// Every kind of the error table is a motes_status of motes.h, with the table's code.
#define MOTES_CAPI_CHECK_STATUS(kind, cls, c_status, code, ...)             \
  static_assert(c_status == code && int(motes::ErrorKind::kind) == c_status, \
                "motes.h's " #c_status " differs from the error table (core/errors.hpp)");
MOTES_ERROR_KINDS(MOTES_CAPI_CHECK_STATUS)
#undef MOTES_CAPI_CHECK_STATUS

struct motes_writer {
  std::optional<motes::Dataset> dataset;  // serial writers; a parallel write opens it on rank 0 only
  // Every writer's file options (.write, motes_writer_set_options); the aggregation of
  // parallel writers (motes_writer_set_aggregation). The core's defaults until set.
  motes::ParallelWriteOptions options;
  bool in_step = false;
  int64_t step = 0;
  double time = 0;
  nlohmann::json attributes = nlohmann::json::object();
  std::vector<motes::SpeciesColumns> species;
  std::vector<motes::FieldInput> fields;  // of the step being built
  std::vector<motes::FieldBlockInput> field_blocks;  // this rank's blocks of the step's fields (parallel)
  // The schema declared with motes_writer_define_column: (species, column), in order.
  std::vector<std::pair<std::string, motes::ColumnSpec>> declared;
  // Set by motes_writer_open_parallel: writes the step collectively instead.
  // The step's inputs a collective write takes (the writer's own, or a background job's copies).
  struct Step {
    int64_t index;
    double time;
    const nlohmann::json& attributes;
    const std::vector<motes::SpeciesColumns>& species;
    const std::vector<motes::FieldInput>& fields;
    const std::vector<motes::FieldBlockInput>& field_blocks;
  };
  std::function<void(const Step&, const motes::ParallelWriteOptions&)> write_collective;
  // Set by motes_writer_open_parallel: UsageError unless MPI allows background collective
  // writes (MPI_THREAD_MULTIPLE).
  std::function<void()> check_background;
  // Set by motes_writer_set_background: the steps are queued here (destroyed before the
  // dataset it writes, which is declared first).
  std::unique_ptr<motes::BackgroundWriter> background;
  bool borrow = false;
};

inline thread_local std::string last_error;

// The spec of a field from the C API's arguments (motes_writer_set_field, _set_field_block):
// UsageError naming the field for what the core's check refuses.
motes::fields::FieldSpec c_field_spec(const char* name, motes_dtype dtype, int ndim, const uint64_t* dims, int components,
                                      const char* const* component_names, const double* origin, const double* spacing,
                                      int cell_centred, const char* unit);

inline motes_status fail(motes_status s, const std::string& message) {
  last_error = message;
  return s;
}

// The status and message of a failure, by the error table.
inline motes_status fail(const motes::ErrorReport& r) {
  const std::string prefix = r.kind == motes::ErrorKind::internal ? "internal error: " : "";
  return fail(motes_status(int(r.kind)), prefix + r.message);
}

// Runs f, turning every exception into a status and message.
template <class F>
motes_status guarded(F&& f) {
  try {
    last_error.clear();
    return f();
  } catch (...) {
    return fail(motes::describe_exception(std::current_exception()));
  }
}
