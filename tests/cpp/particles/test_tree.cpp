#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <numeric>
#include <random>

#include "motes/particles/layout/builder.hpp"
#include "motes/particles/layout/radix_sort.hpp"
#include "motes/particles/layout/tree.hpp"
#include "test_util.hpp"

using namespace motes;

TEST(Tree, LeafPiecesFollowDoublingPattern) {
  std::vector<std::pair<uint32_t, uint32_t>> pieces;
  for_each_piece(TreeNode{0, 37}, 4, [&](uint32_t level, uint32_t first, uint32_t count) {
    EXPECT_EQ(first, std::accumulate(pieces.begin(), pieces.end(), 0u, [](uint32_t a, auto p) { return a + p.second; }));
    pieces.push_back({level, count});
  });
  std::vector<std::pair<uint32_t, uint32_t>> want = {{0, 4}, {1, 4}, {2, 8}, {3, 16}, {4, 5}};
  EXPECT_EQ(pieces, want);
}

TEST(Tree, LevelsOfSmallTree) {
  // root (K=2 own) with leaves of 5 and 3 points
  std::vector<TreeNode> nodes = {{2, 2}, {0, 5}, {0, 3}};
  Levels lv = compute_levels(nodes, 2, 10);
  ASSERT_EQ(lv.level_count(), 4u);
  EXPECT_EQ(lv.level_start, (std::vector<uint64_t>{0, 2, 6, 9, 10}));
  EXPECT_EQ(lv.depth, (std::vector<uint16_t>{0, 1, 1}));
  EXPECT_EQ(lv.subtree_count, (std::vector<uint64_t>{10, 5, 3}));
  // leaf 1: 2 at level 1 (pos 2..3), 2 at level 2 (pos 6..7), 1 at level 3 (pos 9)
  EXPECT_EQ(lv.run_count, 6u);  // the runs, derived on first use
  const LevelRuns& r = lv.runs(nodes);
  ASSERT_EQ(r.runs.size(), 6u);
  ASSERT_EQ(r.run_begin[2] - r.run_begin[1], 3u);
  EXPECT_EQ(r.runs[r.run_begin[1]].start, 2u);
  EXPECT_EQ(r.runs[r.run_begin[1] + 1].start, 6u);
  EXPECT_EQ(r.runs[r.run_begin[1] + 2].start, 9u);
  // leaf 2: 2 at level 1 (pos 4..5), 1 at level 2 (pos 8)
  EXPECT_EQ(r.runs[r.run_begin[2]].start, 4u);
  EXPECT_EQ(r.runs[r.run_begin[2] + 1].start, 8u);
}

// docs/format.md section 5.5, with D = R = 1: level 0 is the coarse prefix; nodes 1 and 2
// are the region roots, each region's fine levels together.
TEST(Tree, RegionalDetailOfSmallTree) {
  std::vector<TreeNode> nodes = {{2, 2}, {0, 5}, {0, 3}};
  Levels lv = compute_levels(nodes, 2, 10, 1, 1);
  ASSERT_TRUE(lv.regional());
  EXPECT_EQ(lv.level_start, (std::vector<uint64_t>{0, 2, 6, 9, 10}));  // counts do not depend on D
  EXPECT_EQ(lv.region_root, (std::vector<uint32_t>{1, 2}));
  EXPECT_EQ(lv.region_at, (std::vector<uint64_t>{2, 4, 6, 7, 7, 9, 10, 10}));
  const LevelRuns& r = lv.runs(nodes);
  std::vector<uint64_t> starts;
  for (const motes::Run& run : r.runs) starts.push_back(run.start);
  EXPECT_EQ(starts, (std::vector<uint64_t>{0, 2, 4, 6, 7, 9}));
  auto pos = [&](uint32_t b, uint32_t e) {
    std::vector<std::pair<uint64_t, uint64_t>> out;
    for (const PosRange& g : lv.positions(b, e)) out.emplace_back(g.begin, g.end);
    return out;
  };
  using V = std::vector<std::pair<uint64_t, uint64_t>>;
  EXPECT_EQ(pos(0, 1), (V{{0, 2}}));
  EXPECT_EQ(pos(1, 2), (V{{2, 4}, {7, 9}}));            // level 1: a range per region
  EXPECT_EQ(pos(0, 3), (V{{0, 6}, {7, 10}}));
  EXPECT_EQ(pos(0, 4), (V{{0, 10}}));                   // everything: one range
  EXPECT_EQ(pos(2, 4), (V{{4, 7}, {9, 10}}));
  EXPECT_EQ(pos(3, 3), V{});
  EXPECT_THROW(compute_levels(nodes, 2, 10, 4, 1), FormatError);  // D must be below L
  EXPECT_THROW(compute_levels(nodes, 2, 10, 1, 2), FormatError);  // R at most D
  EXPECT_THROW(compute_levels(nodes, 2, 10, 0, 1), FormatError);  // R only with D
  // R = 0: one region, the root's: the level-major order.
  Levels one = compute_levels(nodes, 2, 10, 1, 0);
  EXPECT_EQ(one.region_root, (std::vector<uint32_t>{0}));
  std::vector<uint64_t> level_major;
  for (const motes::Run& run : one.runs(nodes).runs) level_major.push_back(run.start);
  EXPECT_EQ(level_major, (std::vector<uint64_t>{0, 2, 6, 9, 4, 8}));
}

