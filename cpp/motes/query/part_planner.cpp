// Query planning: which parts to read (pruned through the step index) and, per part,
// which runs of points to test or take whole (pruned through the file's node index).
#include <algorithm>
#include <cmath>

#include "motes/query/engine.hpp"
#include "motes/query/indexed.hpp"
#include "motes/query/prune.hpp"

namespace motes {

Query::Parts Query::parts_to_read() const {
  const StepIndex* index = collection_->index();
  Parts out;
  if (quality_to_ <= 0.0 || quality_from_ >= quality_to_) return out;
  if (!index || !predicate_) {
    for (uint32_t k = 0; k < collection_->part_count(); ++k) out.read.push_back(k);
    return out;
  }
  const auto& nodes = index->nodes();
  Pruner pruner(indexes_of(index->columns()));
  for (uint32_t i = 0; i < nodes.size();) {
    if (pruner.eval(*predicate_, i) == NodeMatch::none) {
      out.pruned += nodes[i].part_count;
      i = nodes[i].subtree_end;
      continue;
    }
    if (nodes[i].is_leaf()) out.read.push_back(nodes[i].first_part);
    ++i;
  }
  return out;
}

LevelsRead levels_read(const Levels& lv, uint64_t count, double quality_from, double quality_to,
                       std::optional<double> fraction) {
  LevelsRead out;
  out.begin = levels_for_quality(quality_from, lv.level_count());
  out.end = levels_for_quality(quality_to, lv.level_count());
  if (!fraction || count == 0) return out;
  const uint64_t want = std::min<uint64_t>(count, uint64_t(std::floor(*fraction * double(count) + 0.5)));
  uint32_t l = 0;
  while (l < lv.level_count() && lv.level_start[l + 1] < want) ++l;
  out.begin = 0;
  out.end = want == 0 ? 0 : l + 1;
  if (want > 0) out.sample = LevelSample(lv.positions(l, l + 1), want - lv.level_start[l]);
  return out;
}

bool Query::full_detail(const ParticleFile& f) const {
  const uint32_t n = f.level_count();
  return !fraction_ && levels_for_quality(quality_from_, n) == 0 && levels_for_quality(quality_to_, n) == n;
}

LevelsRead Query::levels_read(const ParticleFile& f) const {
  return motes::levels_read(f.levels(), f.particle_count(), quality_from_, quality_to_, fraction_);
}

// The plan of one part, phase by phase: the levels the read takes; without a predicate,
// those levels whole; with one, a price of the tree's plan from leaves probed across it,
// then a value index, a traversal of the tree, or a scan of the levels in order.
class Query::PartPlanner {
 public:
  PartPlanner(Query& q, const ParticleFile& f, QueryCounters& counters)
      : q_(q), f_(f), counters_(counters) {}

