#include "motes/parallel/aggregation.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <queue>
#include <string>
#include <type_traits>

#include "motes/core/memory.hpp"
#include "motes/particles/layout/builder.hpp"

namespace motes {

namespace {

double center(const Box& b, int axis) { return 0.5 * (b.lo[axis] + b.hi[axis]); }

void grow(Box& into, const Box& b, bool& empty) {
  for (int a = 0; a < 3; ++a) {
    into.lo[a] = empty ? b.lo[a] : std::min(into.lo[a], b.lo[a]);
    into.hi[a] = empty ? b.hi[a] : std::max(into.hi[a], b.hi[a]);
  }
  empty = false;
}

std::vector<Atom> make_atoms(const std::vector<RankSummary>& ranks) {
  std::vector<Atom> atoms;
  for (uint32_t r = 0; r < ranks.size(); ++r) {
    const RankSummary& s = ranks[r];
    if (s.count == 0) continue;  // ranks without particles take no part
    for (int a = 0; a < 3; ++a)
      if (!(s.bounds.lo[a] <= s.bounds.hi[a]) || !std::isfinite(s.bounds.lo[a]) || !std::isfinite(s.bounds.hi[a]))
        throw UsageError("rank " + std::to_string(r) + " reports invalid bounds");
    if (s.cells.empty()) {
      atoms.push_back({r, 0, s.bounds, s.count});
      continue;
    }
    uint64_t sum = 0;
    for (uint32_t c = 0; c < s.cells.size(); ++c) {
      if (!s.cells[c].count) continue;
      sum += s.cells[c].count;
      atoms.push_back({r, c, s.cells[c].box, s.cells[c].count});
    }
    if (sum != s.count)
      throw UsageError("rank " + std::to_string(r) + " histogram holds " + std::to_string(sum) + " particles, its count is " +
                       std::to_string(s.count));
  }
  return atoms;
}

// Octree cells over [lo, hi) of the points, halved at midpoints. Each point's coordinates
// (as T: float when all three axes are, else doubles through Coordinate) travel with its row
// in one record, reordered level by level: every level reads its points in order, not
// through the rows at random (a rank of the main job, 2.6M clustered points: 3-4 levels).
template <class T>
class CellSplitter {
 public:
  struct Point {
    T c[3];
    uint64_t row;
  };
  // The records of every point, and scratch for the octants and the reordering, allocated
  // once for all points (not zeroed: each level writes what it reads): a fresh buffer per
  // node costs page faults on every level.
  CellSplitter(const Coordinate* axes, uint64_t max_cell, std::vector<RankCell>& out, std::vector<uint32_t>* cell_of,
               uint64_t points)
      : max_(max_cell), out_(out), cell_of_(cell_of), points_(points), oct_(points), tmp_(points) {
    for (uint64_t row = 0; row < points; ++row) {
      Point& p = points_[row];
      for (int a = 0; a < 3; ++a) {
        if constexpr (std::is_same_v<T, float>)
          p.c[a] = *reinterpret_cast<const float*>(axes[a].base + int64_t(row) * axes[a].stride);
        else
          p.c[a] = axes[a][row];
      }
      p.row = row;
    }
  }

