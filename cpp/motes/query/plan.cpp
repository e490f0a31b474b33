// Query planning: which parts to read (pruned through the step index) and, per part,
// which runs of points to test or take whole (pruned through the file's node index).
#include <algorithm>
#include <cmath>

#include "motes/query/engine.hpp"
#include "motes/query/indexed.hpp"
#include "motes/query/prune.hpp"

namespace motes {

std::vector<uint32_t> Query::parts_to_read() {
  const StepIndex* index = collection_->index();
  std::vector<uint32_t> out;
  if (quality_to_ <= 0.0 || quality_from_ >= quality_to_) return out;
  if (!index || !predicate_) {
    for (uint32_t k = 0; k < collection_->part_count(); ++k) out.push_back(k);
    return out;
  }
  const auto& nodes = index->nodes();
  Pruner pruner(indexes_of(index->columns()));
  for (uint32_t i = 0; i < nodes.size();) {
    if (pruner.eval(*predicate_, i) == NodeMatch::none) {
      counters_.parts_pruned += nodes[i].part_count;
      i = nodes[i].subtree_end;
      continue;
    }
    if (nodes[i].is_leaf()) out.push_back(nodes[i].first_part);
    ++i;
  }
  return out;
}

std::vector<Query::Task> Query::plan(const ParticleFile& f, QueryCounters& counters) {
  const Levels& lv = f.levels();
  const auto& nodes = f.nodes();
  uint32_t level_begin_ = levels_for_quality(quality_from_, lv.level_count());
  uint32_t level_end_ = levels_for_quality(quality_to_, lv.level_count());
  sample_ = {};
  if (fraction_ && f.particle_count() > 0) {
    // round(f * N) particles: the whole levels before level l, and k of level l's rows.
    const uint64_t want = std::min<uint64_t>(f.particle_count(), uint64_t(std::floor(*fraction_ * double(f.particle_count()) + 0.5)));
    uint32_t l = 0;
    while (l < lv.level_count() && lv.level_start[l + 1] < want) ++l;
    level_begin_ = 0;
    level_end_ = want == 0 ? 0 : l + 1;
    if (want > 0) sample_ = LevelSample(lv.level_start[l], lv.level_start[l + 1] - lv.level_start[l], want - lv.level_start[l]);
  }
  if (level_begin_ >= level_end_ || f.particle_count() == 0) return {};
  if (!predicate_) {
    // Everything matches: the selected levels are one contiguous range (a sampled level, tested).
    uint64_t b = lv.level_start[level_begin_], e = lv.level_start[level_end_];
    if (!sample_.active()) {
      counters.points_taken_whole = e - b;
      return {Task{b, e - b, true}};
    }
    std::vector<Task> out;
    if (sample_.start() > b) out.push_back({b, sample_.start() - b, true});
    counters.points_taken_whole = sample_.start() - b;
    for (uint64_t s = sample_.start(); s < e; s += kScanBlock) out.push_back({s, std::min(kScanBlock, e - s), false});
    return out;
  }
  const uint64_t range_begin = lv.level_start[level_begin_], range = lv.level_start[level_end_] - range_begin;
  // A value index (the id index for `id in (...)`, a tail index for a threshold in a tail)
  // that names at most `limit` candidate rows: those rows alone, taken whole when the index
  // answered the whole predicate, else tested. Tried instead of a scan (at most range / 16
  // rows), and when the leaves probed below price the tree's tests at 32 times its rows;
  // where the tree prunes well it costs about as much as the index and keeps runs whole.
  auto by_index = [&](uint64_t limit) -> std::optional<std::vector<Task>> {
    std::optional<IndexedRows> ix = indexed_rows(f, *predicate_, limit);
    if (!ix) return std::nullopt;
    counters.points_tested = counters.points_taken_whole = 0;  // a traversal given up counts nothing
    std::vector<std::vector<Task>> tasks(1);
    tasks[0].reserve(ix->rows.size());
    for (uint64_t r : ix->rows) {
      if (r < range_begin || r - range_begin >= range) continue;
      const bool whole = ix->exact && !(sample_.active() && r >= sample_.start());
      std::vector<Task>& t = tasks[0];
      if (!t.empty() && t.back().all == whole && t.back().start + t.back().count == r) ++t.back().count;
      else t.push_back({r, 1, whole});
      (whole ? counters.points_taken_whole : counters.points_tested) += 1;
    }
    counters.index_rows += ix->rows.size();
    ++(ix->index == IndexedRows::Index::id ? counters.id_index_parts : counters.tail_index_parts);
    if (counters.points_tested == 0) return std::move(tasks[0]);  // all whole, adjacent rows joined already
    return coalesce(tasks);
  };
  auto scan_all = [&] {
    if (std::optional<std::vector<Task>> t = by_index(range / 16)) return std::move(*t);
    counters.scanned = true;
    counters.points_tested = range;
    counters.points_taken_whole = 0;
    std::vector<Task> blocks;
    for (uint64_t b = 0; b < range; b += kScanBlock) blocks.push_back({range_begin + b, std::min(kScanBlock, range - b), false});
    return blocks;
  };
  // Two plans, priced from the index alone before any value is read: test the points of
  // the nodes the tree cannot rule out (random access, cheap when the tree prunes well,
  // as for a tail that sits in a few regions), or scan the selected levels in order
  // (sequential; for columns with quantile codes the scan reads their 1-byte codes first).
  // Leaves sampled across the tree price the first plan before any traversal: when the
  // predicate leaves more than a quarter of their points to test (a column that does not
  // follow space), scan at once. Otherwise traverse, and stop as soon as the points to
  // test outnumber range / 8: past that the scan is cheaper.
  const uint64_t scan_above = range / 8;
  Pruner pruner(indexes_for(f, *predicate_));
  {
    constexpr uint32_t kProbes = 128;
    uint64_t probed = 0, to_test = 0;
    const uint32_t nn = uint32_t(nodes.size());
    for (uint32_t k = 0, last = UINT32_MAX; k < kProbes && nn > 0; ++k) {
      uint32_t i = uint32_t(uint64_t(k) * nn / kProbes);
      while (i < nn && !nodes[i].is_leaf()) ++i;
      if (i >= nn || i == last) continue;
      last = i;
      probed += nodes[i].own_count;
      if (pruner.eval(*predicate_, i) == NodeMatch::some) to_test += nodes[i].own_count;
    }
    if (probed >= 1024 && to_test * 4 > probed) return scan_all();
    // The tree would leave about to_test / probed of the points to test: a value index
    // naming 32 times fewer rows is cheaper than the traversal and those tests.
    if (probed > 0)
      if (std::optional<std::vector<Task>> t = by_index(std::min(range / 16, to_test * range / probed / 32))) return std::move(*t);
  }
  // Runs of one level are met in preorder, which is their file order, so
  // bucketing tasks by level yields them sorted by position without a sort.
  std::vector<std::vector<Task>> by_level(level_end_);
  auto take_runs = [&](uint32_t node, bool all) {
    for (uint32_t r = lv.run_begin[node]; r < lv.run_begin[node + 1]; ++r) {
      const Run& run = lv.runs[r];
      if (run.level < level_begin_ || run.level >= level_end_) continue;
      const bool whole = all && !(sample_.active() && run.start >= sample_.start());  // sampled rows are tested
      by_level[run.level].push_back({run.start, run.count, whole});
      (whole ? counters.points_taken_whole : counters.points_tested) += run.count;
    }
  };
  for (uint32_t i = 0, visited = 0; i < nodes.size();) {
    if ((++visited & 4095) == 0) cancel_.check();  // a tree of millions of nodes takes a while
    if (lv.subtree_count[i] == 0 || lv.depth[i] >= level_end_) {
      i = lv.subtree_end[i];
      continue;
    }
    ++counters.nodes_visited;
    NodeMatch t = pruner.eval(*predicate_, i);
    if (t == NodeMatch::none) {
      ++counters.nodes_pruned;
      i = lv.subtree_end[i];
    } else if (t == NodeMatch::all) {
      ++counters.nodes_all;
      // Nodes at depth >= level_end_ hold no run of the selected levels (the test above),
      // nor do their subtrees: skipped whole (a coarse read of a large box visits few).
      for (uint32_t k = i; k < lv.subtree_end[i];) {
        if (lv.depth[k] >= level_end_) {
          k = lv.subtree_end[k];
          continue;
        }
        take_runs(k, true);
        ++k;
      }
      i = lv.subtree_end[i];
    } else {
      take_runs(i, false);
      ++i;
    }
    if (counters.points_tested > scan_above) return scan_all();
  }
  // The exact test decides every point either way: both plans give the same result.
  return coalesce(by_level);
}

// Concatenates the levels' tasks (each sorted, levels ascending: file order) and
// joins nearby runs that need testing into blocks: fewer, longer loops over
// contiguous memory. Points in the gaps lie inside the selected levels (one
// contiguous file range) in pruned nodes, so the exact test rejects them;
// runs taken whole are joined only with adjacent whole runs.
std::vector<Query::Task> Query::coalesce(const std::vector<std::vector<Task>>& by_level) {
  constexpr uint64_t kMaxGap = 64;
  std::vector<Task> out;
  for (const auto& level : by_level) {
    for (const Task& t : level) {
      if (!out.empty() && out.back().all == t.all) {
        Task& b = out.back();
        uint64_t end = b.start + b.count;
        if (t.all ? end == t.start : (t.start - end <= kMaxGap && t.start + t.count - b.start <= kScanBlock)) {
          b.count = t.start + t.count - b.start;
          continue;
        }
      }
      out.push_back(t);
    }
  }
  return out;
}

}  // namespace motes
