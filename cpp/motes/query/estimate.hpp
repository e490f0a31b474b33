// Estimates from the tree alone (node counts and position ranges; no value is read): how
// many particles of each level of detail lie inside a box, to choose a quality that
// fits a budget of points before running the query.
#pragma once

#include <optional>
#include <vector>

#include "motes/particles/collection.hpp"

namespace motes {

// Per level of `file`, the estimated number of its particles inside `box` (inclusive;
// none: every particle, exactly). Subtrees whose position ranges lie inside the box add
// their exact counts per level, subtrees outside are skipped, and the own points of a
// node that overlaps the box in part are scaled by the fraction of its bounding box's
// volume inside the box (an axis on which the node is flat counts as inside).
std::vector<double> level_counts(const ParticleFile& file, const std::optional<Box>& box);

// The same per part of a collection. A part the step index places wholly outside the box
// is not opened: its entry is empty (no particle on any level).
std::vector<std::vector<double>> level_counts(const Collection& collection, const std::optional<Box>& box);

}  // namespace motes
