#include "motes/format/dataset.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "motes/format/io.hpp"

namespace fs = std::filesystem;
using nlohmann::json;

namespace motes {

namespace {
constexpr int kManifestMajor = 1;
constexpr int kManifestMinor = 0;

json box_json(const Box& b) { return json::array({{b.lo[0], b.lo[1], b.lo[2]}, {b.hi[0], b.hi[1], b.hi[2]}}); }

Box box_from(const json& j) {
  Box b{};
  for (int a = 0; a < 3; ++a) b.lo[a] = j.at(0).at(a).get<double>(), b.hi[a] = j.at(1).at(a).get<double>();
  return b;
}

DType dtype_from_name(const std::string& s) {
  for (uint8_t c = 1; c <= 10; ++c)
    if (s == dtype_name(DType(c))) return DType(c);
  throw FormatError("unknown dtype '" + s + "' in manifest");
}

FineIndex fine_from_name(const std::string& s) {
  if (s == "quantile") return FineIndex::quantile;
  if (s == "none") return FineIndex::none;
  throw FormatError("unknown index kind '" + s + "' in manifest");
}

bool valid_species_name(const std::string& s) {
  if (s.empty() || s.size() > 128) return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.')) return false;
  return s[0] != '.';
}
}  // namespace

const SpeciesEntry& StepEntry::find(const std::string& species) const {
  for (const SpeciesEntry& s : this->species)
    if (s.name == species) return s;
  std::string names;
  for (const SpeciesEntry& s : this->species) names += (names.empty() ? "" : ", ") + s.name;
  throw UsageError("step " + std::to_string(index) + " has no species '" + species + "' (species: " + names + ")");
}

bool Dataset::exists(const std::string& dir) { return fs::exists(fs::path(dir) / kManifest); }

Dataset Dataset::open(const std::string& dir) {
  Dataset d;
  d.dir_ = dir;
  fs::path mpath = fs::path(dir) / kManifest;
  if (!fs::exists(dir)) throw NotFoundError("no such dataset: '" + dir + "' does not exist");
  std::ifstream in(mpath);
  if (!in) {
    if (fs::is_regular_file(dir)) throw UsageError("'" + dir + "' is a file, not a dataset directory (NAME.motes/)");
    throw UsageError("'" + dir + "' is not a motes dataset (no " + kManifest + ")");
  }
  std::stringstream ss;
  ss << in.rdbuf();
  try {
    json m = json::parse(ss.str());
    if (m.at("format").get<std::string>() != "motes-dataset") throw FormatError("not a motes dataset manifest");
    int major = m.at("version").at(0).get<int>();
    if (major != kManifestMajor)
      throw FormatError("manifest version " + std::to_string(major) + " is not supported (this motes reads " +
                        std::to_string(kManifestMajor) + ".x)");
    d.attributes_ = m.value("attributes", json::object());
    for (const json& s : m.at("steps")) {
      StepEntry st;
      st.index = s.at("index").get<int64_t>();
      st.time = s.at("time").get<double>();
      st.attributes = s.value("attributes", json::object());
      for (auto& [name, sp] : s.at("species").items()) {
        SpeciesEntry e;
        e.name = name;
        e.file = sp.at("file").get<std::string>();
        if (e.file.find("..") != std::string::npos || (!e.file.empty() && e.file[0] == '/'))
          throw FormatError("species file '" + e.file + "' points outside the dataset");
        e.parts = sp.value("parts", 1u);
        if (e.parts == 0) throw FormatError("species '" + name + "' has 0 parts");
        e.count = sp.at("count").get<uint64_t>();
        e.bounds = box_from(sp.at("bounds"));
        for (const json& c : sp.at("columns")) {
          ColumnSpec cs{c.at("name").get<std::string>(), dtype_from_name(c.at("dtype").get<std::string>()),
                        fine_from_name(c.value("fine", std::string("none"))),
                        c.value("unit", std::string())};
          e.columns.push_back(std::move(cs));
        }
        st.species.push_back(std::move(e));
      }
      for (const StepEntry& other : d.steps_)
        if (other.index == st.index) throw FormatError("step " + std::to_string(st.index) + " is listed twice");
      d.steps_.push_back(std::move(st));
    }
  } catch (const json::exception& e) {
    throw FormatError(mpath.string() + ": invalid manifest: " + e.what());
  } catch (const FormatError& e) {
    throw FormatError(mpath.string() + ": " + e.what());
  }
  return d;
}

Dataset Dataset::create(const std::string& dir) {
  if (exists(dir)) return open(dir);
  if (fs::exists(dir) && !fs::is_directory(dir)) throw UsageError("'" + dir + "' exists and is not a directory");
  if (fs::exists(dir) && !fs::is_empty(dir))
    throw UsageError("'" + dir + "' is a non-empty directory without a motes manifest; refusing to write into it");
  fs::create_directories(dir);
  sync_directory(fs::absolute(dir).parent_path().string());
  Dataset d;
  d.dir_ = dir;
  d.save(true);
  return d;
}

const StepEntry& Dataset::step(int64_t index) const {
  for (const StepEntry& s : steps_)
    if (s.index == index) return s;
  std::string list;
  for (size_t i = 0; i < steps_.size() && i < 20; ++i) list += (i ? ", " : "") + std::to_string(steps_[i].index);
  if (steps_.size() > 20) list += ", ...";
  throw UsageError("dataset has no step " + std::to_string(index) + (steps_.empty() ? " (it has no steps)" : " (steps: " + list + ")"));
}

void Dataset::set_attributes(json a) {
  attributes_ = std::move(a);
  save(true);
}

std::string Dataset::species_file_name(int64_t index, const std::string& species) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%06lld", static_cast<long long>(index));
  return std::string("steps/") + buf + "/" + species + ".mpf";
}

