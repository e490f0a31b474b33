// A dataset directory: a JSON manifest listing steps, each holding particle files per
// species. A step becomes visible only when the manifest naming it has been atomically
// replaced, so a crash never exposes a partial step.
//
// Concurrency: one writer at a time per dataset, enforced by an exclusive lock on
// <dataset>/.lock taken for each write (a step, a parted step, new attributes); a second
// writer waits up to its lock timeout, then gets a UsageError naming the holder. Every
// manifest update re-reads the manifest from disk under the lock, never a copy cached when
// a handle was opened. Readers take no lock and are never blocked.
#pragma once

#include <nlohmann/json.hpp>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "motes/fields/file.hpp"
#include "motes/io/files.hpp"
#include "motes/dataset/manifest.hpp"
#include "motes/particles/step_index.hpp"
#include "motes/particles/writer.hpp"
#include "motes/core/memory.hpp"
#include "motes/core/types.hpp"

namespace motes {

using SpeciesColumns = std::pair<std::string, std::vector<ColumnView>>;

// A grid field of a step to write: what it is, and each component's samples (C order).
struct FieldInput {
  fields::FieldSpec spec;
  std::vector<const void*> values;
};

// Seconds a writer waits for another writer's lock: MOTES_LOCK_TIMEOUT, else 0 (no wait).
double default_lock_timeout();

class Dataset {
 public:
  static constexpr const char* kManifest = Manifest::kFileName;
  static constexpr const char* kLockFile = ".lock";

  // Opens an existing dataset (a snapshot of its manifest): NotFoundError when `dir` does
  // not exist, UsageError when it holds no manifest, FormatError when the manifest is invalid.
  static Dataset open(const std::string& dir);
  // Opens `dir` for appending, creating it (and an empty manifest) when absent; created()
  // tells whether this call made the directory. While such a handle (or a copy of it) lives,
  // the large blocks a step's write frees are kept for the next step (HugeBlockReuse,
  // core/memory.hpp: bounded, handed back once unused for its idle time).
  static Dataset create(const std::string& dir, double lock_timeout = default_lock_timeout());
  static bool exists(const std::string& dir);

  const std::string& dir() const { return dir_; }
  bool created() const { return created_; }
  double lock_timeout() const { return lock_timeout_; }
  void set_lock_timeout(double seconds) { lock_timeout_ = seconds; }
  const std::vector<StepEntry>& steps() const { return manifest_.steps; }
  const StepEntry& step(int64_t index) const;  // UsageError listing the steps present
  std::string path_of(const SpeciesEntry& s) const { return dir_ + "/" + s.file; }
  const nlohmann::json& attributes() const { return manifest_.attributes; }
  // The dataset's identity (manifest 1.6, "id"): drawn at creation, kept by every change;
  // empty for a dataset of an older motes not changed since.
  const std::string& id() const { return manifest_.id; }
  // Re-reads the manifest from disk (a snapshot refreshed). ReplacedError when the manifest
  // is not a later state of the one this handle read: another identity (the dataset was
  // deleted and written again), or a step the handle knew gone or changed.
  void reload();

  // An exclusive write: holds the dataset's lock while it lives; the manifest is re-read
  // from disk when it starts. The methods that change the dataset take one as proof.
  class Writing {
   public:
    Writing(Writing&&) noexcept = default;
    Writing& operator=(Writing&&) noexcept = default;

   private:
    friend class Dataset;
    explicit Writing(FileLock lock) : lock_(std::move(lock)) {}
    FileLock lock_;
  };
  Writing begin_writing(const std::string& what);

  // Replaces the dataset-level attributes (under the lock, against the manifest on disk).
  void set_attributes(nlohmann::json a);

  // The steps given to a writer and not written (manifest 1.7), sorted by index.
  const std::vector<SkippedStep>& skipped() const { return manifest_.skipped; }
  // Lists steps as skipped (under the lock, against the manifest on disk; one manifest
  // write for all): a step listed already gets the time and reason given. Returns, per step
  // given, whether it was listed: not when the index is a published step (it was written).
  std::vector<bool> record_skipped(const std::vector<SkippedStep>& steps, bool sync = true);

