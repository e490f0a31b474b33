// Opening the particles of one species of one step as its manifest entry describes them.
#pragma once

#include <memory>
#include <string>

#include "motes/dataset/manifest.hpp"
#include "motes/particles/collection.hpp"

namespace motes {

// Opens species `entry` of step `step` of the dataset in `dir`, checking the files against
// the manifest: the header checksums it records (when it does: manifests 1.1+), the
// particle count, part count, bounds and schema. FormatError naming the file and what differs.
std::shared_ptr<const Collection> open_species(const std::string& dir, int64_t step, const SpeciesEntry& entry);

}  // namespace motes
