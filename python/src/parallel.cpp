// The parallel layer: collective writes and reads over an mpi4py communicator (passed
// as its Fortran handle, comm.py2f(): no mpi4py headers needed) when motes was built
// with MPI, and the aggregation planner on virtual ranks (simulate_aggregation, always).
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstring>

#include "common.hpp"
#include "motes/parallel/background_job.hpp"
#include "motes/core/threads.hpp"
#include "motes/parallel/aggregation.hpp"
#include "motes/parallel/options.hpp"
#ifdef MOTES_HAVE_MPI
#include "motes/parallel/parallel.hpp"
#endif

namespace motes_py {

namespace {

// An AggregationMethod, or its name ("adaptive", "aug"); None: the core's default.
motes::AggregationMethod method_of(nb::handle value) {
  if (value.is_none()) return motes::ParallelWriteOptions{}.method;
  if (nb::isinstance<motes::AggregationMethod>(value)) return nb::cast<motes::AggregationMethod>(value);
  nb::object members = nb::type<motes::AggregationMethod>().attr("__members__");
  if (nb::isinstance<nb::str>(value) && PySequence_Contains(members.ptr(), value.ptr()) == 1)
    return nb::cast<motes::AggregationMethod>(members[value]);
  std::string names;
  for (nb::handle name : members) names += (names.empty() ? "'" : ", '") + nb::cast<std::string>(name) + "'";
  throw motes::UsageError("method must be one of " + names + ", got " + nb::cast<std::string>(nb::repr(value)));
}

#ifdef MOTES_HAVE_MPI
using SpeciesTuples = std::vector<std::pair<std::string, std::vector<ColumnTuple>>>;
#endif

// The particles of virtual ranks: a grid[0] x grid[1] x grid[2] decomposition of the
// bounds of the points, each rank's positions per axis.
std::vector<std::array<std::vector<double>, 3>> virtual_ranks(const motes::Coordinate (&coords)[3], uint64_t n,
                                                              const std::vector<uint32_t>& grid) {
  double lo[3], hi[3];
  for (int a = 0; a < 3; ++a) {
    lo[a] = INFINITY, hi[a] = -INFINITY;
    for (uint64_t i = 0; i < n; ++i) {
      double v = coords[a][i];
      lo[a] = std::min(lo[a], v), hi[a] = std::max(hi[a], v);
    }
  }
  std::vector<std::array<std::vector<double>, 3>> points(uint64_t(grid[0]) * grid[1] * grid[2]);
  for (uint64_t i = 0; i < n; ++i) {
    uint64_t r = 0, mul = 1;
    double p[3];
    for (int a = 0; a < 3; ++a) {
      p[a] = coords[a][i];
      double t = hi[a] > lo[a] ? (p[a] - lo[a]) / (hi[a] - lo[a]) : 0.0;
      r += mul * std::min<uint64_t>(grid[a] - 1, uint64_t(t * grid[a]));
      mul *= grid[a];
    }
    for (int a = 0; a < 3; ++a) points[r][a].push_back(p[a]);
  }
  return points;
}

// Each virtual rank summarised as the MPI writer's ranks summarise theirs.
std::vector<motes::RankSummary> summarize_ranks(std::vector<std::array<std::vector<double>, 3>>& points, uint64_t cap,
                                                uint32_t ranks_per_node) {
  std::vector<motes::RankSummary> summaries(points.size());
  motes::parallel_for(points.size(), 0, [&](uint64_t r) {
    motes::ColumnView v[3];
    for (int a = 0; a < 3; ++a) {
      v[a].spec.name = "p";
      v[a].spec.dtype = motes::DType::f64;
      v[a].data = points[r][a].data();
      v[a].count = points[r][a].size();
    }
    summaries[r] = motes::summarize_rank(v[0], v[1], v[2], cap);
    summaries[r].node = uint32_t(r / ranks_per_node);
  });
  return summaries;
}

nb::dict simulate_aggregation(InputArray x, InputArray y, InputArray z, std::vector<uint32_t> grid, nb::handle method_name,
                              std::optional<uint64_t> bytes_per_particle, std::optional<uint64_t> target_bytes,
                              std::optional<bool> best_axis, std::optional<bool> local, uint32_t ranks_per_node) {
  if (grid.size() != 3 || !grid[0] || !grid[1] || !grid[2]) throw motes::UsageError("grid must be 3 positive integers");
  const bool aug = method_of(method_name) == motes::AggregationMethod::aug;
  motes::AggregationOptions o;  // the core's defaults, but for what is given
  if (bytes_per_particle) o.bytes_per_particle = *bytes_per_particle;
  if (target_bytes) o.target_bytes = *target_bytes;
  if (best_axis) o.best_axis = *best_axis;
  if (local) o.local = *local;
  if (!ranks_per_node) throw motes::UsageError("ranks_per_node must be positive");
  motes::ColumnView axes[3] = {view_of(x, "x"), view_of(y, "y"), view_of(z, "z")};
  for (const motes::ColumnView& a : axes)
    if ((a.spec.dtype != motes::DType::f32 && a.spec.dtype != motes::DType::f64) || a.count != axes[0].count)
      throw motes::UsageError("x, y and z must be float32 or float64 arrays of equal length");
  const motes::Coordinate coords[3] = {motes::Coordinate(axes[0]), motes::Coordinate(axes[1]), motes::Coordinate(axes[2])};
  nb::dict out;
  nb::gil_scoped_release release;
  using Clock = std::chrono::steady_clock;
  auto t0 = Clock::now();
  const uint64_t n = axes[0].count;
  std::vector<std::array<std::vector<double>, 3>> points = virtual_ranks(coords, n, grid);
  const uint64_t cap = o.target_bytes ? motes::cell_cap(o.target_bytes, o.bytes_per_particle) : 1ull << 62;
  // AUG (the baseline) works from counts and boxes alone, as in its reference code.
  std::vector<motes::RankSummary> summaries = summarize_ranks(points, aug ? (1ull << 62) : cap, ranks_per_node);
  auto t1 = Clock::now();
  motes::AggregationPlan plan = aug ? motes::plan_aug(summaries, o) : motes::plan_adaptive(summaries, o);
  auto t2 = Clock::now();
  motes::Balance b = motes::balance(plan, o.bytes_per_particle);
  nb::gil_scoped_acquire gil;
  out["ranks"] = points.size();
  out["atoms"] = plan.atoms.size();
  out["target_bytes"] = plan.target_bytes;
  out["files"] = b.files;
  out["mean_bytes"] = b.mean;
  out["sd_bytes"] = b.sd;
  out["max_bytes"] = b.max;
  out["sd_over_mean"] = b.sd_over_mean();
  out["max_over_mean"] = b.max_over_mean();
  const uint64_t moved = motes::particles_moved(plan), least = motes::least_particles_moved(plan);
  out["moved"] = moved;
  out["moved_fraction"] = n ? double(moved) / double(n) : 0.0;
  out["least_moved_fraction"] = n ? double(least) / double(n) : 0.0;
  out["summarize_seconds"] = std::chrono::duration<double>(t1 - t0).count();
  out["plan_seconds"] = std::chrono::duration<double>(t2 - t1).count();
  return out;
}

#ifdef MOTES_HAVE_MPI
// A collective write's inputs from the tuples: species, whole fields (rank 0), this rank's blocks.
struct ParallelInputs {
  nlohmann::json attrs;
  std::vector<motes::SpeciesColumns> species;
  std::vector<motes::FieldInput> fields;
  std::vector<motes::FieldBlockInput> blocks;
};

ParallelInputs parallel_inputs(nb::handle attributes, const SpeciesTuples& species, const std::vector<FieldTuple>& fields,
                               const std::vector<FieldBlockTuple>& field_blocks) {
  ParallelInputs in;
  in.attrs = attributes_of(attributes, "step attributes");
  for (const auto& [name, cols] : species) in.species.emplace_back(name, views_of(cols));
  for (const FieldTuple& f : fields) in.fields.push_back(field_input_of(f));
  for (const auto& [t, dims, offset] : field_blocks) {
    motes::FieldInput block = field_input_of(t);
    motes::FieldBlockInput b;
    b.spec = block.spec;
    b.count = block.spec.dims;  // the interior given, C order, without ghosts
    b.array_dims = block.spec.dims;
    b.values = block.values;
    for (size_t a = 0; a < 3; ++a) {
      b.spec.dims[a] = a < dims.size() ? dims[a] : 1;
      b.offset[a] = a < offset.size() ? offset[a] : 0;
    }
    in.blocks.push_back(std::move(b));
  }
  return in;
}

motes::ParallelWriteReport write_step_parallel(int comm_f, const std::string& dir, int64_t index, double time,
                                               nb::handle attributes, const SpeciesTuples& species,
                                               std::optional<motes::ParallelWriteOptions> options,
                                               const std::vector<FieldTuple>& fields,
                                               const std::vector<FieldBlockTuple>& field_blocks) {
  ParallelInputs in = parallel_inputs(attributes, species, fields, field_blocks);
  const motes::ParallelWriteOptions o = options.value_or(motes::ParallelWriteOptions{});
  nb::gil_scoped_release release;
  return motes::write_step_parallel(MPI_Comm_f2c(comm_f), dir, index, time, in.attrs, in.species, o, in.fields,
                                    in.blocks);
}

// The same collective write, queued on a background writer (every rank queues the same steps
// in the same order; comm_f a communicator of the writer alone, duplicated by the caller).
std::pair<uint64_t, uint64_t> submit_parallel(motes::BackgroundWriter& w, int comm_f, const std::string& dir,
                                              int64_t index, double time, nb::handle attributes,
                                              const SpeciesTuples& species,
                                              std::optional<motes::ParallelWriteOptions> options,
                                              const std::vector<FieldTuple>& fields,
                                              const std::vector<FieldBlockTuple>& field_blocks, bool copy) {
  ParallelInputs in = parallel_inputs(attributes, species, fields, field_blocks);
  const motes::ParallelWriteOptions o = options.value_or(motes::ParallelWriteOptions{});
  nb::gil_scoped_release release;
  motes::StepJob job;
  job.index = index;
  job.time = time;
  job.attributes = std::move(in.attrs);
  job.species = std::move(in.species);
  job.fields = std::move(in.fields);
  const MPI_Comm comm = MPI_Comm_f2c(comm_f);
  const uint64_t copied = motes::make_collective_job(
      job, std::move(in.blocks), !copy,
      [comm, dir, index, time, o](const nlohmann::json& attrs, const std::vector<motes::SpeciesColumns>& sp,
                                  const std::vector<motes::FieldInput>& fs,
                                  const std::vector<motes::FieldBlockInput>& bs) {
        motes::write_step_parallel(comm, dir, index, time, attrs, sp, o, fs, bs);
      });
  return {w.submit(std::move(job), true), copied};
}

nb::dict read_partition(int comm_f, const std::string& path, std::optional<motes::PartitionRequest> request) {
  const motes::PartitionRequest req = request.value_or(motes::PartitionRequest{});
  motes::LocalParticles lp;
  {
    nb::gil_scoped_release release;
    lp = motes::read_partition(MPI_Comm_f2c(comm_f), path, req);
  }
  nb::dict out;
  for (size_t j = 0; j < lp.schema.size(); ++j) {
    auto [arr, data] = new_array(lp.schema[j].dtype, lp.count);
    if (lp.count) std::memcpy(data, lp.columns[j].data(), lp.columns[j].size());
    std::vector<unsigned char>().swap(lp.columns[j]);
    out[lp.schema[j].name.c_str()] = arr;
  }
  return out;
}
#endif

}  // namespace

void bind_parallel(nb::module_& m) {
  m.def("simulate_aggregation", &simulate_aggregation, "x"_a, "y"_a, "z"_a, "grid"_a, "method"_a = nb::none(),
        "bytes_per_particle"_a = nb::none(), "target_bytes"_a = nb::none(), "best_axis"_a = nb::none(),
        "local"_a = nb::none(), "ranks_per_node"_a = 1,
        "Builds an aggregation plan for virtual ranks on a grid over the particles' bounds (ranks_per_node "
        "consecutive ranks share a node); returns its file-size balance and the particles that cross the network "
        "(moved). method: an AggregationMethod or its name; what is None: the core's defaults.");
#ifdef MOTES_HAVE_MPI
  m.attr("has_mpi") = true;
  m.def("submit_parallel", &submit_parallel, "writer"_a, "comm"_a, "dir"_a, "index"_a, "time"_a, "attributes"_a,
        "species"_a, "options"_a = nb::none(), "fields"_a = std::vector<FieldTuple>(),
        "field_blocks"_a = std::vector<FieldBlockTuple>(), "copy"_a = true,
        "write_step_parallel's collective write queued on a BackgroundWriter (copying the arrays first unless "
        "copy is False): (ticket, bytes copied). comm: a communicator of that writer alone.");
  m.def("write_step_parallel", &write_step_parallel, "comm"_a, "dir"_a, "index"_a, "time"_a, "attributes"_a,
        "species"_a, "options"_a = nb::none(), "fields"_a = std::vector<FieldTuple>(),
        "field_blocks"_a = std::vector<FieldBlockTuple>(),
        "Collective write of a step (comm: a Fortran communicator handle); fields (FieldTuples, whole grids) are "
        "given on rank 0 only; field_blocks ((FieldTuple of this rank's block without ghosts, global dims (x, y, "
        "z), offset (x, y, z)), the same fields on every rank) are written by aggregators in parts. Returns the "
        "ParallelWriteReport.");
  m.def("read_partition", &read_partition, "comm"_a, "path"_a, "request"_a = nb::none(),
        "Collective read of a particle file or step index: this rank's columns (a dict of arrays).");
#else
  m.attr("has_mpi") = false;
#endif
}

}  // namespace motes_py
