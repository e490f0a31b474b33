#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <random>

#include "motes/parallel/aggregation.hpp"

using namespace motes;

namespace {

// Virtual ranks on a px*py*pz grid over the unit cube; particles from Gaussian
// clusters (strongly nonuniform), summarised per rank as the MPI layer would.
std::vector<RankSummary> clustered_ranks(uint32_t px, uint32_t py, uint32_t pz, uint64_t n, uint64_t max_cell, uint32_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> g(0, 1);
  std::uniform_real_distribution<double> u(0, 1);
  const uint32_t ranks = px * py * pz;
  std::vector<std::array<std::vector<double>, 3>> pts(ranks);
  double centers[5][4] = {{0.2, 0.2, 0.2, 0.02}, {0.7, 0.3, 0.6, 0.05}, {0.5, 0.8, 0.5, 0.01}, {0.9, 0.9, 0.1, 0.03}, {0.3, 0.6, 0.8, 0.08}};
  for (uint64_t i = 0; i < n; ++i) {
    double p[3];
    int c = int(rng() % 6);
    for (int a = 0; a < 3; ++a) {
      p[a] = c == 5 ? u(rng) : centers[c][a] + centers[c][3] * g(rng);
      p[a] = std::clamp(p[a], 0.0, 0.999999);
    }
    uint32_t r = uint32_t(p[0] * px) + px * (uint32_t(p[1] * py) + py * uint32_t(p[2] * pz));
    for (int a = 0; a < 3; ++a) pts[r][a].push_back(p[a]);
  }
  std::vector<RankSummary> out;
  for (uint32_t r = 0; r < ranks; ++r) {
    ColumnView v[3];
    for (int a = 0; a < 3; ++a) {
      v[a].spec = {"xyz", DType::f64};
      v[a].data = pts[r][a].data();
      v[a].count = pts[r][a].size();
    }
    out.push_back(summarize_rank(v[0], v[1], v[2], max_cell));
  }
  return out;
}

void check_partition(const AggregationPlan& plan, const std::vector<RankSummary>& ranks) {
  std::vector<int> seen(plan.atoms.size(), 0);
  uint64_t total = 0, want = 0;
  for (const auto& l : plan.leaves) {
    uint64_t c = 0;
    for (uint32_t a : l.atoms) ++seen[a], c += plan.atoms[a].count;
    EXPECT_EQ(c, l.count);
    EXPECT_LT(l.aggregator, ranks.size());
    total += l.count;
  }
  for (const auto& r : ranks) want += r.count;
  EXPECT_EQ(total, want);
  for (int s : seen) EXPECT_EQ(s, 1);
}

}  // namespace

TEST(Aggregation, AdaptivePlanIsBalancedOnClusteredData) {
  AggregationOptions o;
  o.bytes_per_particle = 32;
  o.target_bytes = 400000 * 32 / 24;  // about 24 files
  auto ranks = clustered_ranks(4, 4, 4, 400000, cell_cap(o.target_bytes, o.bytes_per_particle), 1);
  AggregationPlan plan = plan_adaptive(ranks, o);
  check_partition(plan, ranks);
  Balance b = balance(plan, o.bytes_per_particle);
  EXPECT_EQ(b.files, uint64_t(std::ceil(400000.0 * 32 / double(o.target_bytes))));  // as many files as the target asks
  EXPECT_LT(b.sd_over_mean(), 0.25);
  EXPECT_LT(b.max_over_mean(), 1.5);
  AggregationPlan aug = plan_aug(ranks, o);
  check_partition(aug, ranks);
  EXPECT_LE(aug.leaves.size(), ranks.size());
  EXPECT_GT(balance(aug, 32).sd_over_mean(), b.sd_over_mean());  // the baseline is less balanced
}

