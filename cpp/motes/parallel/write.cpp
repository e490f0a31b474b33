// The collective write of a step (parallel.hpp), in phases: the ranks agree on the step and
// the schema; rank 0 opens the step (the dataset's lock held until the manifest update);
// each species is written in parts (species_write.hpp) and rank 0 writes its step index; the
// fields, whole (rank 0) or from every rank's block (field_write.hpp); rank 0 publishes the
// step in the manifest. Every stage's failures are agreed on (agree.hpp).
#include "motes/parallel/parallel.hpp"

#include <algorithm>
#include <chrono>

#include "motes/io/storage.hpp"
#include "motes/parallel/agree.hpp"
#include "motes/parallel/comm.hpp"
#include "motes/parallel/field_write.hpp"
#include "motes/parallel/species_write.hpp"
#include "motes/parallel/wire.hpp"


namespace motes {

using namespace mpi;

namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// Collective: UsageError on every rank unless all ranks pass the same species and columns.
void check_same_schema(const Comm& c, const std::vector<SpeciesColumns>& species) {
  wire::Schema mine;
  for (const auto& [name, cols] : species) {
    mine.push_back({name, {}});
    for (const ColumnView& v : cols) mine.back().columns.push_back({v.spec.name, v.spec.dtype});
  }
  check_ranks_agree(c, wire::encode(mine), "the schema of the step", [](const std::string& ref, const std::string& other) {
    return ": " + wire::schema_difference(wire::decode_schema(ref), wire::decode_schema(other));
  });
}

// Collective: UsageError on every rank unless all ranks write the same step index,
// time and attributes (a rank one step behind would otherwise write into another step).
void check_same_step(const Comm& c, int64_t index, double time, const nlohmann::json& attributes) {
  check_ranks_agree(c, wire::encode(wire::Step{index, time, attributes.dump()}), "the step being written",
                    [](const std::string& ref, const std::string& other) {
                      const int64_t a = wire::decode_step(ref).index, b = wire::decode_step(other).index;
                      return a != b ? " writes step " + std::to_string(b) + " (rank 0: step " + std::to_string(a) + ")"
                                    : std::string(" writes a different time or attributes");
                    });
}

// Local checks first, then agreement on the step and the schema.
void check_step(const Comm& c, int64_t index, double time, const nlohmann::json& attributes,
                const std::vector<SpeciesColumns>& species, const ParallelWriteOptions& options) {
  auto f = attempt([&] {
    for (const auto& [name, cols] : species) validate_columns(cols);
    check_layout_options(options.write.layout);
  });
  agree(c, f, "checking the columns of step " + std::to_string(index));
  check_same_step(c, index, time, attributes);
  check_same_schema(c, species);
}

// Rank 0's hold on the dataset while a step is written (empty on the other ranks): the
// dataset, and the writing, whose lock is held until the manifest update (one writer at a time).
struct OpenStep {
  std::optional<Dataset> dataset;
  std::optional<Dataset::Writing> writing;
};

// Rank 0 opens the dataset (created when absent), checks the new step against the manifest
// (before and after taking the lock) and makes the step's directory.
void open_step(const Comm& c, OpenStep& step, const std::string& dir, int64_t index, double time,
               const nlohmann::json& attributes, const std::vector<SpeciesColumns>& species,
               const std::vector<FieldInput>& fields, const std::vector<FieldBlockInput>& field_blocks,
               const ParallelWriteOptions& options) {
  auto f = attempt([&] {
    if (c.rank != 0) return;
    step.dataset = Dataset::create(dir, options.lock_timeout);
    std::vector<std::string> names, field_names;
    for (const auto& sp : species) names.push_back(sp.first);
    for (const FieldInput& fi : fields) {
      fi.spec.check();
      field_names.push_back(fi.spec.name);
    }
    for (const FieldBlockInput& fb : field_blocks) field_names.push_back(fb.spec.name);
    step.dataset->check_new_step(index, time, attributes, names, field_names);
    step.writing.emplace(step.dataset->begin_writing("write step " + std::to_string(index) + " of '" + dir + "'"));
    step.dataset->check_new_step(index, time, attributes, names, field_names);  // against the manifest on disk
    step.dataset->make_step_directory(*step.writing, index, options.write.sync);
  });
  agree(c, f, "opening dataset '" + dir + "' for step " + std::to_string(index));
}

// The species with the index kinds of the series (rank 0 knows the manifest), the same on
// every rank, so every part of this step gets them (Dataset::apply_series_index_kinds).
std::vector<SpeciesColumns> with_series_index_kinds(const Comm& c, const OpenStep& step, int64_t index,
                                                    const std::vector<SpeciesColumns>& species) {
  std::vector<SpeciesColumns> series_species = species;
  std::vector<uint8_t> kinds;
  if (c.rank == 0)
    for (auto& [name, cols] : series_species) {
      step.dataset->apply_series_index_kinds(index, name, cols);
      for (const ColumnView& v : cols) kinds.push_back(uint8_t(v.spec.index));
    }
  kinds.resize([&] {
    size_t n = 0;
    for (const auto& sp : species) n += sp.second.size();
    return n;
  }());
  broadcast(c, kinds.data(), kinds.size());
  size_t k = 0;
  for (auto& [name, cols] : series_species)
    for (ColumnView& v : cols) v.spec.index = IndexKind(kinds[k++]);
  return series_species;
}

// One species of the step: its parts, then (rank 0) its step index and manifest entry, added
// to `entry`. Returns its line of the report, the same on every rank.
ParallelWriteReport::Species write_species_of_step(const Comm& c, OpenStep& step, const std::string& dir, int64_t index,
                                                   const std::string& name, const std::vector<ColumnView>& cols,
                                                   const ParallelWriteOptions& options, StepEntry& entry,
                                                   ParallelWriteReport& report) {
  SpeciesPlan plan;
  std::vector<PartSummary> parts = write_species(c, dir, index, name, cols, options, plan, report);
  ParallelWriteReport::Species rs{name, plan.total, plan.parts, plan.target_bytes, plan.balance, plan.moved};
  auto t3 = Clock::now();
  auto f = attempt([&] {
    if (c.rank != 0) return;
    std::vector<ColumnSpec> schema;
    for (const ColumnView& v : cols) schema.push_back(ColumnSpec{v.spec.name, v.spec.dtype, IndexKind::none, v.spec.unit, v.spec.error_bound});
    SpeciesEntry e = step.dataset->finish_species(*step.writing, index, name, std::move(schema), parts, options.write);
    if (parts.empty()) report.file_bytes += file_size(step.dataset->path_of(e));
    for (const PartSummary& p : parts) report.file_bytes += p.file_bytes;
    entry.species.push_back(std::move(e));
  });
  agree(c, f, "writing the step index of species '" + name + "'");
  report.commit_seconds = std::max(report.commit_seconds, seconds_since(t3));
  broadcast(c, &rs.parts, 1);
  broadcast(c, &rs.balance.files, 1);
  broadcast(c, &rs.moved, 1);
  double b[3] = {rs.balance.mean, rs.balance.sd, rs.balance.max};
  broadcast(c, b, 3);
  rs.balance.mean = b[0], rs.balance.sd = b[1], rs.balance.max = b[2];
  return rs;
}

// Each phase's seconds of the slowest rank, on every rank.
void take_slowest(const Comm& c, ParallelWriteReport& report) {
  double local[5] = {report.plan_seconds, report.exchange_seconds, report.write_seconds, report.commit_seconds,
                     report.total_seconds};
  double slowest[5];
  allreduce(c, local, slowest, 5, MPI_MAX);
  report.plan_seconds = slowest[0], report.exchange_seconds = slowest[1], report.write_seconds = slowest[2];
  report.commit_seconds = slowest[3], report.total_seconds = slowest[4];
}

}  // namespace