  void split(uint64_t b, uint64_t e, const Box& box, int depth) {
    const uint64_t n = e - b;
    if (n == 0) return;
    if (n <= max_ || depth >= 40) return emit(b, e, box);
    double mid[3];
    for (int a = 0; a < 3; ++a) mid[a] = 0.5 * (box.lo[a] + box.hi[a]);
    // Counting sort of the points into their octants.
    uint64_t counts[8] = {};
    uint8_t* oct = oct_.data() + b;
    const Point* pts = points_.data() + b;
    for (uint64_t i = 0; i < n; ++i) {
      uint8_t o = 0;
      for (int a = 0; a < 3; ++a) o |= uint8_t(double(pts[i].c[a]) >= mid[a]) << a;
      oct[i] = o;
      ++counts[o];
    }
    if (*std::max_element(counts, counts + 8) == n && depth > 0 && box_is_point(box)) return emit(b, e, box);
    uint64_t start[9] = {0};
    for (int o = 0; o < 8; ++o) start[o + 1] = start[o] + counts[o];
    Point* tmp = tmp_.data() + b;
    uint64_t fill[8];
    std::copy(start, start + 8, fill);
    for (uint64_t i = 0; i < n; ++i) tmp[fill[oct[i]]++] = pts[i];
    std::copy(tmp, tmp + n, points_.data() + b);
    for (int o = 0; o < 8; ++o) {
      Box child{};
      for (int a = 0; a < 3; ++a) {
        bool upper = (o >> a) & 1;
        child.lo[a] = upper ? mid[a] : box.lo[a];
        child.hi[a] = upper ? box.hi[a] : mid[a];
      }
      split(b + start[o], b + start[o + 1], child, depth + 1);
    }
  }

 private:
  uint64_t max_;
  std::vector<RankCell>& out_;
  std::vector<uint32_t>* cell_of_;
  BigVector<Point> points_;
  BigVector<uint8_t> oct_;
  BigVector<Point> tmp_;

  void emit(uint64_t b, uint64_t e, const Box& box) {
    if (cell_of_)
      for (uint64_t i = b; i < e; ++i) (*cell_of_)[points_[i].row] = uint32_t(out_.size());
    out_.push_back({box, e - b});
  }

  static bool box_is_point(const Box& b) {
    for (int a = 0; a < 3; ++a)
      if (std::nextafter(b.lo[a], INFINITY) < b.hi[a]) return false;
    return true;
  }
};

uint64_t resolve_target(const std::vector<RankSummary>& ranks, const AggregationOptions& o, uint64_t total) {
  if (o.bytes_per_particle == 0) throw UsageError("bytes_per_particle must be positive");
  if (o.target_bytes) return o.target_bytes;
  return automatic_target_bytes(total * o.bytes_per_particle, ranks.size());
}

// The adaptive tree: atoms kept sorted by center along each axis; a split
// partitions the three orders stably, so each level costs linear time.
class AdaptiveBuilder {
 public:
  AdaptiveBuilder(AggregationPlan& plan, const AggregationOptions& o, double per_file)
      : plan_(plan), opt_(o), per_file_(per_file), left_(plan.atoms.size(), 0) {}

  void build() {
    const size_t n = plan_.atoms.size();
    std::vector<uint32_t> order[3];
    for (int a = 0; a < 3; ++a) {
      order[a].resize(n);
      std::iota(order[a].begin(), order[a].end(), 0u);
      std::stable_sort(order[a].begin(), order[a].end(), [&](uint32_t i, uint32_t j) {
        return center(plan_.atoms[i].box, a) < center(plan_.atoms[j].box, a);
      });
    }
    if (n) split(order);
  }

 private:
  AggregationPlan& plan_;
  const AggregationOptions& opt_;
  double per_file_;
  std::vector<uint8_t> left_;

  uint64_t sum(const std::vector<uint32_t>& ids) const {
    uint64_t t = 0;
    for (uint32_t i : ids) t += plan_.atoms[i].count;
    return t;
  }

  // Index s in order[axis] whose prefix count is closest to `want` (1 <= s < n).
  size_t best_cut(const std::vector<uint32_t>& ids, double want, double& error) const {
    uint64_t prefix = 0;
    size_t best = 1;
    error = INFINITY;
    for (size_t s = 1; s < ids.size(); ++s) {
      prefix += plan_.atoms[ids[s - 1]].count;
      double e = std::fabs(double(prefix) - want);
      if (e < error) error = e, best = s;
      if (double(prefix) > want) break;  // prefixes only grow
    }
    return best;
  }

