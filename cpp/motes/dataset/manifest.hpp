// The dataset manifest (manifest.json): the steps, and for each species of a step its
// file, particle count, bounds, schema and the checksums that pin its files. The
// manifest is data: reading checks every field a reader later relies on, and readers
// compare the files with it. docs/format.md, "Dataset manifest".
#pragma once

#include <array>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "motes/core/types.hpp"
#include "motes/fields/geometry.hpp"

namespace motes {

struct SpeciesEntry {
  std::string name;
  std::string file;  // relative to the dataset directory: a particle file (.mpf) or a step index (.mpi)
  uint32_t parts = 1;  // particle files behind a step index
  uint64_t count = 0;
  Box bounds{};
  std::vector<ColumnSpec> columns;
  // Header checksum of `file`, and of each part file behind a step index: a file copied
  // over another is refused. Absent in manifests of version 1.0 (motes 0.1).
  std::optional<uint64_t> checksum;
  std::vector<uint64_t> part_checksums;
};

// A grid field of a step: its file (fields/file.hpp) and what a listing shows without opening it.
struct FieldEntry {
  std::string name;
  std::string file;  // relative to the dataset directory: steps/<index>/<name>.mfd
  DType dtype = DType::f32;
  int ndim = 3;
  std::array<uint64_t, 3> dims{1, 1, 1};  // samples along x, y, z
  std::vector<std::string> components;    // empty: a scalar field
  fields::Geometry geometry;              // manifest 1.5: "geometry" (absent: Cartesian)
  uint64_t checksum = 0;                  // the field file's header checksum (a field in one file)
  // A field written in parts (manifest 1.4, parallel writes): its part files
  // (field_part_name(file, k)) and their header checksums; empty for a field in one file.
  std::vector<uint64_t> part_checksums;
  size_t part_count() const { return part_checksums.empty() ? 1 : part_checksums.size(); }
  // The files holding the field: `file`, or its parts.
  std::vector<std::string> files() const;
};

struct StepEntry {
  int64_t index = 0;
  double time = 0.0;
  nlohmann::json attributes = nlohmann::json::object();
  std::vector<SpeciesEntry> species;
  std::vector<FieldEntry> fields;  // a step holds species, fields or both
  const SpeciesEntry& find(const std::string& species) const;  // UsageError naming the species present
  const FieldEntry& find_field(const std::string& field) const;  // UsageError naming the fields present
};

// A step given to a writer and not written, by the writer's policy (manifest 1.7, "skipped"):
// a background writer with on_backlog "skip" lists each step submitted while its queue was
// full, so that a reader can tell a step skipped from a step lost.
struct SkippedStep {
  int64_t index = 0;
  double time = 0.0;
  std::string reason;  // why: "backlog" (submitted while max_pending steps were in flight)
};

struct Manifest {
  static constexpr const char* kFileName = "manifest.json";
  static constexpr int kMajor = 1;
  // 1.1: checksums of the files; 1.2: "index" (was "fine"), "error_bound"; 1.3: fields;
  // 1.4: fields in parts ("parts", "part_checksums" of a field); 1.5: a field's "geometry";
  // 1.6: the manifest's own checksum (its first member) and the dataset's identity ("id");
  // 1.7: the steps skipped ("skipped"). A manifest is written with the lowest minor that
  // holds what it has: 1.7 only when it lists skipped steps.
  static constexpr int kMinor = 7;
  static constexpr int kSkippedMinor = 7;
  static constexpr int kSealedMinor = 6;  // from this minor on, a manifest carries its checksum
  static constexpr uint64_t kMaxBytes = uint64_t(1) << 30;  // a larger manifest is refused, not read

  nlohmann::json attributes = nlohmann::json::object();
  std::vector<StepEntry> steps;  // sorted by index, indexes distinct
  // Steps given to a writer and not written (1.7): sorted by index, indexes distinct, none
  // of them in `steps` (a step skipped and written later is listed as written only).
  std::vector<SkippedStep> skipped;
  // The dataset's identity: 32 lowercase hex digits drawn when the dataset is created, kept by
  // every later change (appends, attributes). A dataset deleted and written again gets a new
  // one, so readers holding the old can tell. Empty in manifests before 1.6 (given one at the
  // next change).
  std::string id;

  // Reads and validates dir/manifest.json; FormatError naming the file, the step and the
  // species at fault. A missing manifest is NotFoundError.
  static Manifest read(const std::string& dir);
  // Reads and validates a manifest's text (`path` names it in errors).
  static Manifest parse(const std::string& text, const std::string& path);
  // The manifest's text, sealed: its first member is "checksum", the XXH3-64 of every byte
  // after that member's line (docs/format.md, "The manifest's checksum").
  std::string encode() const;
};

// `text` (a manifest's JSON, sealed or not) with its checksum member made anew: the text of
// every other member kept byte for byte. For tools and tests that edit a manifest on purpose.
std::string seal_manifest_text(const std::string& text);

// Attributes (of a dataset or a step) are a JSON object nested at most this deep.
inline constexpr int kMaxAttributeDepth = 64;

// Parses attributes given by a user: UsageError naming `what` unless `text` is a JSON
// object nested at most kMaxAttributeDepth deep (parsed without recursion).
nlohmann::json parse_attributes(const std::string& text, const std::string& what);
void check_attributes(const nlohmann::json& attributes, const std::string& what);

// Letters, digits, '_', '-', '.', not starting with '.', at most 128 characters.
bool valid_species_name(const std::string& name);
// Where a species' files live inside the dataset: steps/<index, 6 digits>/<species>.mpf,
// or .mpi for a step index with its part files beside it.
std::string species_file_name(int64_t index, const std::string& species);
std::string species_index_name(int64_t index, const std::string& species);
// steps/<index, 6 digits>/<field>.mfd (field names follow the rules of species names).
std::string field_file_name(int64_t index, const std::string& field);
// Part k of a field written in parts: <file without .mfd>.p<k, 6 digits>.mfd.
std::string field_part_name(const std::string& file, size_t k);

}  // namespace motes
