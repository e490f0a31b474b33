// A dataset directory: a JSON manifest listing steps, each holding particle
// files per species. A step becomes visible only when the manifest naming it
// has been atomically replaced, so a crash never exposes a partial step.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "motes/format/writer.hpp"
#include "motes/types.hpp"

namespace motes {

struct SpeciesEntry {
  std::string name;
  std::string file;  // relative to the dataset directory
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
  void commit_step(StepEntry step, bool sync = true);

 private:
  std::string dir_;
  nlohmann::json attributes_ = nlohmann::json::object();
  std::vector<StepEntry> steps_;
  void save(bool sync) const;
};

}  // namespace motes
