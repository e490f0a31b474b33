// A dataset directory: a JSON manifest listing steps, each holding particle
// files per species. A step becomes visible only when the manifest naming it
// has been atomically replaced, so a crash never exposes a partial step.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "motes/format/step_index.hpp"
#include "motes/format/writer.hpp"
#include "motes/types.hpp"

namespace motes {

struct SpeciesEntry {
  std::string name;
  std::string file;  // relative to the dataset directory: a particle file (.mpf) or a step index (.mpi)
  uint32_t parts = 1;  // particle files behind a step index
  uint64_t count = 0;
  Box bounds{};
  std::vector<ColumnSpec> columns;
};

struct StepEntry {
  int64_t index = 0;
  double time = 0.0;
  nlohmann::json attributes = nlohmann::json::object();
  std::vector<SpeciesEntry> species;
  const SpeciesEntry& find(const std::string& species) const;  // UsageError naming the species present
};

using SpeciesColumns = std::pair<std::string, std::vector<ColumnView>>;

class Dataset {
 public:
  static constexpr const char* kManifest = "manifest.json";

  // Opens an existing dataset: Error when `dir` does not exist, UsageError when it holds
  // no manifest, FormatError when the manifest is invalid.
  static Dataset open(const std::string& dir);
  // Opens `dir` for appending, creating it (and an empty manifest) when absent.
  static Dataset create(const std::string& dir);
  static bool exists(const std::string& dir);

  const std::string& dir() const { return dir_; }
  const std::vector<StepEntry>& steps() const { return steps_; }
  const StepEntry& step(int64_t index) const;  // UsageError listing the steps present
  std::string path_of(const SpeciesEntry& s) const { return dir_ + "/" + s.file; }
  const nlohmann::json& attributes() const { return attributes_; }
  void set_attributes(nlohmann::json a);

  // Writes every species of a new step, then the manifest. Earlier steps are never touched.
  const StepEntry& append_step(int64_t index, double time, const nlohmann::json& attributes,
                               const std::vector<SpeciesColumns>& species, const WriteOptions& options = {},
                               std::vector<WriteSummary>* summaries = nullptr);

  // Lower-level pieces of append_step for writers that produce the files themselves (MPI).
  static std::string species_file_name(int64_t index, const std::string& species);
  static std::string species_index_name(int64_t index, const std::string& species);
  // UsageError unless the step can be appended: a new index, a finite time, an object of
  // attributes, valid and distinct species names.
  void check_new_step(int64_t index, double time, const nlohmann::json& attributes,
                      const std::vector<std::string>& species) const;
  // Creates the directory of an unpublished step (and syncs its parents), first removing
  // what a crashed write of it left there. Returns true.
  bool make_step_directory(int64_t index, bool sync) const;
  void commit_step(StepEntry step, bool sync = true);
  // The manifest entry of a species of step `index` whose rows are in `parts`, already
  // written at the part paths of species_index_name: writes its step index; with no
  // parts, one empty particle file of `schema` instead. Index kinds: quantile where any
  // part has quantile codes.
  SpeciesEntry finish_species(int64_t index, const std::string& name, std::vector<ColumnSpec> schema,
                              const std::vector<PartSummary>& parts, const WriteOptions& options) const;

 private:
  std::string dir_;
  nlohmann::json attributes_ = nlohmann::json::object();
  std::vector<StepEntry> steps_;
  void save(bool sync) const;
};

// Writes one step part by part, for writers that cannot hold a species in memory at
// once (converters streaming a big file): every add_part writes one part file of a
// species; commit() writes each species' step index, then the manifest. Until then the
// step is invisible, and an uncommitted writer leaves only files the manifest ignores.
class PartedStepWriter {
 public:
  PartedStepWriter(Dataset& dataset, int64_t index, double time, nlohmann::json attributes, WriteOptions options,
                   std::vector<std::string> species);
  // Rows of `species`; every part of a species has the same columns (names, dtypes). Empty parts
  // write nothing (a species whose parts are all empty becomes one empty particle file).
  WriteSummary add_part(const std::string& species, const std::vector<ColumnView>& columns);
  const StepEntry& commit();

 private:
  struct SpeciesParts {
    std::string name;
    std::vector<ColumnSpec> schema;  // from the first part
    std::vector<PartSummary> parts;
  };
  Dataset& dataset_;
  StepEntry entry_;
  WriteOptions options_;
  std::vector<SpeciesParts> species_;
  bool committed_ = false;
  SpeciesParts& find(const std::string& name);
};

}  // namespace motes
