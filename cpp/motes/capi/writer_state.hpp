// What a C API writer holds between calls, and the one error-to-status translation,
// shared by the serial (motes.cpp) and MPI (motes_mpi.cpp) entry points.
#pragma once

#include <filesystem>
#include <functional>
#include <new>
#include <optional>
#include <string>
#include <vector>

#include "motes/capi/motes.h"
#include "motes/dataset/dataset.hpp"

struct motes_writer {
  std::optional<motes::Dataset> dataset;  // serial writers; a parallel write opens it on rank 0 only
  motes::WriteOptions options;
  bool in_step = false;
  int64_t step = 0;
  double time = 0;
  nlohmann::json attributes = nlohmann::json::object();
  std::vector<motes::SpeciesColumns> species;
  // The schema declared with motes_writer_define_column: (species, column), in order.
  std::vector<std::pair<std::string, motes::ColumnSpec>> declared;
  // Set by motes_writer_open_parallel: writes the step collectively instead.
  std::function<void(motes_writer&)> write_collective;
  // Aggregation settings of parallel writers (motes_writer_set_aggregation).
  uint64_t target_bytes = 0;
  int method_aug = 0;
  int best_axis = 0;
};

inline thread_local std::string last_error;

inline motes_status fail(motes_status s, const std::string& message) {
  last_error = message;
  return s;
}

// Runs f, turning every exception into a status and message.
template <class F>
motes_status guarded(F&& f) {
  try {
    last_error.clear();
    return f();
  } catch (const motes::UsageError& e) {
    return fail(MOTES_ERROR_USAGE, e.what());
  } catch (const motes::FormatError& e) {
    return fail(MOTES_ERROR_FORMAT, e.what());
  } catch (const motes::Error& e) {
    return fail(MOTES_ERROR_IO, e.what());
  } catch (const std::filesystem::filesystem_error& e) {
    return fail(MOTES_ERROR_IO, e.what());
  } catch (const std::bad_alloc&) {
    return fail(MOTES_ERROR_MEMORY, "out of memory");
  } catch (const std::exception& e) {
    return fail(MOTES_ERROR_INTERNAL, std::string("internal error: ") + e.what());
  } catch (...) {
    return fail(MOTES_ERROR_INTERNAL, "internal error");
  }
}
