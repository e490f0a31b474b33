#include "motes/dataset/fields.hpp"

#include "motes/core/errors.hpp"
#include "motes/core/text.hpp"

namespace motes {

std::shared_ptr<fields::FieldFile> open_field(const std::string& dir, int64_t step, const FieldEntry& entry) {
  std::vector<std::string> paths;
  for (const std::string& f : entry.files()) paths.push_back(dir + "/" + f);
  auto file = fields::FieldFile::open(paths);
  const std::string what = "field '" + entry.name + "' of step " + std::to_string(step);
  for (size_t k = 0; k < file->part_count(); ++k) {
    const uint64_t want = entry.part_checksums.empty() ? entry.checksum : entry.part_checksums[k];
    if (file->header_checksum(k) != want)
      throw FormatError(file->path(k) + ": " + what + ": its header checksum is " + checksum_text(file->header_checksum(k)) +
                        ", the manifest says " + checksum_text(want) + " (a file copied over another?)");
  }
  const fields::FieldSpec& s = file->spec();
  if (s.name != entry.name || s.dtype != entry.dtype || s.ndim != entry.ndim || s.dims != entry.dims ||
      s.components != entry.components || s.geometry != entry.geometry)
    throw FormatError(file->path() + ": " + what + ": the file describes another grid than the manifest");
  return file;
}

}  // namespace motes