  // Writes every species of a new step, then the manifest. Earlier steps are never touched;
  // on failure nothing of the step is left behind.
  // Fields are written as field files (compression, zstd level and sync as for the species).
  const StepEntry& append_step(int64_t index, double time, const nlohmann::json& attributes,
                               const std::vector<SpeciesColumns>& species, const WriteOptions& options = {},
                               std::vector<WriteSummary>* summaries = nullptr,
                               const std::vector<FieldInput>& fields = {},
                               std::vector<fields::FieldSummary>* field_summaries = nullptr);

  // Index kinds stay the same along a series: a column left to choose automatically takes
  // the kind it has in the nearest step of the species before `index` (else after), when
  // that step has a column of the same name and dtype. Only the first step of a series
  // decides from the data.
  void apply_series_index_kinds(int64_t index, const std::string& species, std::vector<ColumnView>& columns) const;

  // After a failed first write into a dataset this handle created: removes the directory
  // when, under the lock, the manifest on disk still lists no step. Returns whether it did.
  bool remove_if_unused();

  // Lower-level pieces of append_step for writers that produce the files themselves (MPI).
  // UsageError unless the step can be appended: a new index, a finite time, an object of
  // attributes, valid and distinct species names.
  void check_new_step(int64_t index, double time, const nlohmann::json& attributes,
                      const std::vector<std::string>& species, const std::vector<std::string>& fields = {}) const;
  // Creates the directory of an unpublished step (and syncs its parents), first removing
  // what a crashed write of it left there.
  void make_step_directory(const Writing&, int64_t index, bool sync) const;
  // Removes the directory of a step that failed before it was published.
  void remove_step_directory(const Writing&, int64_t index) const;
  void commit_step(const Writing&, StepEntry step, bool sync = true);
  // The manifest entry of a species of step `index` whose rows are in `parts`, already
  // written at the part paths of species_index_name: writes its step index; with no
  // parts, one empty particle file of `schema` instead. Index kinds: quantile where any
  // part has quantile codes.
  SpeciesEntry finish_species(const Writing&, int64_t index, const std::string& name, std::vector<ColumnSpec> schema,
                              const std::vector<PartSummary>& parts, const WriteOptions& options) const;
  // Writes a field file of an unpublished step (compression, zstd level, sync and threads of
  // `options`); its manifest entry.
  FieldEntry write_field(const Writing&, int64_t index, const FieldInput& f, const WriteOptions& options,
                         std::vector<fields::FieldSummary>* summaries = nullptr) const;

 private:
  std::string dir_;
  Manifest manifest_;
  bool created_ = false;
  double lock_timeout_ = 0;
  std::shared_ptr<HugeBlockReuse> reuse_;  // a writer's handle (create)
  static Dataset open_for_writing(const std::string& dir, double lock_timeout);  // create, but the reuse
  void save(bool sync);
  // ReplacedError unless `now` is a later state of manifest_ (reload()).
  void check_same_run(const Manifest& now) const;
};

// Writes one step part by part, for writers that cannot hold a species in memory at
// once (converters streaming a big file): every add_part writes one part file of a
// species (its codecs chosen once, on the species' first part: CodecMemo); commit() writes
// each species' step index, then the manifest. It holds the
// dataset's lock from construction to commit (or destruction); until commit the step is
// invisible, and an uncommitted writer removes what it wrote.
class PartedStepWriter {
 public:
  PartedStepWriter(Dataset& dataset, int64_t index, double time, nlohmann::json attributes, WriteOptions options,
                   std::vector<std::string> species, std::vector<std::string> fields = {});
  ~PartedStepWriter();
  // Rows of `species`; every part of a species has the same columns (names, dtypes). Empty parts
  // write nothing (a species whose parts are all empty becomes one empty particle file).
  WriteSummary add_part(const std::string& species, const std::vector<ColumnView>& columns);
  // Writes one of the declared fields (each once).
  fields::FieldSummary add_field(const FieldInput& field);
  const StepEntry& commit();

 private:
  struct SpeciesParts {
    std::string name;
    std::vector<ColumnSpec> schema;  // from the first part
    std::vector<PartSummary> parts;
    CodecMemo codecs;  // chosen by the first part, kept by the next ones (as the MPI writer's aggregators do)
  };
  Dataset& dataset_;
  Dataset::Writing writing_;
  StepEntry entry_;
  WriteOptions options_;
  std::vector<SpeciesParts> species_;
  std::vector<std::string> declared_fields_;
  bool committed_ = false;
  SpeciesParts& find(const std::string& name);
};

}  // namespace motes