TEST(Aggregation, EmptyRanksAndOneRankHoldingEverything) {
  std::vector<RankSummary> ranks(8);
  ranks[3].count = 1000;
  ranks[3].bounds = Box{{0, 0, 0}, {1, 1, 1}};
  for (uint32_t c = 0; c < 40; ++c) {
    double x0 = c / 40.0;
    ranks[3].cells.push_back({Box{{x0, 0, 0}, {x0 + 0.025, 1, 1}}, 25});
  }
  AggregationOptions o;
  o.bytes_per_particle = 1;
  o.target_bytes = 250;
  AggregationPlan plan = plan_adaptive(ranks, o);
  check_partition(plan, ranks);
  EXPECT_EQ(plan.leaves.size(), 4u);  // the dense rank is split over several files
  for (const auto& l : plan.leaves) EXPECT_EQ(l.count, 250u);
  std::vector<RankSummary> none(4);
  EXPECT_TRUE(plan_adaptive(none, o).leaves.empty());
  EXPECT_TRUE(plan_aug(none, o).leaves.empty());
}

TEST(Aggregation, RejectsInconsistentSummaries) {
  std::vector<RankSummary> ranks(2);
  ranks[0].count = 10;
  ranks[0].bounds = Box{{0, 0, 0}, {1, 1, 1}};
  ranks[0].cells.push_back({ranks[0].bounds, 9});  // sums to 9, not 10
  EXPECT_THROW(plan_adaptive(ranks, {}), UsageError);
  ranks[0].cells.clear();
  ranks[0].bounds.lo[1] = NAN;
  EXPECT_THROW(plan_adaptive(ranks, {}), UsageError);
}

TEST(Aggregation, ScalesToManyVirtualRanks) {
  AggregationOptions o;
  o.target_bytes = 2000000ull * 32 / 100;
  auto ranks = clustered_ranks(40, 25, 20, 2000000, cell_cap(o.target_bytes, 32), 3);  // 20,000 ranks
  AggregationPlan plan = plan_adaptive(ranks, o);
  check_partition(plan, ranks);
  EXPECT_LT(balance(plan, 32).sd_over_mean(), 0.25);
}

TEST(Aggregation, SummaryCellsCoverEveryParticle) {
  std::vector<double> x, y, z;
  std::mt19937_64 rng(2);
  std::normal_distribution<double> g(0, 1);
  for (int i = 0; i < 20000; ++i) x.push_back(g(rng) * 0.01), y.push_back(g(rng)), z.push_back(i % 3 ? 5.0 : g(rng));
  ColumnView v[3];
  const std::vector<double>* d[3] = {&x, &y, &z};
  for (int a = 0; a < 3; ++a) v[a].spec = {"p", DType::f64}, v[a].data = d[a]->data(), v[a].count = d[a]->size();
  RankSummary s = summarize_rank(v[0], v[1], v[2], 500);
  uint64_t sum = 0;
  for (const auto& c : s.cells) {
    sum += c.count;
    EXPECT_TRUE(c.count <= 500 || c.box.hi[2] - c.box.lo[2] < 1e-9);  // only identical points exceed the cap
  }
  EXPECT_EQ(sum, 20000u);
}

namespace {
// The adaptive plan of files of 1000 particles (one byte each), checked to partition the atoms.
AggregationPlan plan_of_thousands(const std::vector<RankSummary>& ranks) {
  AggregationOptions o;
  o.bytes_per_particle = 1;
  o.target_bytes = 1000;
  AggregationPlan plan = plan_adaptive(ranks, o);
  check_partition(plan, ranks);
  return plan;
}

// Leaves written per rank of a plan.
std::vector<uint64_t> loads(const AggregationPlan& plan, size_t ranks) {
  std::vector<uint64_t> l(ranks, 0);
  for (const auto& leaf : plan.leaves) ++l[leaf.aggregator];
  return l;
}
}  // namespace