std::string Dataset::species_index_name(int64_t index, const std::string& species) {
  std::string f = species_file_name(index, species);
  return f.substr(0, f.size() - 4) + ".mpi";
}

void Dataset::check_new_step(int64_t index, double time, const json& attributes,
                             const std::vector<std::string>& species) const {
  for (const StepEntry& s : steps_)
    if (s.index == index) throw UsageError("step " + std::to_string(index) + " already exists in '" + dir_ + "'");
  if (species.empty()) throw UsageError("a step needs at least one species");
  if (!attributes.is_object()) throw UsageError("step attributes must be a JSON object");
  if (!std::isfinite(time)) throw UsageError("step time must be a finite number, got " + std::to_string(time));
  for (size_t i = 0; i < species.size(); ++i) {
    if (!valid_species_name(species[i]))
      throw UsageError("species name '" + species[i] + "' is invalid (letters, digits, '_', '-', '.')");
    for (size_t j = 0; j < i; ++j)
      if (species[j] == species[i]) throw UsageError("species '" + species[i] + "' is given twice");
  }
}

bool Dataset::make_step_directory(int64_t index, bool sync) const {
  fs::path step_dir = (fs::path(dir_) / species_file_name(index, "x")).parent_path();
  for (const StepEntry& s : steps_)
    if (s.index == index) throw UsageError("step " + std::to_string(index) + " already exists in '" + dir_ + "'");
  // The step is not published, so anything in its directory is debris of a write that
  // crashed (a killed rank leaves part files behind): clear it.
  if (fs::exists(step_dir)) fs::remove_all(step_dir);
  fs::create_directories(step_dir);
  if (sync) sync_directory(step_dir.parent_path().string()), sync_directory(step_dir.parent_path().parent_path().string());
  return true;
}

const StepEntry& Dataset::append_step(int64_t index, double time, const json& attributes,
                                      const std::vector<SpeciesColumns>& species, const WriteOptions& options,
                                      std::vector<WriteSummary>* summaries) {
  std::vector<std::string> names;
  for (const auto& sp : species) names.push_back(sp.first);
  check_new_step(index, time, attributes, names);
  for (const auto& sp : species) validate_columns(sp.second);
  StepEntry st;
  st.index = index;
  st.time = time;
  st.attributes = attributes;
  make_step_directory(index, options.sync);
  for (const auto& [name, cols] : species) {
    SpeciesEntry e;
    e.name = name;
    e.file = species_file_name(index, name);
    WriteSummary ws = write_particle_file(path_of(e), cols, options);
    e.count = ws.particle_count;
    e.bounds = ws.bounds;
    for (size_t c = 0; c < cols.size(); ++c) {
      ColumnSpec cs = cols[c].spec;
      cs.fine = ws.columns[c].fine;
      e.columns.push_back(cs);
    }
    if (summaries) summaries->push_back(std::move(ws));
    st.species.push_back(std::move(e));
  }
  commit_step(std::move(st), options.sync);
  return step(index);
}

void Dataset::commit_step(StepEntry st, bool sync) {
  for (const StepEntry& s : steps_)
    if (s.index == st.index) throw UsageError("step " + std::to_string(st.index) + " already exists");
  steps_.push_back(std::move(st));
  std::stable_sort(steps_.begin(), steps_.end(), [](const StepEntry& a, const StepEntry& b) { return a.index < b.index; });
  try {
    save(sync);
  } catch (...) {
    // keep memory in line with the disk, which still has the old manifest
    steps_.erase(std::find_if(steps_.begin(), steps_.end(), [&](const StepEntry& s) { return s.index == st.index; }));
    throw;
  }
}