void open_dataset_parallel(MPI_Comm comm, const std::string& dir) {
  Comm c(comm);
  auto f = attempt([&] {
    if (c.rank == 0) Dataset::create(dir, default_lock_timeout());
  });
  agree(c, f, "opening dataset '" + dir + "'");
}

ParallelWriteReport write_step_parallel(MPI_Comm comm, const std::string& dir, int64_t index, double time,
                                        const nlohmann::json& attributes, const std::vector<SpeciesColumns>& species,
                                        const ParallelWriteOptions& options, const std::vector<FieldInput>& fields,
                                        const std::vector<FieldBlockInput>& field_blocks) {
  Comm c(comm);
  auto t0 = Clock::now();
  ParallelWriteReport report;
  check_step(c, index, time, attributes, species, options);
  OpenStep step;
  open_step(c, step, dir, index, time, attributes, species, fields, field_blocks, options);
  // From here on a failure leaves the step invisible; rank 0 removes what it created.
  auto cleanup = [&] {
    if (c.rank == 0 && step.writing) step.dataset->remove_step_directory(*step.writing, index);
  };
  const std::vector<SpeciesColumns> series_species = with_series_index_kinds(c, step, index, species);
  try {
    StepEntry entry;
    entry.index = index;
    entry.time = time;
    entry.attributes = attributes;
    for (const auto& [name, cols] : series_species) {
      const ParallelWriteReport::Species rs = write_species_of_step(c, step, dir, index, name, cols, options, entry, report);
      report.species.push_back(rs);
    }
    auto f = attempt([&] {
      if (c.rank != 0) return;
      for (const FieldInput& fi : fields) entry.fields.push_back(step.dataset->write_field(*step.writing, index, fi, options.write));
    });
    agree(c, f, "writing the fields of step " + std::to_string(index));
    for (FieldEntry& e : write_field_blocks(c, dir, index, field_blocks, options, report)) entry.fields.push_back(std::move(e));
    auto t4 = Clock::now();
    f = attempt([&] {
      if (c.rank == 0) step.dataset->commit_step(*step.writing, std::move(entry), options.write.sync);
    });
    agree(c, f, "publishing step " + std::to_string(index) + " in the manifest");
    report.commit_seconds = std::max(report.commit_seconds, seconds_since(t4));
  } catch (...) {
    cleanup();
    throw;
  }
  broadcast(c, &report.file_bytes, 1);
  report.total_seconds = seconds_since(t0);
  take_slowest(c, report);
  return report;
}

}  // namespace motes