  void split(std::vector<uint32_t> (&order)[3]) {
    const uint64_t total = sum(order[0]);
    const uint64_t files = std::max<uint64_t>(1, uint64_t(std::llround(double(total) / per_file_)));
    if (files == 1 || order[0].size() == 1) return leaf(order[0]);
    const double want = double(total) * double(files / 2) / double(files);
    int axis = 0;
    size_t cut = 0;
    double error = INFINITY;
    Box extent{};
    bool empty = true;
    for (uint32_t i : order[0]) grow(extent, plan_.atoms[i].box, empty);
    int first = 0;
    for (int a = 1; a < 3; ++a)
      if (extent.hi[a] - extent.lo[a] > extent.hi[first] - extent.lo[first]) first = a;
    for (int a = 0; a < 3; ++a) {
      if (!opt_.best_axis && a != first) continue;
      double e;
      size_t c = best_cut(order[a], want, e);
      if (e < error) error = e, cut = c, axis = a;
    }
    // A poor best split (coarse atoms) of a node not much above the target: keep it whole.
    const double target_count = double(plan_.target_bytes) / double(opt_.bytes_per_particle);
    if (error > 0.25 * want && double(total) <= opt_.overfull * target_count) return leaf(order[0]);
    for (size_t s = 0; s < order[axis].size(); ++s) left_[order[axis][s]] = s < cut;
    std::vector<uint32_t> lo[3], hi[3];
    for (int a = 0; a < 3; ++a) {
      for (uint32_t i : order[a]) (left_[i] ? lo[a] : hi[a]).push_back(i);
      std::vector<uint32_t>().swap(order[a]);
    }
    split(lo);
    split(hi);
  }

