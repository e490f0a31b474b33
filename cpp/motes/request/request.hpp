// A read request: one species of one step of a dataset, the columns asked for, and what is
// read (where, box, quality or fraction) and how (threads, cancellation, deadline) as a
// QuerySpec, resolved against the dataset's manifest and checked once, here, at the boundary
// between the dataset and query layers (as Arrow's ScannerBuilder checks a scan's projection
// and filter in C++ and pyarrow only forwards them). The Python binding, and so every Python
// reader (Dataset's queries and analyses, plans, the part queries of MPI and Dask, Arrow,
// DuckDB, the server, yt, ParaView), builds its reads with resolve_read.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "motes/dataset/dataset.hpp"
#include "motes/query/engine.hpp"

namespace motes {

// What a reader asks, unresolved: what is absent takes its default.
struct ReadArgs {
  std::optional<int64_t> step;                      // default: the last step
  std::optional<std::string> species;               // default: the step's only species
  std::optional<std::vector<std::string>> columns;  // default: every column, in schema order
  // Numeric expressions the read will compute (histogram axes, weights, a column's stats):
  // the grid fields they sample are bound to the spec too. Those that sample no field are
  // checked by the analysis that computes them (a derived quantity's name is one, and only
  // the particle files know those).
  std::vector<std::string> values;
};

// The sampler of grid field `name` of step `step` (the resolved one), `component` empty for a
// scalar field (fields are opened by the caller, which keeps them: the Python Dataset caches
// its files).
using SamplerOf = std::function<std::shared_ptr<const PointSampler>(int64_t step, const std::string& name,
                                                                    const std::string& component)>;

struct ReadRequest {
  int64_t step = 0;
  std::string species;
  std::vector<std::string> known;    // the species' columns, in schema order
  // The columns asked for, each a column of `known` or a field('name'[, 'component']) alone,
  // which is sampled at the particles' positions (a field of the step).
  std::vector<std::string> columns;
  QuerySpec spec;                    // checked, its fields bound
};

// The step of a dataset a read means: `step`, else the last. UsageError when the dataset has
// no steps or not this one (listing the steps).
const StepEntry& resolve_step(const Dataset& dataset, std::optional<int64_t> step);
// The species of a step a read means: `species`, else its only one. UsageError when the step
// holds only fields, several species and none was named, or not this one (listing them).
const SpeciesEntry& resolve_species(const StepEntry& step, const std::optional<std::string>& species);

// The request of `args` over `dataset`, with `spec` (check_query_spec). Checks every column
// (UsageError naming an unknown one and listing the species' columns) and every field the
// spec's `where`, the `values` and the columns sample (naming a field the step does not
// have), and binds the fields `where` and the values sample to the spec through `sampler_of`.
ReadRequest resolve_read(const Dataset& dataset, const ReadArgs& args, QuerySpec spec, const SamplerOf& sampler_of);

// (name, component) when `text` is no column of `known` but a field('name'[, 'component'])
// alone, read by the expression parser (component empty for a scalar field).
std::optional<std::pair<std::string, std::string>> column_field(const std::string& text, const std::vector<std::string>& known);

}  // namespace motes
