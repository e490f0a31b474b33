#include "motes/query/estimate.hpp"

#include <algorithm>

namespace motes {

namespace {

enum class Overlap { none, part, all };

Overlap overlap(const Box& node, const Box& box) {
  bool inside = true;
  for (int a = 0; a < 3; ++a) {
    if (node.hi[a] < box.lo[a] || node.lo[a] > box.hi[a]) return Overlap::none;
    inside &= node.lo[a] >= box.lo[a] && node.hi[a] <= box.hi[a];
  }
  return inside ? Overlap::all : Overlap::part;
}

// The share of the node's bounding box's volume inside the box (they overlap).
double volume_fraction(const Box& node, const Box& box) {
  double f = 1.0;
  for (int a = 0; a < 3; ++a) {
    const double extent = node.hi[a] - node.lo[a];
    if (extent > 0) f *= std::clamp((std::min(node.hi[a], box.hi[a]) - std::max(node.lo[a], box.lo[a])) / extent, 0.0, 1.0);
  }
  return f;
}

}  // namespace

std::vector<double> level_counts(const ParticleFile& file, const std::optional<Box>& box) {
  const Levels& lv = file.levels();
  std::vector<double> out(lv.level_count(), 0.0);
  if (!box) {
    for (uint32_t l = 0; l < lv.level_count(); ++l) out[l] = double(lv.level_start[l + 1] - lv.level_start[l]);
    return out;
  }
  if (file.particle_count() == 0) return out;
  const LevelRuns& lr = lv.runs(file.nodes());
  const ColumnIndex* axis[3] = {&file.index(file.column("x")), &file.index(file.column("y")), &file.index(file.column("z"))};
  auto add_runs = [&](uint32_t first_node, uint32_t end_node, double scale) {
    for (uint32_t r = lr.run_begin[first_node]; r < lr.run_begin[end_node]; ++r)
      out[lr.runs[r].level] += scale * double(lr.runs[r].count);
  };
  const uint32_t n = uint32_t(file.nodes().size());
  for (uint32_t i = 0; i < n;) {
    if (lv.subtree_count[i] == 0) {
      i = lv.subtree_end[i];
      continue;
    }
    Box node;
    for (int a = 0; a < 3; ++a) node.lo[a] = axis[a]->node_min[i], node.hi[a] = axis[a]->node_max[i];
    switch (overlap(node, *box)) {
      case Overlap::none:
        i = lv.subtree_end[i];
        break;
      case Overlap::all:  // the runs of a subtree's nodes are contiguous
        add_runs(i, lv.subtree_end[i], 1.0);
        i = lv.subtree_end[i];
        break;
      case Overlap::part:
        add_runs(i, i + 1, volume_fraction(node, *box));
        ++i;  // into the children (a leaf's next node is past its subtree)
        break;
    }
  }
  return out;
}

std::vector<std::vector<double>> level_counts(const Collection& collection, const std::optional<Box>& box) {
  std::vector<std::vector<double>> out(collection.part_count());
  const StepIndex* index = collection.index();
  for (size_t k = 0; k < collection.part_count(); ++k) {
    if (box && index && overlap(index->parts()[k].bounds, *box) == Overlap::none) continue;
    out[k] = level_counts(*collection.part(k), box);
  }
  return out;
}

}  // namespace motes