void Dataset::save(bool sync) const {
  json m;
  m["format"] = "motes-dataset";
  m["version"] = {kManifestMajor, kManifestMinor};
  m["attributes"] = attributes_;
  json steps = json::array();
  for (const StepEntry& s : steps_) {
    json js;
    js["index"] = s.index;
    js["time"] = s.time;
    js["attributes"] = s.attributes;
    json sp = json::object();
    for (const SpeciesEntry& e : s.species) {
      json cols = json::array();
      for (const ColumnSpec& c : e.columns) {
        json jc = {{"name", c.name}, {"dtype", dtype_name(c.dtype)},
                   {"fine", c.fine == FineIndex::quantile ? "quantile" : "none"}};
        if (!c.unit.empty()) jc["unit"] = c.unit;
        cols.push_back(jc);
      }
      sp[e.name] = {{"file", e.file}, {"count", e.count}, {"bounds", box_json(e.bounds)}, {"columns", cols}};
      if (e.parts != 1) sp[e.name]["parts"] = e.parts;
    }
    js["species"] = sp;
    steps.push_back(js);
  }
  m["steps"] = steps;
  write_file_atomic((fs::path(dir_) / kManifest).string(), m.dump(1) + "\n", sync);
}

SpeciesEntry Dataset::finish_species(int64_t index, const std::string& name, std::vector<ColumnSpec> schema,
                                     const std::vector<PartSummary>& parts, const WriteOptions& options) const {
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
    e.bounds = write_particle_file(path_of(e), empty, options).bounds;
    return e;
  }
  e.file = species_index_name(index, name);
  e.parts = uint32_t(parts.size());
  for (size_t c = 0; c < e.columns.size(); ++c)
    for (const PartSummary& p : parts)
      if (p.columns[c].fine == FineIndex::quantile) e.columns[c].fine = FineIndex::quantile;
  IndexNode root = StepIndex::write(path_of(e), e.columns, parts, options.sync);
  e.count = root.count;
  e.bounds = root.bounds;
  return e;
}

PartedStepWriter::PartedStepWriter(Dataset& dataset, int64_t index, double time, json attributes,
                                   WriteOptions options, std::vector<std::string> species)
    : dataset_(dataset), options_(std::move(options)) {
  dataset_.check_new_step(index, time, attributes, species);
  entry_.index = index;
  entry_.time = time;
  entry_.attributes = std::move(attributes);
  for (std::string& name : species) species_.push_back({std::move(name), {}, {}});
  dataset_.make_step_directory(index, options_.sync);
}

PartedStepWriter::SpeciesParts& PartedStepWriter::find(const std::string& name) {
  for (SpeciesParts& s : species_)
    if (s.name == name) return s;
  std::string names;
  for (const SpeciesParts& s : species_) names += (names.empty() ? "" : ", ") + s.name;
  throw UsageError("species '" + name + "' was not declared for step " + std::to_string(entry_.index) + " (declared: " +
                   names + ")");
}

WriteSummary PartedStepWriter::add_part(const std::string& species, const std::vector<ColumnView>& columns) {
  if (committed_) throw UsageError("step " + std::to_string(entry_.index) + " is already committed");
  SpeciesParts& sp = find(species);
  validate_columns(columns);
  std::vector<ColumnSpec> schema;
  for (const ColumnView& c : columns) schema.push_back(ColumnSpec{c.spec.name, c.spec.dtype, FineIndex::none, c.spec.unit});
  if (sp.schema.empty()) {
    sp.schema = schema;
  } else {
    bool same = schema.size() == sp.schema.size();
    for (size_t i = 0; same && i < schema.size(); ++i)
      same = schema[i].name == sp.schema[i].name && schema[i].dtype == sp.schema[i].dtype;
    if (!same) throw UsageError("species '" + species + "': a part's columns differ from its first part's");
  }
  if (columns.empty() || columns[0].count == 0) return {};
  std::string index_path = dataset_.dir() + "/" + Dataset::species_index_name(entry_.index, species);
  WriteSummary w = write_particle_file(StepIndex::part_path(index_path, sp.parts.size()), columns, options_);
  sp.parts.push_back({w.particle_count, w.file_bytes, w.bounds, w.columns});
  return w;
}

const StepEntry& PartedStepWriter::commit() {
  if (committed_) throw UsageError("step " + std::to_string(entry_.index) + " is already committed");
  for (SpeciesParts& sp : species_) {
    if (sp.schema.empty()) throw UsageError("species '" + sp.name + "' has no columns: add at least one part");
    entry_.species.push_back(dataset_.finish_species(entry_.index, sp.name, sp.schema, sp.parts, options_));
  }
  committed_ = true;
  int64_t index = entry_.index;
  dataset_.commit_step(std::move(entry_), options_.sync);
  return dataset_.step(index);
}

}  // namespace motes
