// Opening a grid field of one step as its manifest entry describes it: its one file, or
// the part files a parallel write made (fields/file.hpp, docs/format.md §14.7).
#pragma once

#include <memory>
#include <string>

#include "motes/dataset/manifest.hpp"
#include "motes/fields/file.hpp"

namespace motes {

// Opens field `entry` of step `step` of the dataset in `dir`, checking every file's header
// checksum against the manifest and its grid (dtype, axes, dims, components) against the
// entry. FormatError naming the file and what differs.
std::shared_ptr<fields::FieldFile> open_field(const std::string& dir, int64_t step, const FieldEntry& entry);

}  // namespace motes