TEST(Aggregation, LocalAggregatorsMoveFewerParticlesWithinTheCaps) {
  AggregationOptions o;
  o.target_bytes = 400000ull * 32 / 40;  // 40 files over 27 ranks
  auto ranks = clustered_ranks(3, 3, 3, 400000, cell_cap(o.target_bytes, 32), 5);
  for (uint32_t r = 0; r < ranks.size(); ++r) ranks[r].node = r / 4;  // 4 ranks per node, 7 nodes
  AggregationPlan local = plan_adaptive(ranks, o);
  o.local = false;
  AggregationPlan spread = plan_adaptive(ranks, o);
  check_partition(local, ranks);
  ASSERT_EQ(local.leaves.size(), spread.leaves.size());
  for (size_t k = 0; k < local.leaves.size(); ++k) EXPECT_EQ(local.leaves[k].count, spread.leaves[k].count);  // same files
  const uint64_t files = local.leaves.size();
  const uint64_t rank_cap = (files + ranks.size() - 1) / ranks.size(), node_cap = (files + 6) / 7;
  std::vector<uint64_t> per_node(7, 0);
  std::vector<uint64_t> per_rank = loads(local, ranks.size());
  for (uint32_t r = 0; r < ranks.size(); ++r) {
    EXPECT_LE(per_rank[r], rank_cap);
    per_node[r / 4] += per_rank[r];
  }
  for (uint64_t n : per_node) EXPECT_LE(n, node_cap);
  // Brute force: a particle moves when its leaf's aggregator is not its rank.
  uint64_t moved = 0;
  for (const auto& leaf : local.leaves)
    for (uint32_t a : leaf.atoms) moved += local.atoms[a].rank == leaf.aggregator ? 0 : local.atoms[a].count;
  EXPECT_EQ(particles_moved(local), moved);
  EXPECT_LT(particles_moved(local), particles_moved(spread) * 3 / 4);
  // The least: each leaf kept by its largest holder (brute force over the ranks).
  uint64_t least = 0;
  for (const auto& leaf : local.leaves) {
    std::vector<uint64_t> held(ranks.size(), 0);
    for (uint32_t a : leaf.atoms) held[local.atoms[a].rank] += local.atoms[a].count;
    least += leaf.count - *std::max_element(held.begin(), held.end());
  }
  EXPECT_EQ(least_particles_moved(local), least);
  EXPECT_LE(least, particles_moved(local));
}

TEST(Aggregation, EachRankWritesItsOwnRegionWhenItIsOneFile) {
  // Rank r holds exactly the particles of slab r: every leaf stays on its rank, whatever their order.
  std::vector<RankSummary> ranks(6);
  for (uint32_t r = 0; r < 6; ++r) {
    const uint32_t slab = (r * 5) % 6;  // ranks not in space order
    ranks[r].count = 1000;
    ranks[r].bounds = Box{{double(slab), 0, 0}, {slab + 0.999, 1, 1}};
    ranks[r].node = r / 2;
  }
  AggregationPlan plan = plan_of_thousands(ranks);
  ASSERT_EQ(plan.leaves.size(), 6u);
  EXPECT_EQ(particles_moved(plan), 0u);
  for (const auto& leaf : plan.leaves) EXPECT_EQ(plan.atoms[leaf.atoms[0]].rank, leaf.aggregator);
}

TEST(Aggregation, NodeCapSendsFilesToOtherNodes) {
  // Everything on node 0 (ranks 0, 1); ranks 2, 3 on node 1 hold nothing. 8 files: 2 per
  // rank and 4 per node, so half the files go to node 1 although it holds no particles.
  std::vector<RankSummary> ranks(4);
  for (uint32_t r = 0; r < 2; ++r) {
    ranks[r].count = 4000;
    ranks[r].bounds = Box{{double(r), 0, 0}, {r + 0.999, 1, 1}};
    for (uint32_t c = 0; c < 4; ++c)
      ranks[r].cells.push_back({Box{{r + c * 0.25, 0, 0}, {r + c * 0.25 + 0.2, 1, 1}}, 1000});
  }
  ranks[2].node = ranks[3].node = 7;
  AggregationPlan plan = plan_of_thousands(ranks);
  ASSERT_EQ(plan.leaves.size(), 8u);
  EXPECT_EQ(loads(plan, 4), (std::vector<uint64_t>{2, 2, 2, 2}));
  EXPECT_EQ(particles_moved(plan), 4000u);
  // Ranks of unequal nodes: one rank on node 0, three on node 1, 4 files: the node cap (2)
  // cannot hold, so node 1 takes 3.
  std::vector<RankSummary> uneven(4);
  for (uint32_t r = 0; r < 4; ++r) {
    uneven[r].count = 1000;
    uneven[r].bounds = Box{{double(r), 0, 0}, {r + 0.999, 1, 1}};
    uneven[r].node = r ? 1 : 0;
  }
  plan = plan_of_thousands(uneven);
  EXPECT_EQ(loads(plan, 4), (std::vector<uint64_t>{1, 1, 1, 1}));
}
