#include "motes/dataset/manifest.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>

#include "motes/core/text.hpp"
#include "motes/dataset/seal.hpp"
#include "motes/io/files.hpp"
#include "motes/io/storage.hpp"
#include "motes/particles/spec.hpp"

using nlohmann::json;

namespace motes {

namespace {

#ifdef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
constexpr bool kCheckSum = false;  // mutated manifests reach the checks of their values
#else
constexpr bool kCheckSum = true;
#endif

// Thrown by the parse callback when a value is nested too deeply.
struct TooDeep {};

// Parses without recursion (nlohmann's parser keeps its own stack), refusing values
// nested deeper than max_depth before they are built: a manifest or attribute text of
// 100,000 nested arrays is an error, not a stack overflow in a later walk over it.
json parse_limited(const std::string& text, int max_depth) {
  return json::parse(text, [max_depth](int depth, json::parse_event_t, json&) {
    if (depth > max_depth) throw TooDeep{};
    return true;
  });
}

// The depth of a value already built (for attributes that come as json, not text).
int depth_of(const json& root, int limit) {
  std::vector<std::pair<const json*, int>> todo{{&root, 1}};
  int deepest = 0;
  while (!todo.empty()) {
    auto [j, d] = todo.back();
    todo.pop_back();
    deepest = std::max(deepest, d);
    if (deepest > limit) return deepest;
    if (j->is_structured())
      for (const json& child : *j) todo.push_back({&child, d + 1});
  }
  return deepest;
}

struct Problem {
  std::string what;
};

[[noreturn]] void bad(const std::string& what) { throw Problem{what}; }

const json& member(const json& obj, const char* key, const std::string& where) {
  auto it = obj.find(key);
  if (it == obj.end()) bad(where + "has no '" + key + "'");
  return *it;
}

std::string text_of(const json& j, const std::string& what) {
  if (!j.is_string()) bad(what + " is not a string");
  return j.get<std::string>();
}

uint64_t unsigned_of(const json& j, const std::string& what) {
  if (!j.is_number_unsigned() && !(j.is_number_integer() && j.get<int64_t>() >= 0))
    bad(what + " is not a non-negative integer");
  return j.get<uint64_t>();
}

double finite_of(const json& j, const std::string& what) {
  if (!j.is_number()) bad(what + " is not a number");
  double v = j.get<double>();
  if (!std::isfinite(v)) bad(what + " is not finite");
  return v;
}

uint64_t checksum_of(const json& j, const std::string& what) {
  std::string s = text_of(j, what);
  bool ok = s.size() == 16;
  for (char c : s) ok = ok && std::isxdigit(static_cast<unsigned char>(c)) && !std::isupper(static_cast<unsigned char>(c));
  if (!ok) bad(what + " is not 16 lowercase hex digits");
  return std::stoull(s, nullptr, 16);
}

DType dtype_named(const std::string& s, const std::string& what) {
  if (std::optional<DType> t = dtype_from_name(s)) return *t;
  bad(what + " has unknown dtype '" + s + "'");
}

IndexKind index_kind_from_name(const std::string& s, const std::string& what) {
  if (s == "quantile") return IndexKind::quantile;
  if (s == "none") return IndexKind::none;
  bad(what + " has unknown index kind '" + s + "'");
}

Box box_from(const json& j, const std::string& where) {
  if (!j.is_array() || j.size() != 2 || !j[0].is_array() || !j[1].is_array() || j[0].size() != 3 || j[1].size() != 3)
    bad(where + "bounds are not [[xmin, ymin, zmin], [xmax, ymax, zmax]]");
  Box b{};
  for (int a = 0; a < 3; ++a) {
    b.lo[a] = finite_of(j[0][size_t(a)], where + "bounds");
    b.hi[a] = finite_of(j[1][size_t(a)], where + "bounds");
    if (b.lo[a] > b.hi[a]) bad(where + "bounds have min > max");
  }
  return b;
}

json box_json(const Box& b) { return json::array({{b.lo[0], b.lo[1], b.lo[2]}, {b.hi[0], b.hi[1], b.hi[2]}}); }

SpeciesEntry species_from(const std::string& name, const json& sp, int64_t index, const std::string& at) {
  const std::string where = at + "species '" + printable(name) + "': ";
  if (!valid_species_name(name)) bad(at + "species name '" + printable(name) + "' is invalid");
  if (!sp.is_object()) bad(where + "is not an object");
  SpeciesEntry e;
  e.name = name;
  e.file = text_of(member(sp, "file", where), where + "file");
  // Files live where the writers put them: this also keeps every path inside the dataset.
  bool is_index = e.file == species_index_name(index, name);
  if (!is_index && e.file != species_file_name(index, name))
    bad(where + "file '" + printable(e.file) + "' is not " + species_file_name(index, name) + " or " +
        species_index_name(index, name));
  auto parts = sp.find("parts");
  uint64_t np = parts == sp.end() ? 1 : unsigned_of(*parts, where + "parts");
  if (np == 0 || np > (uint64_t(1) << 31)) bad(where + "has " + std::to_string(np) + " parts");
  if (!is_index && np != 1) bad(where + "a single particle file cannot have " + std::to_string(np) + " parts");
  e.parts = uint32_t(np);
  e.count = unsigned_of(member(sp, "count", where), where + "count");
  e.bounds = box_from(member(sp, "bounds", where), where);
  const json& cols = member(sp, "columns", where);
  if (!cols.is_array() || cols.empty() || cols.size() > 65535) bad(where + "columns are not a list of 1 to 65535 columns");
  for (const json& c : cols) {
    if (!c.is_object()) bad(where + "a column is not an object");
    ColumnSpec cs;
    cs.name = text_of(member(c, "name", where + "column: "), where + "column name");
    const std::string what = where + "column '" + printable(cs.name) + "'";
    cs.dtype = dtype_named(text_of(member(c, "dtype", what + ": "), what + " dtype"), what);
    // The extra index kind: "index" since manifest 1.2, "fine" before (the same values).
    auto kind = c.find("index");
    if (kind == c.end()) kind = c.find("fine");
    cs.index = kind == c.end() ? IndexKind::none : index_kind_from_name(text_of(*kind, what + " index kind"), what);
    auto unit = c.find("unit");
    cs.unit = unit == c.end() ? std::string() : text_of(*unit, what + " unit");
    auto bound = c.find("error_bound");
    if (bound != c.end()) {
      if (!bound->is_number() || !(bound->get<double>() >= 0.0 && bound->get<double>() < INFINITY))
        bad(what + " error_bound is not a finite number >= 0");
      cs.error_bound = bound->get<double>();
    }
    e.columns.push_back(std::move(cs));
  }
  std::string problem = spec::check_schema(e.columns);
  if (!problem.empty()) bad(where + printable(problem));
  auto sum = sp.find("checksum");
  if (sum != sp.end()) e.checksum = checksum_of(*sum, where + "checksum");
  auto psums = sp.find("part_checksums");
  if (psums != sp.end()) {
    if (!is_index || !psums->is_array() || psums->size() != e.parts)
      bad(where + "part_checksums must list one checksum per part of a step index");
    for (const json& s : *psums) e.part_checksums.push_back(checksum_of(s, where + "part checksum"));
  }
  return e;
}

FieldEntry field_from(const std::string& name, const json& f, int64_t index, const std::string& at) {
  const std::string where = at + "field '" + printable(name) + "': ";
  if (!valid_species_name(name)) bad(at + "field name '" + printable(name) + "' is invalid");
  if (!f.is_object()) bad(where + "is not an object");
  FieldEntry e;
  e.name = name;
  e.file = text_of(member(f, "file", where), where + "file");
  if (e.file != field_file_name(index, name)) bad(where + "file '" + printable(e.file) + "' is not " + field_file_name(index, name));
  e.dtype = dtype_named(text_of(member(f, "dtype", where), where + "dtype"), where + "dtype");
  const uint64_t ndim = unsigned_of(member(f, "ndim", where), where + "ndim");
  if (ndim < 1 || ndim > 3) bad(where + "ndim is not 1, 2 or 3");
  e.ndim = int(ndim);
  const json& dims = member(f, "dims", where);
  if (!dims.is_array() || dims.size() != 3) bad(where + "dims are not 3 numbers (x, y, z)");
  for (size_t a = 0; a < 3; ++a) {
    e.dims[a] = unsigned_of(dims[a], where + "dims");
    if (e.dims[a] == 0 || (int(a) >= e.ndim && e.dims[a] != 1)) bad(where + "dims do not fit a " + std::to_string(e.ndim) + "-D grid");
  }
  auto comps = f.find("components");
  if (comps != f.end()) {
    if (!comps->is_array() || comps->size() > 64) bad(where + "components are not a list of at most 64 names");
    for (const json& c : *comps) e.components.push_back(text_of(c, where + "component"));
  }
  auto geometry = f.find("geometry");  // since manifest 1.5; absent: Cartesian
  if (geometry != f.end()) {
    std::string problem;
    e.geometry = fields::Geometry::of(*geometry, problem);
    if (!problem.empty()) bad(where + problem);
  }
  auto parts = f.find("parts");  // since manifest 1.4
  if (parts == f.end()) {
    e.checksum = checksum_of(member(f, "checksum", where), where + "checksum");
  } else {
    const uint64_t np = unsigned_of(*parts, where + "parts");
    if (np < 2 || np > (uint64_t(1) << 20)) bad(where + "has " + std::to_string(np) + " parts (2 to 2^20)");
    if (f.contains("checksum")) bad(where + "a field in parts has part_checksums, not a checksum");
    const json& sums = member(f, "part_checksums", where);
    if (!sums.is_array() || sums.size() != np) bad(where + "part_checksums must list one checksum per part");
    for (const json& s : sums) e.part_checksums.push_back(checksum_of(s, where + "part checksum"));
  }
  return e;
}


StepEntry step_from(const json& s) {
  if (!s.is_object()) bad("a step is not an object");
  const json& jindex = member(s, "index", "a step ");
  if (!jindex.is_number_integer() || (jindex.is_number_unsigned() && jindex.get<uint64_t>() > uint64_t(INT64_MAX)))
    bad("a step index is not a 64-bit integer");
  StepEntry st;
  st.index = jindex.get<int64_t>();
  const std::string at = "step " + std::to_string(st.index) + ": ";
  st.time = finite_of(member(s, "time", at), at + "time");
  auto attrs = s.find("attributes");
  if (attrs != s.end()) {
    if (!attrs->is_object()) bad(at + "attributes are not an object");
    st.attributes = *attrs;
  }
  const json& species = member(s, "species", at);
  if (!species.is_object()) bad(at + "species are not an object");
  for (auto& [name, sp] : species.items()) st.species.push_back(species_from(name, sp, st.index, at));
  auto fields = s.find("fields");  // since manifest 1.3
  if (fields != s.end()) {
    if (!fields->is_object()) bad(at + "fields are not an object");
    for (auto& [name, f] : fields->items()) st.fields.push_back(field_from(name, f, st.index, at));
  }
  if (st.species.empty() && st.fields.empty()) bad(at + "holds no species and no field");
  return st;
}

// An entry of "skipped" (manifest 1.7).
SkippedStep skipped_from(const json& s) {
  if (!s.is_object()) bad("a skipped step is not an object");
  const json& jindex = member(s, "index", "a skipped step ");
  if (!jindex.is_number_integer() || (jindex.is_number_unsigned() && jindex.get<uint64_t>() > uint64_t(INT64_MAX)))
    bad("a skipped step's index is not a 64-bit integer");
  SkippedStep k;
  k.index = jindex.get<int64_t>();
  const std::string at = "skipped step " + std::to_string(k.index) + ": ";
  k.time = finite_of(member(s, "time", at), at + "time");
  k.reason = text_of(member(s, "reason", at), at + "reason");
  return k;
}

}  // namespace

const FieldEntry& StepEntry::find_field(const std::string& field) const {
  for (const FieldEntry& f : fields)
    if (f.name == field) return f;
  const std::string names = joined(fields, [](const FieldEntry& f) { return f.name; });
  throw UsageError("step " + std::to_string(index) + " has no field '" + field + "' (fields: " +
                   (names.empty() ? "none" : names) + ")");
}

const SpeciesEntry& StepEntry::find(const std::string& species) const {
  for (const SpeciesEntry& s : this->species)
    if (s.name == species) return s;
  throw UsageError("step " + std::to_string(index) + " has no species '" + species + "' (species: " +
                   joined(this->species, [](const SpeciesEntry& s) { return s.name; }) + ")");
}

bool valid_species_name(const std::string& s) { return valid_name(s); }

std::string species_file_name(int64_t index, const std::string& species) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%06lld", static_cast<long long>(index));
  return std::string("steps/") + buf + "/" + species + ".mpf";
}