  void leaf(const std::vector<uint32_t>& ids) {
    AggregationLeaf l;
    bool empty = true;
    for (uint32_t i : ids) {
      l.count += plan_.atoms[i].count;
      grow(l.bounds, plan_.atoms[i].box, empty);
    }
    l.atoms = ids;
    std::sort(l.atoms.begin(), l.atoms.end());
    plan_.leaves.push_back(std::move(l));
  }
};

}  // namespace

uint64_t automatic_target_bytes(uint64_t total_bytes, size_t ranks) {
  uint64_t per_rank = ranks ? total_bytes / ranks : 0;
  return std::clamp<uint64_t>(per_rank, uint64_t(64) << 20, uint64_t(1) << 30);
}

RankSummary summarize_rank(const ColumnView& x, const ColumnView& y, const ColumnView& z, uint64_t max_cell,
                           std::vector<uint32_t>* cell_of) {
  const ColumnView axes[3] = {x, y, z};
  RankSummary s;
  s.count = x.count;
  if (y.count != x.count || z.count != x.count) throw UsageError("position columns have different lengths");
  for (const ColumnView& c : axes)
    if (c.spec.dtype != DType::f32 && c.spec.dtype != DType::f64) throw UsageError("positions must be f32 or f64");
  if (cell_of) cell_of->assign(s.count, 0);
  if (!s.count) return s;
  const Coordinate coords[3] = {Coordinate(x), Coordinate(y), Coordinate(z)};
  for (int a = 0; a < 3; ++a) position_bounds(axes[a], axes[a].spec.name.c_str(), 1, s.bounds.lo[a], s.bounds.hi[a]);
  // Cells are half-open at their upper faces; widen the top so the maximum falls inside.
  Box root = s.bounds;
  for (int a = 0; a < 3; ++a) root.hi[a] = std::nextafter(root.hi[a], INFINITY);
  const uint64_t cap = std::max<uint64_t>(1, max_cell);
  if (coords[0].is_f32 && coords[1].is_f32 && coords[2].is_f32)
    CellSplitter<float>(coords, cap, s.cells, cell_of, s.count).split(0, s.count, root, 0);
  else
    CellSplitter<double>(coords, cap, s.cells, cell_of, s.count).split(0, s.count, root, 0);
  return s;
}

// The atoms of all ranks and the resolved file target, shared by both planners.
static AggregationPlan start_plan(const std::vector<RankSummary>& ranks, const AggregationOptions& o, uint64_t& total) {
  AggregationPlan plan;
  plan.atoms = make_atoms(ranks);
  total = 0;
  for (const Atom& a : plan.atoms) total += a.count;
  plan.target_bytes = resolve_target(ranks, o, total);
  return plan;
}

AggregationPlan plan_adaptive(const std::vector<RankSummary>& ranks, const AggregationOptions& o) {
  uint64_t total;
  AggregationPlan plan = start_plan(ranks, o, total);
  if (!(o.overfull >= 1.0)) throw UsageError("overfull must be at least 1");
  const double target_count = double(plan.target_bytes) / double(o.bytes_per_particle);
  // Leaves of equal size near the target: k files of total/k particles each.
  const double files = std::max(1.0, std::ceil(double(total) / target_count));
  AdaptiveBuilder(plan, o, double(total) / files).build();
  assign_aggregators(plan, ranks, o.local);
  return plan;
}

AggregationPlan plan_aug(const std::vector<RankSummary>& ranks, const AggregationOptions& o) {
  uint64_t total;
  AggregationPlan plan = start_plan(ranks, o, total);
  if (plan.atoms.empty()) return plan;
  Box domain{};
  bool empty = true;
  double size[3] = {0, 0, 0};
  for (const RankSummary& r : ranks) {
    if (!r.count) continue;
    grow(domain, r.bounds, empty);
    for (int a = 0; a < 3; ++a) size[a] = std::max(size[a], r.bounds.hi[a] - r.bounds.lo[a]);
  }
  uint64_t cells[3];
  auto count_cells = [&] {
    for (int a = 0; a < 3; ++a) {
      double extent = domain.hi[a] - domain.lo[a];
      if (!(size[a] > 0)) size[a] = extent > 0 ? extent : 1.0;
      cells[a] = std::max<uint64_t>(1, uint64_t(std::ceil(extent / size[a])));
    }
  };
  count_cells();
  for (int a = 0; cells[0] * cells[1] * cells[2] > ranks.size(); a = (a + 1) % 3) {
    size[a] *= 2;  // as in the reference code: x, then y, then z
    count_cells();
  }
  const uint64_t ncells = cells[0] * cells[1] * cells[2];
  std::vector<int64_t> leaf_of(ncells, -1);
  for (uint32_t i = 0; i < plan.atoms.size(); ++i) {
    uint64_t idx[3];
    for (int a = 0; a < 3; ++a) {
      double t = (center(plan.atoms[i].box, a) - domain.lo[a]) / size[a];
      idx[a] = std::min<uint64_t>(cells[a] - 1, t > 0 ? uint64_t(t) : 0);
    }
    uint64_t c = idx[0] + cells[0] * (idx[1] + cells[1] * idx[2]);
    if (leaf_of[c] < 0) {
      leaf_of[c] = int64_t(plan.leaves.size());
      plan.leaves.emplace_back();
      for (int a = 0; a < 3; ++a) {
        plan.leaves.back().bounds.lo[a] = domain.lo[a] + size[a] * double(idx[a]);
        plan.leaves.back().bounds.hi[a] = domain.lo[a] + size[a] * double(idx[a] + 1);
      }
      plan.leaves.back().aggregator = uint32_t(c * (ranks.size() / ncells));  // cell i -> rank i * (P / cells)
    }
    AggregationLeaf& l = plan.leaves[size_t(leaf_of[c])];
    l.atoms.push_back(i);
    l.count += plan.atoms[i].count;
  }
  return plan;
}

void assign_aggregators(AggregationPlan& plan, const std::vector<RankSummary>& ranks, bool local) {
  const size_t n = plan.leaves.size(), p = ranks.size();
  if (!n) return;
  if (!p) throw UsageError("a plan of " + std::to_string(n) + " files needs ranks to write them");
  if (!local) {
    for (size_t i = 0; i < n; ++i) plan.leaves[i].aggregator = uint32_t(i * p / n);
    return;
  }
  std::vector<uint32_t> node_of(p);  // the nodes renumbered 0..N-1 in order of first rank
  std::map<uint32_t, uint32_t> nodes;
  for (size_t r = 0; r < p; ++r) node_of[r] = nodes.emplace(ranks[r].node, uint32_t(nodes.size())).first->second;
  const uint64_t rank_cap = (n + p - 1) / p, node_cap = (n + nodes.size() - 1) / nodes.size();
  std::vector<uint64_t> rank_load(p, 0), node_load(nodes.size(), 0);
  std::vector<bool> done(n, false);
  auto take = [&](size_t leaf, size_t rank) {
    plan.leaves[leaf].aggregator = uint32_t(rank);
    done[leaf] = true;
    ++rank_load[rank], ++node_load[node_of[rank]];
  };
  // Each leaf's holders, most particles first over all leaves (ties: lower leaf, lower rank).
  struct Share {
    uint64_t count;
    uint32_t leaf, rank;
  };
  std::vector<Share> shares;
  for (uint32_t k = 0; k < n; ++k)
    for (auto [r, c] : leaf_holders(plan, plan.leaves[k])) shares.push_back({c, k, r});
  std::sort(shares.begin(), shares.end(), [](const Share& a, const Share& b) {
    return a.count != b.count ? a.count > b.count : a.leaf != b.leaf ? a.leaf < b.leaf : a.rank < b.rank;
  });
  for (const Share& s : shares)
    if (!done[s.leaf] && rank_load[s.rank] < rank_cap && node_load[node_of[s.rank]] < node_cap) take(s.leaf, s.rank);
  // The rest, in leaf order, to the ranks with the fewest leaves (ties: lowest rank).
  for (bool node_capped : {true, false}) {
    using Slot = std::pair<uint64_t, uint32_t>;  // (leaves, rank)
    std::priority_queue<Slot, std::vector<Slot>, std::greater<Slot>> open;
    for (uint32_t r = 0; r < p; ++r)
      if (rank_load[r] < rank_cap) open.push({rank_load[r], r});
    for (size_t k = 0; k < n && !open.empty(); ++k) {
      if (done[k]) continue;
      while (!open.empty() && node_capped && node_load[node_of[open.top().second]] >= node_cap) open.pop();
      if (open.empty()) break;
      const uint32_t r = open.top().second;
      open.pop();
      take(k, r);
      if (rank_load[r] < rank_cap) open.push({rank_load[r], r});
    }
  }
}

std::vector<std::pair<uint32_t, uint64_t>> leaf_holders(const AggregationPlan& plan, const AggregationLeaf& leaf) {
  std::map<uint32_t, uint64_t> by_rank;
  for (uint32_t a : leaf.atoms) by_rank[plan.atoms[a].rank] += plan.atoms[a].count;
  return {by_rank.begin(), by_rank.end()};
}

uint64_t least_particles_moved(const AggregationPlan& plan) {
  uint64_t moved = 0;
  for (const AggregationLeaf& l : plan.leaves) {
    uint64_t most = 0;
    for (auto [r, c] : leaf_holders(plan, l)) most = std::max(most, c);
    moved += l.count - most;
  }
  return moved;
}

uint64_t particles_moved(const AggregationPlan& plan) {
  uint64_t moved = 0;
  for (const AggregationLeaf& l : plan.leaves)
    for (uint32_t a : l.atoms)
      if (plan.atoms[a].rank != l.aggregator) moved += plan.atoms[a].count;
  return moved;
}

Balance balance(const AggregationPlan& plan, uint64_t bytes_per_particle) {
  Balance b;
  b.files = plan.leaves.size();
  if (!b.files) return b;
  double sum = 0, sum2 = 0;
  for (const AggregationLeaf& l : plan.leaves) {
    double v = double(l.count) * double(bytes_per_particle);
    sum += v, sum2 += v * v;
    b.max = std::max(b.max, v);
  }
  b.mean = sum / double(b.files);
  b.sd = std::sqrt(std::max(0.0, sum2 / double(b.files) - b.mean * b.mean));
  return b;
}

}  // namespace motes
