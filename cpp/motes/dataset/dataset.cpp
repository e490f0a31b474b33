#include "motes/dataset/dataset.hpp"

#include "motes/dataset/seal.hpp"
#include "motes/io/storage.hpp"
#include "motes/core/text.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>

using nlohmann::json;

namespace motes {

namespace {

// Entries of a directory that a dataset being created may already hold: its lock file, and
// the temporary name of a manifest whose writer crashed.
bool only_creation_debris(const std::string& dir) {
  for (const std::string& name : entry_names(dir))
    if (name != Dataset::kLockFile && name.rfind(std::string(Dataset::kManifest) + ".tmp-", 0) != 0) return false;
  return true;
}

}  // namespace

double default_lock_timeout() {
  const char* v = std::getenv("MOTES_LOCK_TIMEOUT");
  if (!v || !*v) return 0.0;
  char* end = nullptr;
  double s = std::strtod(v, &end);  // digits only in practice; a bad value means no wait
  return end && *end == '\0' && std::isfinite(s) && s > 0 ? s : 0.0;
}

bool Dataset::exists(const std::string& dir) {
  check_path(dir);
  return path_exists(path_in(dir, kManifest));
}

Dataset Dataset::open(const std::string& dir) {
  check_path(dir);
  Dataset d;
  d.dir_ = dir;
  // In a remote store (kind unknown) the manifest's read says what is missing, by its URL.
  const PathKind kind = path_kind(dir);
  if (kind == PathKind::missing) throw NotFoundError("no such dataset: '" + dir + "' does not exist", ENOENT);
  if (kind == PathKind::file) throw UsageError("'" + dir + "' is a file, not a dataset directory (NAME.motes/)");
  if (!path_exists(path_in(dir, kManifest)))
    throw UsageError("'" + dir + "' is not a motes dataset (no " + kManifest + ")");
  d.manifest_ = Manifest::read(dir);
  return d;
}

Dataset Dataset::create(const std::string& dir, double lock_timeout) {
  Dataset d = open_for_writing(dir, lock_timeout);
  d.reuse_ = std::make_shared<HugeBlockReuse>();
  return d;
}

Dataset Dataset::open_for_writing(const std::string& dir, double lock_timeout) {
  check_path(dir);
  check_writable(dir, "write to dataset");
  if (exists(dir)) {
    Dataset d = open(dir);
    d.lock_timeout_ = lock_timeout;
    return d;
  }
  const bool made = make_directory(dir);  // its parents too
  if (path_kind(dir) != PathKind::directory) throw UsageError("'" + dir + "' exists and is not a directory");
  if (!made && !only_creation_debris(dir)) {
    // Another process may have created the dataset since exists() above: its manifest is in
    // place before any step directory appears, so a manifest now means a dataset.
    if (exists(dir)) {
      Dataset d = open(dir);
      d.lock_timeout_ = lock_timeout;
      return d;
    }
    throw UsageError("'" + dir + "' is a non-empty directory without a motes manifest; refusing to write into it");
  }
  Dataset d;
  d.dir_ = dir;
  d.created_ = made;
  d.lock_timeout_ = lock_timeout;
  try {
    FileLock lock = FileLock::acquire(path_in(dir, kLockFile), "create dataset '" + dir + "'", lock_timeout);
    if (exists(dir)) {  // another process created it while this one waited
      d.manifest_ = Manifest::read(dir);
      d.created_ = false;
      return d;
    }
    if (made) sync_directory(parent_of(dir));
    d.save(true);
  } catch (...) {
    // A full disk or a refused lock while creating: leave no folder behind (only ours).
    if (made && !exists(dir)) remove_tree(dir);
    throw;
  }
  return d;
}

void Dataset::reload() {
  if (!path_exists(path_in(dir_, kManifest)))
    throw UsageError("'" + dir_ + "' is no longer a motes dataset (its manifest was removed)");
  Manifest now = Manifest::read(dir_);
  check_same_run(now);
  manifest_ = std::move(now);
}

void Dataset::check_same_run(const Manifest& now) const {
  if (std::optional<std::string> why = other_run(manifest_, now))
    throw ReplacedError("dataset '" + dir_ + "' was replaced since this handle read it (" + *why +
                        "): it holds another run now; open it again to read that run");
}

Dataset::Writing Dataset::begin_writing(const std::string& what) {
  Writing w(FileLock::acquire(path_in(dir_, kLockFile), what, lock_timeout_));
  reload();  // the manifest on disk, as the last writer left it
  return w;
}

const StepEntry& Dataset::step(int64_t index) const {
  for (const StepEntry& s : manifest_.steps)
    if (s.index == index) return s;
  const auto& steps = manifest_.steps;
  std::string list;
  for (size_t i = 0; i < steps.size() && i < 20; ++i) list += (i ? ", " : "") + std::to_string(steps[i].index);
  if (steps.size() > 20) list += ", ...";
  throw UsageError("dataset has no step " + std::to_string(index) + (steps.empty() ? " (it has no steps)" : " (steps: " + list + ")"));
}

void Dataset::set_attributes(json a) {
  check_attributes(a, "dataset attributes");
  Writing w = begin_writing("set the attributes of '" + dir_ + "'");
  manifest_.attributes = std::move(a);
  save(true);
}

std::vector<bool> Dataset::record_skipped(const std::vector<SkippedStep>& given, bool sync) {
  for (const SkippedStep& k : given)
    if (!std::isfinite(k.time))
      throw UsageError("step time must be a finite number, got " + number_text(k.time));
  Writing w = begin_writing("list the steps skipped in '" + dir_ + "'");
  const std::vector<SkippedStep> before = manifest_.skipped;
  std::vector<bool> listed(given.size(), false);
  auto& list = manifest_.skipped;
  for (size_t i = 0; i < given.size(); ++i) {
    const SkippedStep& k = given[i];
    if (std::any_of(manifest_.steps.begin(), manifest_.steps.end(), [&](const StepEntry& s) { return s.index == k.index; }))
      continue;
    auto at = std::lower_bound(list.begin(), list.end(), k.index,
                               [](const SkippedStep& s, int64_t i) { return s.index < i; });
    if (at != list.end() && at->index == k.index)
      *at = k;
    else
      list.insert(at, k);
    listed[i] = true;
  }
  if (list.size() == before.size() && std::equal(list.begin(), list.end(), before.begin(), [](const auto& a, const auto& b) {
        return a.index == b.index && a.time == b.time && a.reason == b.reason;
      }))
    return listed;
  try {
    save(sync);
  } catch (...) {
    manifest_.skipped = before;  // as on disk
    throw;
  }
  return listed;
}

void Dataset::check_new_step(int64_t index, double time, const json& attributes,
                             const std::vector<std::string>& species, const std::vector<std::string>& fields) const {
  for (const StepEntry& s : manifest_.steps)
    if (s.index == index) throw UsageError("step " + std::to_string(index) + " already exists in '" + dir_ + "'");
  if (species.empty() && fields.empty()) throw UsageError("a step needs at least one species or field");
  for (size_t i = 0; i < fields.size(); ++i) {
    if (!valid_species_name(fields[i]))
      throw UsageError("field name '" + fields[i] + "' is invalid (letters, digits, '_', '-', '.')");
    for (size_t j = 0; j < i; ++j)
      if (fields[j] == fields[i]) throw UsageError("field '" + fields[i] + "' is given twice");
  }
  check_attributes(attributes, "step attributes");
  if (!std::isfinite(time)) throw UsageError("step time must be a finite number, got " + number_text(time));
  for (size_t i = 0; i < species.size(); ++i) {
    if (!valid_species_name(species[i]))
      throw UsageError("species name '" + species[i] + "' is invalid (letters, digits, '_', '-', '.')");
    for (size_t j = 0; j < i; ++j)
      if (species[j] == species[i]) throw UsageError("species '" + species[i] + "' is given twice");
  }
}

void Dataset::make_step_directory(const Writing&, int64_t index, bool sync) const {
  const std::string step_dir = parent_of(path_in(dir_, species_file_name(index, "x")));
  for (const StepEntry& s : manifest_.steps)
    if (s.index == index) throw UsageError("step " + std::to_string(index) + " already exists in '" + dir_ + "'");
  // The step is not published (checked against the manifest on disk, under the lock), so
  // anything in its directory is debris of a write that crashed: clear it.
  if (path_exists(step_dir) && !remove_tree(step_dir))
    throw IOError("cannot clear the unpublished step directory '" + step_dir + "'", EIO);
  make_directory(step_dir);
  if (sync) sync_directory(parent_of(step_dir)), sync_directory(parent_of(parent_of(step_dir)));
}

void Dataset::remove_step_directory(const Writing&, int64_t index) const {
  for (const StepEntry& s : manifest_.steps)
    if (s.index == index) return;  // published: never removed
  remove_tree(parent_of(path_in(dir_, species_file_name(index, "x"))));
}

void Dataset::apply_series_index_kinds(int64_t index, const std::string& species,
                                       std::vector<ColumnView>& columns) const {
  const SpeciesEntry* before = nullptr;
  const SpeciesEntry* after = nullptr;
  for (const StepEntry& st : manifest_.steps)  // sorted by index
    for (const SpeciesEntry& e : st.species)
      if (e.name == species) {
        if (st.index < index) before = &e;
        else if (st.index > index && !after) after = &e;
      }
  const SpeciesEntry* near = before ? before : after;
  if (!near) return;
  for (ColumnView& c : columns) {
    if (c.spec.index != IndexKind::automatic) continue;
    for (const ColumnSpec& s : near->columns)
      if (s.name == c.spec.name && s.dtype == c.spec.dtype) c.spec.index = s.index;
  }
}

bool Dataset::remove_if_unused() {
  Writing w = begin_writing("remove the unused dataset '" + dir_ + "'");
  if (!manifest_.steps.empty() || !manifest_.attributes.empty() || !manifest_.skipped.empty()) return false;
  return remove_tree(dir_);
}

const StepEntry& Dataset::append_step(int64_t index, double time, const json& attributes,
                                      const std::vector<SpeciesColumns>& species, const WriteOptions& options,
                                      std::vector<WriteSummary>* summaries, const std::vector<FieldInput>& fields,
                                      std::vector<fields::FieldSummary>* field_summaries) {
  std::vector<std::string> names, field_names;
  for (const auto& sp : species) names.push_back(sp.first);
  for (const auto& sp : species) validate_columns(sp.second);
  for (const FieldInput& f : fields) {
    f.spec.check();
    field_names.push_back(f.spec.name);
  }
  check_new_step(index, time, attributes, names, field_names);  // early, on the snapshot: no lock for bad input
  Writing w = begin_writing("write step " + std::to_string(index) + " of '" + dir_ + "'");
  check_new_step(index, time, attributes, names, field_names);
  StepEntry st;
  st.index = index;
  st.time = time;
  st.attributes = attributes;
  make_step_directory(w, index, options.sync);
  try {
    for (const auto& [name, given] : species) {
      std::vector<ColumnView> cols = given;
      apply_series_index_kinds(index, name, cols);
      SpeciesEntry e;
      e.name = name;
      e.file = species_file_name(index, name);
      WriteSummary ws = write_particle_file(path_of(e), cols, options);
      e.count = ws.particle_count;
      e.bounds = ws.bounds;
      e.checksum = ws.header_checksum;
      for (size_t c = 0; c < cols.size(); ++c) {
        ColumnSpec cs = cols[c].spec;
        cs.index = ws.columns[c].index;
        e.columns.push_back(cs);
      }
      if (summaries) summaries->push_back(std::move(ws));
      st.species.push_back(std::move(e));
    }
    for (const FieldInput& f : fields) st.fields.push_back(write_field(w, index, f, options, field_summaries));
    commit_step(w, std::move(st), options.sync);
  } catch (...) {
    remove_step_directory(w, index);  // e.g. the first species' file when the second failed
    throw;
  }
  return step(index);
}

FieldEntry Dataset::write_field(const Writing&, int64_t index, const FieldInput& f, const WriteOptions& options,
                                std::vector<fields::FieldSummary>* summaries) const {
  const fields::FieldWriteOptions fo{options.compression, options.zstd_level, fields::kDefaultBlockBits, options.sync,
                                     options.layout.threads};
  FieldEntry e;
  e.name = f.spec.name;
  e.file = field_file_name(index, f.spec.name);
  fields::FieldSummary fs = fields::write_field_file(dir_ + "/" + e.file, f.spec, f.values, fo);
  e.dtype = f.spec.dtype;
  e.ndim = f.spec.ndim;
  e.dims = f.spec.dims;
  e.components = f.spec.components;
  e.geometry = f.spec.geometry;
  e.checksum = fs.header_checksum;
  if (summaries) summaries->push_back(std::move(fs));
  return e;
}

void Dataset::commit_step(const Writing&, StepEntry st, bool sync) {
  auto& steps = manifest_.steps;
  for (const StepEntry& s : steps)
    if (s.index == st.index) throw UsageError("step " + std::to_string(st.index) + " already exists");
  int64_t index = st.index;
  steps.push_back(std::move(st));
  std::stable_sort(steps.begin(), steps.end(), [](const StepEntry& a, const StepEntry& b) { return a.index < b.index; });
  // A step skipped before and written now is written: it leaves the list of skipped steps.
  const std::vector<SkippedStep> skipped = manifest_.skipped;
  std::erase_if(manifest_.skipped, [&](const SkippedStep& k) { return k.index == index; });
  try {
    save(sync);
  } catch (...) {
    // keep memory in line with the disk, which still has the old manifest
    steps.erase(std::find_if(steps.begin(), steps.end(), [&](const StepEntry& s) { return s.index == index; }));
    manifest_.skipped = skipped;
    throw;
  }
}

void Dataset::save(bool sync) {
  // A dataset gets its identity when created, or at the first change by a motes that writes
  // identities (manifests before 1.6 have none); every later change keeps it.
  const bool new_id = manifest_.id.empty();
  if (new_id) manifest_.id = new_dataset_id();
  try {
    write_file_atomic(path_in(dir_, kManifest), manifest_.encode(), sync);
  } catch (...) {
    if (new_id) manifest_.id.clear();  // as on disk
    throw;
  }
}

SpeciesEntry Dataset::finish_species(const Writing&, int64_t index, const std::string& name,
                                     std::vector<ColumnSpec> schema, const std::vector<PartSummary>& parts,
                                     const WriteOptions& options) const {
  SpeciesEntry e;
  e.name = name;
  e.columns = std::move(schema);
  if (parts.empty()) {
    e.file = species_file_name(index, name);
    std::vector<ColumnView> empty;
    for (const ColumnSpec& c : e.columns) {
      ColumnView v;
      v.spec = c;
      empty.push_back(v);
    }
    WriteSummary ws = write_particle_file(path_of(e), empty, options);
    e.bounds = ws.bounds;
    e.checksum = ws.header_checksum;
    return e;
  }
  e.file = species_index_name(index, name);
  e.parts = uint32_t(parts.size());
  for (size_t c = 0; c < e.columns.size(); ++c)
    for (const PartSummary& p : parts)
      if (p.columns[c].index == IndexKind::quantile) e.columns[c].index = IndexKind::quantile;
  StepIndexSummary root = StepIndex::write(path_of(e), e.columns, parts, options.sync);
  e.count = root.count;
  e.bounds = root.bounds;
  e.checksum = root.header_checksum;
  for (const PartSummary& p : parts) e.part_checksums.push_back(p.header_checksum);
  return e;
}

PartedStepWriter::PartedStepWriter(Dataset& dataset, int64_t index, double time, json attributes,
                                   WriteOptions options, std::vector<std::string> species,
                                   std::vector<std::string> fields)
    : dataset_(dataset),
      writing_((dataset.check_new_step(index, time, attributes, species, fields),
                dataset.begin_writing("write step " + std::to_string(index) + " of '" + dataset.dir() + "'"))),
      options_(std::move(options)),
      declared_fields_(std::move(fields)) {
  dataset_.check_new_step(index, time, attributes, species, declared_fields_);
  entry_.index = index;
  entry_.time = time;
  entry_.attributes = std::move(attributes);
  for (std::string& name : species) species_.push_back({std::move(name), {}, {}});
  dataset_.make_step_directory(writing_, index, options_.sync);
}

PartedStepWriter::~PartedStepWriter() {
  if (!committed_) dataset_.remove_step_directory(writing_, entry_.index);
}

PartedStepWriter::SpeciesParts& PartedStepWriter::find(const std::string& name) {
  for (SpeciesParts& s : species_)
    if (s.name == name) return s;
  throw UsageError("species '" + name + "' was not declared for step " + std::to_string(entry_.index) + " (declared: " +
                   joined(species_, [](const SpeciesParts& s) { return s.name; }) + ")");
}

WriteSummary PartedStepWriter::add_part(const std::string& species, const std::vector<ColumnView>& columns) {
  if (committed_) throw UsageError("step " + std::to_string(entry_.index) + " is already committed");
  SpeciesParts& sp = find(species);
  validate_columns(columns);
  std::vector<ColumnSpec> schema;
  for (const ColumnView& c : columns) schema.push_back(ColumnSpec{c.spec.name, c.spec.dtype, IndexKind::none, c.spec.unit, c.spec.error_bound});
  if (sp.schema.empty()) {
    sp.schema = schema;
  } else {
    bool same = schema.size() == sp.schema.size();
    for (size_t i = 0; same && i < schema.size(); ++i)
      same = schema[i].name == sp.schema[i].name && schema[i].dtype == sp.schema[i].dtype;
    if (!same) throw UsageError("species '" + species + "': a part's columns differ from its first part's");
  }
  if (columns.empty() || columns[0].count == 0) return {};
  // Every part of a species gets the index kinds of its first part, and the first part
  // those of the series (apply_series_index_kinds).
  std::vector<ColumnView> cols = columns;
  if (sp.parts.empty()) {
    dataset_.apply_series_index_kinds(entry_.index, species, cols);
  } else {
    for (size_t i = 0; i < cols.size(); ++i)
      if (cols[i].spec.index == IndexKind::automatic) cols[i].spec.index = sp.parts[0].columns[i].index;
  }
  std::string index_path = dataset_.dir() + "/" + species_index_name(entry_.index, species);
  WriteSummary w = write_particle_file(StepIndex::part_path(index_path, sp.parts.size()), cols, options_, &sp.codecs);
  sp.parts.push_back({w.particle_count, w.file_bytes, w.bounds, w.columns, w.header_checksum});
  return w;
}

fields::FieldSummary PartedStepWriter::add_field(const FieldInput& f) {
  if (committed_) throw UsageError("step " + std::to_string(entry_.index) + " is already committed");
  f.spec.check();
  if (std::find(declared_fields_.begin(), declared_fields_.end(), f.spec.name) == declared_fields_.end())
    throw UsageError("field '" + f.spec.name + "' was not declared for step " + std::to_string(entry_.index));
  for (const FieldEntry& e : entry_.fields)
    if (e.name == f.spec.name) throw UsageError("field '" + f.spec.name + "' is added twice");
  std::vector<fields::FieldSummary> out;
  entry_.fields.push_back(dataset_.write_field(writing_, entry_.index, f, options_, &out));
  return out[0];
}

const StepEntry& PartedStepWriter::commit() {
  if (committed_) throw UsageError("step " + std::to_string(entry_.index) + " is already committed");
  if (entry_.fields.size() != declared_fields_.size())
    throw UsageError("step " + std::to_string(entry_.index) + ": a declared field was not added");
  for (SpeciesParts& sp : species_) {
    if (sp.schema.empty()) throw UsageError("species '" + sp.name + "' has no columns: add at least one part");
    entry_.species.push_back(dataset_.finish_species(writing_, entry_.index, sp.name, sp.schema, sp.parts, options_));
  }
  int64_t index = entry_.index;
  dataset_.commit_step(writing_, std::move(entry_), options_.sync);
  committed_ = true;
  return dataset_.step(index);
}

}  // namespace motes
