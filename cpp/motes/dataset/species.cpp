#include "motes/dataset/species.hpp"
#include "motes/core/text.hpp"

namespace motes {

namespace {

bool same_box(const Box& a, const Box& b) {
  for (int k = 0; k < 3; ++k)
    if (a.lo[k] != b.lo[k] || a.hi[k] != b.hi[k]) return false;
  return true;
}

std::string schema_text(const std::vector<ColumnSpec>& s) {
  return joined(s, [](const ColumnSpec& c) { return c.name + ":" + dtype_name(c.dtype); });
}

// Step indexes (format 1.0) carry no error bounds: those are compared for single files only.
bool same_schema(const std::vector<ColumnSpec>& a, const std::vector<ColumnSpec>& b, bool bounds) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].name != b[i].name || a[i].dtype != b[i].dtype || a[i].index != b[i].index || a[i].unit != b[i].unit ||
        (bounds && a[i].error_bound != b[i].error_bound))
      return false;
  return true;
}

[[noreturn]] void wrong_file(const std::string& path, const std::string& owner, const std::string& what) {
  throw FormatError(path + ": not the file the manifest lists for " + owner + ": " + what +
                    " (the file was replaced, copied from elsewhere or damaged)");
}

}  // namespace

std::shared_ptr<const Collection> open_species(const std::string& dir, int64_t step, const SpeciesEntry& e) {
  const std::string path = dir + "/" + e.file;
  const std::string owner = "step " + std::to_string(step) + ", species '" + e.name + "'";
  std::shared_ptr<const Collection> c = Collection::open_pinned(path, owner, e.part_checksums);
  const uint64_t sum = c->header_checksum();
  if (e.checksum && *e.checksum != sum)
    wrong_file(path, owner, "its header checksum is " + checksum_text(sum) + ", the manifest says " + checksum_text(*e.checksum));
  if (c->particle_count() != e.count)
    wrong_file(path, owner, "it holds " + std::to_string(c->particle_count()) + " particles, the manifest says " +
                                std::to_string(e.count));
  if (c->part_count() != e.parts)
    wrong_file(path, owner, "it has " + std::to_string(c->part_count()) + " parts, the manifest says " + std::to_string(e.parts));
  if (!same_box(c->bounds(), e.bounds)) wrong_file(path, owner, "its bounds differ from the manifest's");
  if (!same_schema(c->schema(), e.columns, c->index() == nullptr))
    wrong_file(path, owner, "its columns (" + schema_text(c->schema()) + ") differ from the manifest's (" +
                                schema_text(e.columns) + ")");
  return c;
}

}  // namespace motes