// Every detail level D and region depth R <= D give a one-to-one map of the positions;
// positions(b, e) is exactly the runs of levels [b, e), and the fine levels of a subtree at
// depth R are one range.
TEST(Tree, EveryDetailLevelIsAPermutationOfTheLevels) {
  auto cols = test::make_columns(20000);
  auto v = cols.views();
  LayoutOptions o;
  o.leaf_size = 64;
  o.lod_count = 4;
  o.treelet_size = 1024;
  o.prefix_share = 1.0;
  Layout l = build_layout(v[0], v[1], v[2], o);
  const uint32_t L = l.levels.level_count();
  for (uint32_t d = 0; d < L; ++d)
  for (uint32_t rd = (d ? 0 : 0); rd <= d; rd += (d > 3 ? 3 : 1)) {
    Levels lv = compute_levels(l.nodes, o.lod_count, 20000, d, d ? rd : 0);
    const LevelRuns& r = lv.runs(l.nodes);
    for (uint32_t b = 0; b <= L; b += 3)
      for (uint32_t e = b; e <= L; e += 2) {
        std::vector<uint8_t> want(20000, 0), got(20000, 0);
        for (const motes::Run& run : r.runs)
          if (run.level >= b && run.level < e)
            for (uint32_t k = 0; k < run.count; ++k) ASSERT_FALSE(want[run.start + k]++) << d;
        uint64_t last = 0;
        for (const PosRange& g : lv.positions(b, e)) {
          ASSERT_LE(last, g.begin);
          ASSERT_LT(g.begin, g.end);
          last = g.end + 1;  // adjacent ranges are joined
          for (uint64_t p = g.begin; p < g.end; ++p) got[p] = 1;
        }
        ASSERT_EQ(want, got) << "D " << d << " levels " << b << ".." << e;
      }
    if (d == 0) continue;
    for (uint32_t i = 0; i < l.nodes.size(); ++i) {
      if (lv.depth[i] != rd) continue;
      uint64_t lo = UINT64_MAX, hi = 0, count = 0;
      for (uint32_t k = i; k < lv.subtree_end[i]; ++k)
        for (uint32_t q = r.run_begin[k]; q < r.run_begin[k + 1]; ++q) {
          if (r.runs[q].level < d) continue;
          lo = std::min(lo, r.runs[q].start), hi = std::max(hi, r.runs[q].start + r.runs[q].count);
          count += r.runs[q].count;
        }
      if (count) ASSERT_EQ(hi - lo, count) << "the fine levels of node " << i << " at depth " << rd << " are not one range";
    }
  }
  // The writer's choice: the first level whose start holds the share.
  Levels lv0 = compute_levels(l.nodes, o.lod_count, 20000);
  const uint32_t d = choose_detail_level(lv0, 1.0 / 16);
  ASSERT_GT(d, 0u);
  EXPECT_GE(lv0.level_start[d] * 16, 20000u);
  EXPECT_LT(lv0.level_start[d - 1] * 16, 20000u);
  EXPECT_EQ(choose_detail_level(lv0, 1.0), 0u);
  EXPECT_EQ(choose_region_depth(lv0, d, 1), d);         // regions at most at D
  EXPECT_EQ(choose_region_depth(lv0, d, 20000), 0u);    // one region of everything
  EXPECT_EQ(choose_region_depth(lv0, d, 5000), 2u);     // 20000 / 4
}