  std::vector<Task> plan() {
    cover_ = nullptr;
    choose_levels();
    if (level_begin_ >= level_end_ || f_.particle_count() == 0) return {};
    if (!q_.predicate_) return take_levels();
    const bool every_level = level_begin_ == 0 && level_end_ == f_.level_count();
    if (every_level) {  // the whole file: no tree needed
      ranges_ = {{0, f_.particle_count()}};
      range_ = f_.particle_count();
    } else {
      ranges_ = lv().positions(level_begin_, level_end_);
      range_ = lv().level_start[level_end_] - lv().level_start[level_begin_];
    }
    // Two plans, priced from the index alone before any value is read: test the points of
    // the nodes the tree cannot rule out (random access, cheap when the tree prunes well,
    // as for a tail that sits in a few regions), or scan the selected levels in order
    // (sequential; for columns with quantile codes the scan reads their 1-byte codes first).
    // Leaves sampled across the tree price the first plan before any traversal: when the
    // predicate leaves more than a quarter of their points to test (a column that does not
    // follow space), scan at once. Otherwise traverse, and stop as soon as the points to
    // test outnumber range / 8: past that the scan is cheaper.
    // A tail test its index answers from the cover reads a few contiguous runs: taken at
    // once over a full-detail read (a part of levels or a sample would need tests).
    if (every_level && !q_.sample_.active() && covered_by_tail(f_, *q_.predicate_))
      if (std::optional<std::vector<Task>> t = by_index(range_)) return std::move(*t);
    // A tail test with other tests that its cover decides (a tail in a box): the cover's
    // rows tested on its values, when that reads fewer bytes than any traversal must (the
    // node ranges of the tested columns) or the tail is tiny, and names at most range / 16.
    if (every_level && !q_.sample_.active())
      if (std::optional<IndexedRows> ix = covered_conjunction(f_, *q_.predicate_, [&](const CoveredConjunction& cost) {
            return cost.rows <= range_ / 16 && (cost.bytes <= traversal_floor() || cost.rows <= range_ / 256);
          }))
        return take(std::move(*ix));
    const Pruner pruner(indexes_for(f_, *q_.predicate_));
    const Probe p = probe_leaves(pruner);
    if (p.probed >= 1024 && p.to_test * 4 > p.probed) return scan();
    // The tree would leave about to_test / probed of the points to test: a value index
    // naming 32 times fewer rows is cheaper than the traversal and those tests.
    if (p.probed > 0)
      if (std::optional<std::vector<Task>> t = by_index(std::min(range_ / 16, p.to_test * range_ / p.probed / 32)))
        return std::move(*t);
    if (std::optional<std::vector<Task>> t = traverse(pruner)) return std::move(*t);
    return scan();
  }

 private:
  Query& q_;
  const ParticleFile& f_;
  const Levels& lv() const { return f_.levels(); }  // the tree's levels: read on first use
  QueryCounters& counters_;
  uint32_t level_begin_ = 0, level_end_ = 0;  // the levels read: [begin, end)
  std::vector<PosRange> ranges_;              // their rows: one range of the file, or one per region
  uint64_t range_ = 0;                        // and how many
  std::shared_ptr<const TailHits> cover_;     // the tail's covered answer, when it is the selection

 public:
  const std::shared_ptr<const TailHits>& cover() const { return cover_; }

 private:

  // The levels read; a fraction's partly taken level is sampled (q_.sample_, which
  // run_part applies).
  void choose_levels() {
    if (q_.full_detail(f_)) {  // without the tree
      level_begin_ = 0, level_end_ = f_.level_count();
      q_.sample_ = {};
      return;
    }
    LevelsRead r = q_.levels_read(f_);
    level_begin_ = r.begin, level_end_ = r.end;
    q_.sample_ = r.sample;
  }

  // Everything matches: the selected levels' ranges taken whole (a sampled level, tested).
  std::vector<Task> take_levels() {
    const LevelSample& sample = q_.sample_;
    std::vector<Task> out;
    for (const PosRange& r : lv().positions(level_begin_, sample.active() ? level_end_ - 1 : level_end_)) {
      out.push_back({r.begin, r.end - r.begin, true});
      counters_.points_taken_whole += r.end - r.begin;
    }
    if (sample.active())
      for (const PosRange& r : sample.ranges())
        for (uint64_t s = r.begin; s < r.end; s += kScanBlock) out.push_back({s, std::min(kScanBlock, r.end - s), false});
    if (lv().regional()) std::sort(out.begin(), out.end(), [](const Task& a, const Task& b) { return a.start < b.start; });
    return out;
  }

  // The range of ranges_ holding file position r, or ranges_.size() when none does.
  size_t range_of(uint64_t r) const {
    auto it = range_after(ranges_, r);
    return holding(ranges_, it, r) ? size_t(it - ranges_.begin()) : ranges_.size();
  }

  // Of the leaves sampled across the tree, their points and the points the predicate leaves to test.
  struct Probe {
    uint64_t probed = 0, to_test = 0;
  };
  Probe probe_leaves(const Pruner& pruner) const {
    constexpr uint32_t kProbes = 128;
    const auto& nodes = f_.nodes();
    const uint32_t nn = uint32_t(nodes.size());
    Probe p;
    for (uint32_t k = 0, last = UINT32_MAX; k < kProbes && nn > 0; ++k) {
      uint32_t i = uint32_t(uint64_t(k) * nn / kProbes);
      while (i < nn && !nodes[i].is_leaf()) ++i;
      if (i >= nn || i == last) continue;
      last = i;
      p.probed += nodes[i].own_count;
      if (pruner.eval(*q_.predicate_, i) == NodeMatch::some) p.to_test += nodes[i].own_count;
    }
    return p;
  }

