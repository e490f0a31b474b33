#include "motes/query/read_plan.hpp"

#include <algorithm>
#include <cmath>

#include "motes/query/estimate.hpp"
#include "motes/query/prune.hpp"

namespace motes {

namespace {

// Whether the predicate can hold somewhere in a file: the root node of its tree.
bool root_may_match(const ParticleFile& file, const Expr& predicate) {
  if (file.nodes().empty()) return true;
  return Pruner(indexes_for(file, predicate)).eval(predicate, 0) != NodeMatch::none;
}

// Whether box `b` holds box `part` whole.
bool inside(const Box& part, const Box& b) {
  for (int a = 0; a < 3; ++a)
    if (!(part.lo[a] >= b.lo[a] && part.hi[a] <= b.hi[a])) return false;
  return true;
}

// The rows of a part file a read of `levels` estimates (per level of detail) takes.
double rows_read(const ParticleFile& file, const Query& q, const std::vector<double>& levels) {
  const LevelsRead r = q.levels_read(file);
  double rows = 0;
  for (uint32_t l = r.begin; l < r.end; ++l) {
    const bool sampled = r.sample.active() && l + 1 == r.end;
    rows += sampled ? levels[l] * double(r.sample.taken()) / double(r.sample.size()) : levels[l];
  }
  return rows;
}

}  // namespace

ReadPlan plan_reads(std::shared_ptr<const Collection> collection, const QuerySpec& spec, bool level_estimates) {
  const Query q(collection, spec);
  const Query::Parts parts = q.parts_to_read();
  ReadPlan out;
  out.pruned = parts.pruned;
  // Without a box, or for a part the box holds whole, the estimate is exact and known
  // without opening the part, unless the quality range leaves out some levels (whose sizes
  // only the part's tree holds). A fraction comes with the whole quality range (the Query
  // refuses both).
  const bool all_levels = spec.quality_from <= 0.0 && spec.quality_to >= 1.0;
  const StepIndex* index = collection->index();
  for (uint32_t k : parts.read) {
    PartRead p;
    p.part = k;
    p.count = collection->part_particle_count(k);
    if (p.count == 0) {
      ++out.pruned;
      continue;
    }
    std::shared_ptr<const ParticleFile> file;
    if (!index && q.predicate()) {  // a single file: its root node prunes as a step index would
      file = collection->part(k);
      if (!root_may_match(*file, *q.predicate())) {
        ++out.pruned;
        continue;
      }
    }
    const Box& bounds = index ? index->parts()[k].bounds : collection->bounds();
    const bool known = !level_estimates && all_levels && (!spec.box || inside(bounds, *spec.box));
    if (known) {
      p.rows = spec.fraction ? std::min(double(p.count), std::floor(*spec.fraction * double(p.count) + 0.5))
                             : double(p.count);
    } else {
      if (!file) file = collection->part(k);
      std::vector<double> levels = level_counts(*file, spec.box);
      p.rows = rows_read(*file, q, levels);
      if (level_estimates) p.levels = std::move(levels);
    }
    out.parts.push_back(std::move(p));
  }
  return out;
}

}  // namespace motes