std::string field_file_name(int64_t index, const std::string& field) {
  std::string f = species_file_name(index, field);
  return f.substr(0, f.size() - 4) + ".mfd";
}

std::string field_part_name(const std::string& file, size_t k) {
  char buf[32];
  std::snprintf(buf, sizeof buf, ".p%06zu.mfd", k);
  return file.substr(0, file.size() - 4) + buf;
}

std::vector<std::string> FieldEntry::files() const {
  if (part_checksums.empty()) return {file};
  std::vector<std::string> out;
  for (size_t k = 0; k < part_checksums.size(); ++k) out.push_back(field_part_name(file, k));
  return out;
}

std::string species_index_name(int64_t index, const std::string& species) {
  std::string f = species_file_name(index, species);
  return f.substr(0, f.size() - 4) + ".mpi";
}

json parse_attributes(const std::string& text, const std::string& what) {
  json j;
  try {
    j = parse_limited(text, kMaxAttributeDepth);
  } catch (const TooDeep&) {
    throw UsageError(what + " are nested more than " + std::to_string(kMaxAttributeDepth) + " levels deep");
  } catch (const json::exception& e) {
    throw UsageError(what + " are not valid JSON: " + printable(e.what()));
  }
  check_attributes(j, what);
  return j;
}

void check_attributes(const json& a, const std::string& what) {
  if (!a.is_object()) throw UsageError(what + " must be a JSON object");
  if (depth_of(a, kMaxAttributeDepth) > kMaxAttributeDepth)
    throw UsageError(what + " are nested more than " + std::to_string(kMaxAttributeDepth) + " levels deep");
}