  // A value index (the id index for `id in (...)`, a tail index for a threshold in a tail)
  // that names at most `limit` candidate rows: those rows alone, taken whole when the index
  // answered the whole predicate, else tested. Tried instead of a scan (at most range / 16
  // rows), and when the leaves probed price the tree's tests at 32 times its rows; where
  // the tree prunes well it costs about as much as the index and keeps runs whole.
  std::optional<std::vector<Task>> by_index(uint64_t limit) {
    std::optional<IndexedRows> ix = indexed_rows(f_, *q_.predicate_, limit);
    if (!ix) return std::nullopt;
    return take(std::move(*ix));
  }

  // The least a traversal reads on a fresh open: the node ranges (min and max per node) of
  // every column the predicate tests.
  uint64_t traversal_floor() const {
    uint64_t per_node = 0;
    for (int c : referenced_columns(*q_.predicate_))
      if (size_t(c) < f_.schema().size()) per_node += 2 * dtype_size(f_.schema()[size_t(c)].dtype);
    return uint64_t(f_.node_count()) * per_node;
  }

  // The rows a value index found: taken whole when they are the exact answer, else tested.
  std::vector<Task> take(IndexedRows&& found) {
    std::optional<IndexedRows> ix(std::move(found));
    counters_.points_tested = counters_.points_taken_whole = 0;  // a traversal given up counts nothing
    std::vector<std::vector<Task>> tasks(1);
    std::vector<Task>& t = tasks[0];
    const std::vector<uint64_t>& rows = ix->positions();
    t.reserve(rows.size());
    if (ix->exact && !q_.sample_.active() && ranges_.size() == 1 && !rows.empty() && ranges_[0].begin <= rows.front() &&
        rows.back() < ranges_[0].end) {
      // Every row read and taken whole (a full-detail read of an exact answer): its runs.
      for (uint64_t r : rows)
        if (!t.empty() && t.back().start + t.back().count == r) ++t.back().count;
        else t.push_back({r, 1, true});
      counters_.points_taken_whole += rows.size();
    } else {
      for (uint64_t r : rows) {
        if (range_of(r) == ranges_.size()) continue;
        const bool whole = ix->exact && !(q_.sample_.active() && q_.sample_.contains(r));
        if (!t.empty() && t.back().all == whole && t.back().start + t.back().count == r) ++t.back().count;
        else t.push_back({r, 1, whole});
        (whole ? counters_.points_taken_whole : counters_.points_tested) += 1;
      }
    }
    counters_.index_rows += rows.size();
    ++(ix->index == IndexedRows::Index::id ? counters_.id_index_parts : counters_.tail_index_parts);
    // Every row the cover holds is selected whole: the selection of this part is the cover's.
    if (ix->cover && counters_.points_taken_whole == rows.size()) cover_ = std::move(ix->cover);
    if (counters_.points_tested == 0) return std::move(tasks[0]);  // all whole, adjacent rows joined already
    return coalesce(tasks, ranges_);
  }

  // Every point of the selected levels tested, in file order (unless a value index names
  // at most range / 16 rows).
  std::vector<Task> scan() {
    if (std::optional<std::vector<Task>> t = by_index(range_ / 16)) return std::move(*t);
    counters_.scanned = true;
    counters_.points_tested = range_;
    counters_.points_taken_whole = 0;
    std::vector<Task> blocks;
    for (const PosRange& r : ranges_)
      for (uint64_t b = r.begin; b < r.end; b += kScanBlock) blocks.push_back({b, std::min(kScanBlock, r.end - b), false});
    return blocks;
  }