// compute_levels counts leaves per (depth, piece count) instead of walking their pieces: the
// totals and the regions' counts equal the piece by piece ones on random trees of any leaf
// sizes (0, 1, K, K + 1, powers of two, millions).
TEST(Tree, LevelTotalsEqualThePiecesOnRandomTrees) {
  std::mt19937_64 rng(7);
  for (int t = 0; t < 200; ++t) {
    const uint32_t K = 1 + uint32_t(rng() % 9);
    std::vector<TreeNode> nodes;
    std::function<void(int)> grow = [&](int depth) {  // a random shape, preorder
      const size_t i = nodes.size();
      nodes.push_back({0, 0});
      if (depth < 12 && rng() % 3 != 0) {
        nodes[i].own_count = rng() % 4 == 0 ? 0 : K;
        grow(depth + 1);
        nodes[i].right = uint32_t(nodes.size());
        grow(depth + 1);
      } else {
        const uint32_t sizes[] = {0, 1, K, K + 1, 2 * K, 2 * K + 1, 64, 1000, 4096, 1u << 20};
        nodes[i].own_count = rng() % 2 ? sizes[rng() % 10] : uint32_t(rng() % 5000);
      }
    };
    grow(0);
    uint64_t total = 0;
    for (const TreeNode& nd : nodes) total += nd.own_count;
    Levels lv0 = compute_levels(nodes, K, total);
    std::vector<uint64_t> want(lv0.level_count() + 1, 0);
    uint64_t runs = 0;
    for (size_t i = 0; i < nodes.size(); ++i)
      for_each_piece(nodes[i], K, [&](uint32_t j, uint32_t, uint32_t c) { want[lv0.depth[i] + j + 1] += c, ++runs; });
    for (size_t l = 1; l < want.size(); ++l) want[l] += want[l - 1];
    ASSERT_EQ(lv0.level_start, want) << "tree " << t;
    ASSERT_EQ(lv0.run_count, runs);
    const uint32_t L = lv0.level_count();
    for (uint32_t d = 1; d < L; d += 2)
      for (uint32_t r = 0; r <= d; r += 2) {
        Levels lv = compute_levels(nodes, K, total, d, r);
        // The runs tile the positions: sorted by start, each begins where the last ended.
        std::vector<std::pair<uint64_t, uint64_t>> spans;
        for (const motes::Run& run : lv.runs(nodes).runs)
          if (run.count) spans.emplace_back(run.start, run.start + run.count);
        std::sort(spans.begin(), spans.end());
        uint64_t next = 0;
        for (const auto& [b, e] : spans) {
          ASSERT_EQ(b, next) << t << " " << d << " " << r;
          next = e;
        }
        ASSERT_EQ(next, total) << t << " " << d << " " << r;
        uint64_t fine = 0;
        for (const PosRange& g : lv.positions(d, L)) fine += g.end - g.begin;
        ASSERT_EQ(fine, total - lv.level_start[d]);
      }
  }
}

TEST(Tree, RejectsMalformedTrees) {
  EXPECT_THROW(compute_levels({}, 8, 0), FormatError);
  EXPECT_THROW(compute_levels({{5, 1}}, 8, 1), FormatError);            // right child out of range
  EXPECT_THROW(compute_levels({{2, 1}, {0, 1}, {0, 1}}, 8, 4), FormatError);  // wrong count
  EXPECT_THROW(compute_levels({{1, 1}, {0, 1}}, 8, 2), FormatError);    // right == left
  EXPECT_THROW(compute_levels({{0, 1}, {0, 1}}, 8, 2), FormatError);    // unreachable node
  EXPECT_THROW(compute_levels({{0, 1}}, 0, 1), FormatError);            // zero LOD count
}

