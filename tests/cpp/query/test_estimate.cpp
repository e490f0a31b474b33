// Level counts inside a box, estimated from the tree alone, against an oracle that derives
// every node's bounding box from the points themselves.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <random>

#include "motes/particles/step_index.hpp"
#include "motes/particles/writer.hpp"
#include "motes/query/engine.hpp"
#include "motes/query/estimate.hpp"
#include "motes/query/selection.hpp"
#include "test_util.hpp"

using namespace motes;

namespace {

std::shared_ptr<ParticleFile> write_file(const test::Columns& cols, const std::string& name) {
  WriteOptions o;
  o.layout.leaf_size = 64;
  o.layout.lod_count = 8;
  o.sync = false;
  const std::string path = test::temp_path(name);
  write_particle_file(path, cols.views(), o);
  return ParticleFile::open(path);
}

// The brute-force side: positions in file order, each node's bounding box from its
// subtree's points, and per level the estimate, a lower and an upper bound and the truth.
struct Oracle {
  std::vector<double> estimate, lower, upper, truth;
};

Oracle oracle(const std::shared_ptr<ParticleFile>& file, const Box& box) {
  const Levels& lv = file->levels();
  QuerySpec everything;
  Query q(file, everything);
  Selection sel(q);  // every point, in file order
  std::array<std::vector<float>, 3> pos;
  const char* names[3] = {"x", "y", "z"};
  for (int a = 0; a < 3; ++a) {
    pos[a].resize(sel.size());
    sel.gather(file->column(names[a]), 0, sel.size(), pos[a].data(), 1);
  }
  auto inside = [&](uint64_t p) {
    for (int a = 0; a < 3; ++a)
      if (!(double(pos[a][p]) >= box.lo[a] && double(pos[a][p]) <= box.hi[a])) return false;
    return true;
  };
  const uint32_t L = lv.level_count();
  Oracle o{std::vector<double>(L), std::vector<double>(L), std::vector<double>(L), std::vector<double>(L)};
  for (uint32_t l = 0; l < L; ++l)
    for (const PosRange& g : lv.positions(l, l + 1))  // a range, or one per region past the detail level
      for (uint64_t p = g.begin; p < g.end; ++p) o.truth[l] += inside(p);
  const auto& nodes = file->nodes();
  const LevelRuns& lr = lv.runs(nodes);
  for (uint32_t i = 0; i < nodes.size(); ++i) {
    // The subtree's points: the runs of nodes [i, subtree_end), found by scanning every run.
    double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
    uint64_t points = 0;
    for (const Run& r : lr.runs)
      if (r.node >= i && r.node < lv.subtree_end[i])
        for (uint64_t p = r.start; p < r.start + r.count; ++p, ++points)
          for (int a = 0; a < 3; ++a) lo[a] = std::min(lo[a], double(pos[a][p])), hi[a] = std::max(hi[a], double(pos[a][p]));
    if (!points) continue;
    bool disjoint = false, within = true;
    double fraction = 1.0;
    for (int a = 0; a < 3; ++a) {
      disjoint |= hi[a] < box.lo[a] || lo[a] > box.hi[a];
      within &= lo[a] >= box.lo[a] && hi[a] <= box.hi[a];
      if (hi[a] > lo[a]) fraction *= std::clamp((std::min(hi[a], box.hi[a]) - std::max(lo[a], box.lo[a])) / (hi[a] - lo[a]), 0.0, 1.0);
    }
    // (A node inside or outside the box has its descendants inside or outside too: the
    // estimate, which stops at such a node, adds what this per-node rule adds.)
    for (uint32_t r = lr.run_begin[i]; r < lr.run_begin[i + 1]; ++r) {
      const Run& run = lr.runs[r];
      if (!disjoint) o.upper[run.level] += run.count;
      if (within) o.lower[run.level] += run.count;
      if (!disjoint) o.estimate[run.level] += (within ? 1.0 : fraction) * run.count;
    }
  }
  return o;
}

}  // namespace

TEST(Estimate, WithoutABoxTheCountsAreTheLevels) {
  auto file = write_file(test::make_columns(5000, 5), "estimate-levels.mpf");
  const Levels& lv = file->levels();
  auto got = level_counts(*file, std::nullopt);
  ASSERT_EQ(got.size(), lv.level_count());
  for (uint32_t l = 0; l < lv.level_count(); ++l) EXPECT_EQ(got[l], double(lv.level_start[l + 1] - lv.level_start[l]));
  Box all = file->bounds();
  EXPECT_EQ(level_counts(*file, all), got);  // a box around everything: exact too
  Box away{{5, 5, 5}, {6, 6, 6}};
  for (double v : level_counts(*file, away)) EXPECT_EQ(v, 0.0);
}

TEST(Estimate, BoxesMatchTheOracleAndBracketTheTruth) {
  auto file = write_file(test::make_columns(6000, 9), "estimate-boxes.mpf");
  std::mt19937_64 rng(4);
  std::uniform_real_distribution<double> u(-0.1, 1.1);
  for (int k = 0; k < 12; ++k) {
    Box b;
    for (int a = 0; a < 3; ++a) {
      double p = u(rng), q = u(rng);
      b.lo[a] = std::min(p, q), b.hi[a] = std::max(p, q);
    }
    auto got = level_counts(*file, b);
    Oracle o = oracle(file, b);
    ASSERT_EQ(got.size(), o.estimate.size());
    for (size_t l = 0; l < got.size(); ++l) {
      EXPECT_NEAR(got[l], o.estimate[l], 1e-9 * (1 + o.estimate[l])) << "box " << k << " level " << l;
      EXPECT_GE(got[l], o.lower[l] - 1e-9) << "box " << k << " level " << l;
      EXPECT_LE(got[l], o.upper[l] + 1e-9) << "box " << k << " level " << l;
      EXPECT_GE(o.truth[l], o.lower[l]);
      EXPECT_LE(o.truth[l], o.upper[l]);
    }
  }
}

TEST(Estimate, FlatAxesCountAsInside) {
  test::Columns cols = test::make_columns(3000, 2);
  std::fill(cols.z.begin(), cols.z.end(), 0.5f);  // a flat slab: every node has zero thickness in z
  auto file = write_file(cols, "estimate-flat.mpf");
  Box b{{0.0, 0.0, 0.5}, {0.5, 1.0, 0.5}};
  auto got = level_counts(*file, b);
  Oracle o = oracle(file, b);
  double total = 0;
  for (size_t l = 0; l < got.size(); ++l) {
    EXPECT_NEAR(got[l], o.estimate[l], 1e-9 * (1 + o.estimate[l]));
    total += got[l];
  }
  EXPECT_GT(total, 0.0);
}

TEST(Estimate, PartsOfACollection) {
  const std::string index_path = test::temp_path("estimate-parts.mpi");
  test::write_slabs(test::make_columns(8000, 12), 3, index_path, 64);
  auto c = Collection::open(index_path);
  Box left{{-1, -1, -1}, {0.2, 2, 2}};  // inside the first slab only
  auto got = level_counts(*c, left);
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0], level_counts(*c->part(0), left));
  EXPECT_TRUE(got[1].empty() && got[2].empty());
  auto everything = level_counts(*c, std::nullopt);
  for (size_t k = 0; k < 3; ++k) EXPECT_EQ(everything[k], level_counts(*c->part(k), std::nullopt));
}