  // The runs of the nodes the tree cannot rule out (tested) or holds whole; nullopt once
  // the points to test outnumber range / 8 (a scan is cheaper).
  std::optional<std::vector<Task>> traverse(const Pruner& pruner) {
    const uint64_t scan_above = range_ / 8;
    const auto& nodes = f_.nodes();
    // Runs of one level are met in preorder, which is their file order, so bucketing tasks
    // by level yields them sorted by position without a sort when levels lie one after the
    // other; levels stored region by region are sorted once at the end.
    std::vector<std::vector<Task>> by_level(lv().regional() ? 1 : level_end_);
    const LevelRuns& lr = lv().runs(f_.nodes());
    auto take_runs = [&](uint32_t node, bool all) {
      for (uint32_t r = lr.run_begin[node]; r < lr.run_begin[node + 1]; ++r) {
        const Run& run = lr.runs[r];
        if (run.level < level_begin_ || run.level >= level_end_) continue;
        const bool whole = all && !(q_.sample_.active() && q_.sample_.contains(run.start));  // sampled rows are tested
        by_level[lv().regional() ? 0 : run.level].push_back({run.start, run.count, whole});
        (whole ? counters_.points_taken_whole : counters_.points_tested) += run.count;
      }
    };
    for (uint32_t i = 0, visited = 0; i < nodes.size();) {
      if ((++visited & 4095) == 0) q_.cancel_.check();  // a tree of millions of nodes takes a while
      if (lv().subtree_count[i] == 0 || lv().depth[i] >= level_end_) {
        i = lv().subtree_end[i];
        continue;
      }
      ++counters_.nodes_visited;
      const NodeMatch t = pruner.eval(*q_.predicate_, i);
      if (t == NodeMatch::none) {
        ++counters_.nodes_pruned;
        i = lv().subtree_end[i];
      } else if (t == NodeMatch::all) {
        ++counters_.nodes_all;
        // Nodes at depth >= level_end_ hold no run of the selected levels (the test above),
        // nor do their subtrees: skipped whole (a coarse read of a large box visits few).
        for (uint32_t k = i; k < lv().subtree_end[i];) {
          if (lv().depth[k] >= level_end_) {
            k = lv().subtree_end[k];
            continue;
          }
          take_runs(k, true);
          ++k;
        }
        i = lv().subtree_end[i];
      } else {
        take_runs(i, false);
        ++i;
      }
      if (counters_.points_tested > scan_above) return std::nullopt;
    }
    // The exact test decides every point either way: both plans give the same result.
    if (lv().regional())
      std::sort(by_level[0].begin(), by_level[0].end(), [](const Task& a, const Task& b) { return a.start < b.start; });
    return coalesce(by_level, ranges_);
  }
};

std::vector<Query::Task> Query::plan(const ParticleFile& f, QueryCounters& counters, std::shared_ptr<const TailHits>& cover) {
  PartPlanner p(*this, f, counters);
  std::vector<Task> tasks = p.plan();
  cover = p.cover();
  return tasks;
}

// Concatenates the levels' tasks (each sorted, levels ascending: file order) and
// joins nearby runs that need testing into blocks: fewer, longer loops over
// contiguous memory. Points in the gaps lie inside the selected levels (one of the
// ranges `read`, the same for both runs) in pruned nodes, so the exact test rejects
// them; runs taken whole are joined only with adjacent whole runs.
std::vector<Query::Task> Query::coalesce(const std::vector<std::vector<Task>>& by_level, const std::vector<PosRange>& read) {
  constexpr uint64_t kMaxGap = 64;
  auto same_range = [&](uint64_t a, uint64_t b) {
    if (read.size() == 1) return true;
    auto it = range_after(read, a);
    return holding(read, it, a) && b < it->end;
  };
  std::vector<Task> out;
  for (const auto& level : by_level) {
    for (const Task& t : level) {
      if (!out.empty() && out.back().all == t.all) {
        Task& b = out.back();
        uint64_t end = b.start + b.count;
        if (t.all ? end == t.start
                  : (t.start - end <= kMaxGap && t.start + t.count - b.start <= kScanBlock && same_range(end, t.start))) {
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