TEST(Tree, QualityMapsToLevels) {
  EXPECT_EQ(levels_for_quality(0.0, 20), 0u);
  EXPECT_EQ(levels_for_quality(1.0, 20), 20u);
  EXPECT_EQ(levels_for_quality(0.5, 20), 10u);
  EXPECT_EQ(levels_for_quality(0.01, 20), 1u);
  EXPECT_THROW(levels_for_quality(-0.1, 20), UsageError);
  EXPECT_THROW(levels_for_quality(1.5, 20), UsageError);
  EXPECT_THROW(levels_for_quality(std::nan(""), 20), UsageError);
}

class BuilderTest : public ::testing::TestWithParam<uint64_t> {};

TEST_P(BuilderTest, OrderIsAPermutationAndTreeIsValid) {
  uint64_t n = GetParam();
  auto cols = test::make_columns(n);
  auto v = cols.views();
  LayoutOptions o;
  o.leaf_size = 64;
  o.lod_count = 4;
  o.treelet_size = 1024;
  Layout l = build_layout(v[0], v[1], v[2], o);
  ASSERT_EQ(l.order.size(), n);
  std::vector<uint8_t> seen(n, 0);
  for (uint64_t r : l.order) {
    ASSERT_LT(r, n);
    ASSERT_FALSE(seen[r]) << "row " << r << " placed twice";
    seen[r] = 1;
  }
  EXPECT_EQ(l.levels.subtree_count[0], n);
  for (size_t i = 0; i < l.nodes.size(); ++i) {
    if (l.nodes[i].is_leaf()) EXPECT_LE(l.nodes[i].own_count, o.leaf_size);
    else EXPECT_EQ(l.nodes[i].own_count, o.lod_count);
  }
  // Every point lies inside the bounds of its node's subtree: check leaves' points against parents' splits
  // indirectly, by checking that a leaf's points are spatially compact relative to the whole set.
  if (n >= 10000) {
    double total_extent = (l.bounds.hi[0] - l.bounds.lo[0]);
    double worst = 0;
    for (size_t i = 0; i < l.nodes.size(); ++i) {
      if (!l.nodes[i].is_leaf() || l.nodes[i].own_count < 8) continue;
      float mn = 1e9f, mx = -1e9f;
      const LevelRuns& lr = l.levels.runs(l.nodes);
      for (uint32_t r = lr.run_begin[i]; r < lr.run_begin[i + 1]; ++r)
        for (uint32_t k = 0; k < lr.runs[r].count; ++k) {
          float x = cols.x[l.order[lr.runs[r].start + k]];
          mn = std::min(mn, x), mx = std::max(mx, x);
        }
      worst = std::max(worst, double(mx - mn));
    }
    EXPECT_LT(worst, total_extent * 0.6);
  }
}

INSTANTIATE_TEST_SUITE_P(Sizes, BuilderTest, ::testing::Values(0, 1, 7, 64, 65, 1000, 50000));

TEST(Builder, RejectsBadInput) {
  auto cols = test::make_columns(100);
  auto v = cols.views();
  cols.y[17] = std::numeric_limits<float>::quiet_NaN();
  try {
    build_layout(v[0], v[1], v[2], {});
    FAIL() << "NaN accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("'y'"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("row 17"), std::string::npos);
  }
  cols.y[17] = 0.5f;
  cols.z[3] = std::numeric_limits<float>::infinity();
  EXPECT_THROW(build_layout(v[0], v[1], v[2], {}), UsageError);
  LayoutOptions bad;
  bad.leaf_size = 2;
  EXPECT_THROW(check_layout_options(bad), UsageError);
  EXPECT_THROW(build_layout(v[0], v[1], v[5], {}), UsageError);  // u64 position column
}