std::string seal_manifest_text(const std::string& text) {
  json j;
  try {
    j = parse_limited(text, kMaxAttributeDepth + 4);
  } catch (const TooDeep&) {
    throw UsageError("the manifest's values are nested more than " + std::to_string(kMaxAttributeDepth) + " levels deep");
  } catch (const json::exception& e) {
    throw UsageError("not a manifest to seal: " + printable(e.what()));
  }
  if (!j.is_object() || j.empty()) throw UsageError("not a manifest to seal: not a JSON object with members");
  j.erase("checksum");
  if (j.empty()) throw UsageError("not a manifest to seal: no member besides its checksum");
  return seal::sealed_text(j.dump(1) + "\n");
}

Manifest Manifest::read(const std::string& dir) {
  const std::string path = path_in(dir, kFileName);
  return parse(read_regular_file(path, "manifest", kMaxBytes), path);
}

Manifest Manifest::parse(const std::string& text, const std::string& path) {
  Manifest m;
  try {
    // The checksum first: no byte of a sealed manifest is used before it is checked.
    const bool is_sealed = seal::sealed(text);
    if (is_sealed && kCheckSum) {
      const uint64_t said = seal::stated(text), sum = seal::computed(text);
      if (said != sum)
        bad("its checksum is " + checksum_text(said) + " but its contents hash to " + checksum_text(sum) +
            " (the manifest is damaged, or was edited by hand: an edit must be sealed again)");
    }
    // Attributes sit 3 levels below the top (steps, a step, its attributes).
    json j = parse_limited(text, kMaxAttributeDepth + 4);
    if (!j.is_object()) bad("not a JSON object");
    auto format = j.find("format");
    if (format == j.end() || *format != "motes-dataset") bad("not a motes dataset manifest");
    const json& version = member(j, "version", "the manifest ");
    if (!version.is_array() || version.size() != 2 || !version[0].is_number_integer() || !version[1].is_number_integer())
      bad("version is not [major, minor]");
    int major = version[0].get<int>();
    if (major != kMajor)
      bad("manifest version " + std::to_string(major) + " is not supported (this motes reads " +
          std::to_string(kMajor) + ".x)");
    const int64_t minor = version[1].get<int64_t>();
    if (!is_sealed && (minor >= kSealedMinor || j.contains("checksum")))
      bad("a manifest of version 1." + std::to_string(minor) +
          " begins with its checksum's line, and this one does not (damaged, or rewritten by another program)");
    if (is_sealed && j.value("checksum", json()) != json(seal::stated_text(text)))
      bad("holds a second checksum member");
    auto id = j.find("id");
    if (id != j.end()) {
      m.id = text_of(*id, "the dataset id");
      if (m.id.size() != 32 || !seal::lower_hex(m.id)) bad("the dataset id is not 32 lowercase hex digits");
    } else if (minor >= kSealedMinor) {
      bad("has no dataset id ('id')");
    }
    auto attrs = j.find("attributes");
    if (attrs != j.end()) {
      if (!attrs->is_object()) bad("dataset attributes are not an object");
      m.attributes = *attrs;
    }
    const json& steps = member(j, "steps", "the manifest ");
    if (!steps.is_array()) bad("steps are not a list");
    for (const json& s : steps) m.steps.push_back(step_from(s));
    std::stable_sort(m.steps.begin(), m.steps.end(), [](const StepEntry& a, const StepEntry& b) { return a.index < b.index; });
    for (size_t i = 1; i < m.steps.size(); ++i)
      if (m.steps[i].index == m.steps[i - 1].index) bad("step " + std::to_string(m.steps[i].index) + " is listed twice");
    auto skipped = j.find("skipped");  // since manifest 1.7
    if (skipped != j.end()) {
      if (!skipped->is_array()) bad("skipped steps are not a list");
      for (const json& s : *skipped) m.skipped.push_back(skipped_from(s));
      std::stable_sort(m.skipped.begin(), m.skipped.end(),
                       [](const SkippedStep& a, const SkippedStep& b) { return a.index < b.index; });
      for (size_t i = 0; i < m.skipped.size(); ++i) {
        const int64_t index = m.skipped[i].index;
        if (i > 0 && index == m.skipped[i - 1].index) bad("skipped step " + std::to_string(index) + " is listed twice");
        auto written = std::lower_bound(m.steps.begin(), m.steps.end(), index,
                                        [](const StepEntry& s, int64_t i) { return s.index < i; });
        if (written != m.steps.end() && written->index == index)
          bad("step " + std::to_string(index) + " is listed both as written and as skipped");
      }
    }
  } catch (const Problem& p) {
    throw FormatError(path + ": " + p.what);
  } catch (const TooDeep&) {
    throw FormatError(path + ": values are nested more than " + std::to_string(kMaxAttributeDepth) + " levels deep");
  } catch (const json::exception& e) {
    throw FormatError(path + ": invalid manifest: " + printable(e.what()));
  }
  return m;
}

std::string Manifest::encode() const {
  json m;
  m["format"] = "motes-dataset";
  m["version"] = {kMajor, skipped.empty() ? kSkippedMinor - 1 : kSkippedMinor};
  if (!id.empty()) m["id"] = id;
  m["attributes"] = attributes;
  json jsteps = json::array();
  for (const StepEntry& s : steps) {
    json js;
    js["index"] = s.index;
    js["time"] = s.time;
    js["attributes"] = s.attributes;
    json sp = json::object();
    for (const SpeciesEntry& e : s.species) {
      json cols = json::array();
      for (const ColumnSpec& c : e.columns) {
        json jc = {{"name", c.name}, {"dtype", dtype_name(c.dtype)},
                   {"index", c.index == IndexKind::quantile ? "quantile" : "none"}};
        if (!c.unit.empty()) jc["unit"] = c.unit;
        if (c.error_bound > 0) jc["error_bound"] = c.error_bound;
        cols.push_back(jc);
      }
      json je = {{"file", e.file}, {"count", e.count}, {"bounds", box_json(e.bounds)}, {"columns", cols}};
      if (e.parts != 1) je["parts"] = e.parts;
      if (e.checksum) je["checksum"] = checksum_text(*e.checksum);
      if (!e.part_checksums.empty()) {
        json ps = json::array();
        for (uint64_t c : e.part_checksums) ps.push_back(checksum_text(c));
        je["part_checksums"] = ps;
      }
      sp[e.name] = je;
    }
    js["species"] = sp;
    if (!s.fields.empty()) {
      json jf = json::object();
      for (const FieldEntry& f : s.fields) {
        json& jfe = jf[f.name] = {{"file", f.file}, {"dtype", dtype_name(f.dtype)}, {"ndim", f.ndim},
                                  {"dims", {f.dims[0], f.dims[1], f.dims[2]}}, {"components", f.components}};
        if (!f.geometry.cartesian_grid()) jfe["geometry"] = f.geometry.json();
        if (f.part_checksums.empty()) {
          jfe["checksum"] = checksum_text(f.checksum);
        } else {
          jfe["parts"] = f.part_checksums.size();
          json ps = json::array();
          for (uint64_t c : f.part_checksums) ps.push_back(checksum_text(c));
          jfe["part_checksums"] = ps;
        }
      }
      js["fields"] = jf;
    }
    jsteps.push_back(js);
  }
  m["steps"] = jsteps;
  if (!skipped.empty()) {
    json js = json::array();
    for (const SkippedStep& k : skipped) js.push_back({{"index", k.index}, {"time", k.time}, {"reason", k.reason}});
    m["skipped"] = js;
  }
  return seal::sealed_text(m.dump(1) + "\n");
}

}  // namespace motes