TEST(Builder, IdenticalPositionsStillSplit) {
  std::vector<double> x(5000, 1.0), y(5000, 2.0), z(5000, 3.0);
  auto view = [](const char* n, const std::vector<double>& d) {
    ColumnView c;
    c.spec = {n, DType::f64, IndexKind::none, ""};
    c.data = d.data();
    c.count = d.size();
    return c;
  };
  LayoutOptions o;
  o.leaf_size = 100;
  o.treelet_size = 1000;
  Layout l = build_layout(view("x", x), view("y", y), view("z", z), o);
  for (const TreeNode& n : l.nodes)
    if (n.is_leaf()) EXPECT_LE(n.own_count, 100u);
}

TEST(Builder, CodeBitSortIsStable) {
  std::mt19937_64 rng(5);
  for (uint64_t n : {0ull, 1ull, 50ull, 1000ull, 70000ull, 300001ull}) {
    for (int bits : {1, 10, 20, 21, 32}) {
      for (int shape = 0; shape < 3; ++shape) {
        std::vector<uint64_t> keys(n);
        const uint64_t mask = bits == 32 ? 0xffffffffull : (uint64_t(1) << bits) - 1;
        for (uint64_t i = 0; i < n; ++i) {
          // shape 0: any code bits; 1: few distinct (long runs of ties); 2: one digit everywhere but the top;
          // bits above `bits` are not part of the key's order and must not move it
          uint64_t code = shape == 0 ? rng() : shape == 1 ? rng() % 7 : (rng() % 3) << (bits - 1);
          code = (code & mask) | (rng() & ~mask & 0xffffffffull);
          keys[i] = code << 32 | (rng() & 0xffffffff);
        }
        std::vector<uint64_t> want = keys;
        std::stable_sort(want.begin(), want.end(), [&](uint64_t a, uint64_t b) { return (a >> 32 & mask) < (b >> 32 & mask); });
        for (unsigned threads : {1u, 2u, 3u}) {
          std::vector<uint64_t> got = keys, scratch(n);
          sort_low_code_bits(got.data(), n, scratch.data(), bits, threads);
          ASSERT_EQ(got, want) << n << " keys, " << bits << " bits, shape " << shape << ", " << threads << " threads";
        }
      }
    }
  }
}

TEST(Builder, BucketSortIsAStableSortOfTheCodes) {
  struct Rec {
    uint32_t code, row;
  };
  std::mt19937_64 rng(6);
  for (uint64_t n : {0ull, 1ull, 1000ull, 70000ull, 300001ull, 2500000ull}) {
    for (int shape = 0; shape < 4; ++shape) {
      std::vector<uint32_t> code(n);
      for (uint64_t i = 0; i < n; ++i)
        // 0: any; 1: few distinct; 2: one bucket (top bits equal); 3: nearly all in one bucket, a few elsewhere
        code[i] = shape == 0 ? uint32_t(rng()) : shape == 1 ? uint32_t(rng() % 5) << 29 | 7
                : shape == 2 ? 0x5a500000u | uint32_t(rng() & 0xfffff) : (rng() % 1000 ? 0x12300000u | uint32_t(rng() & 0xfffff) : uint32_t(rng()));
      std::vector<Rec> want(n);
      for (uint64_t i = 0; i < n; ++i) want[i] = Rec{code[i], uint32_t(i)};
      std::stable_sort(want.begin(), want.end(), [](const Rec& a, const Rec& b) { return a.code < b.code; });
      for (unsigned threads : {1u, 2u, 3u}) {
        std::vector<Rec> got(n);
        int counted = 0;
        bucket_sort(
            n, threads,
            [&](uint64_t i, Rec& r) {
              r = Rec{code[i], uint32_t(i)};
              return code[i];
            },
            [](const Rec& r) { return r.code; }, [&] { ++counted; }, got.data());
        EXPECT_EQ(counted, 1);
        for (uint64_t i = 0; i < n; ++i)
          ASSERT_TRUE(got[i].code == want[i].code && got[i].row == want[i].row)
              << n << " rows, shape " << shape << ", " << threads << " threads, at " << i;
      }
    }
  }
}
