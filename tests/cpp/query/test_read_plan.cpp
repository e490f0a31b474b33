// plan_reads (the parts a query reads and their estimated rows) against brute force: every
// part holding a match is kept, what is left out holds none, and the row estimates are
// level_counts' (exact without a box).
#include <gtest/gtest.h>

#include <cmath>

#include "motes/analysis/analysis.hpp"  // count
#include "motes/particles/collection.hpp"
#include "motes/particles/step_index.hpp"
#include "motes/query/estimate.hpp"
#include "motes/query/read_plan.hpp"
#include "test_util.hpp"

using namespace motes;

namespace {

std::shared_ptr<const Collection> slabs(const std::string& name, int parts) {
  const std::string index_path = test::temp_path(name + ".mpi");
  test::write_slabs(test::make_columns(12000, 21), parts, index_path, 64);
  return Collection::open(index_path);
}

QuerySpec where(const std::string& text) {
  QuerySpec s;
  s.where = text;
  return s;
}

uint64_t matches(const std::shared_ptr<const ParticleFile>& part, const QuerySpec& spec) {
  Query q(part, spec);
  return count(q);
}

}  // namespace

TEST(ReadPlan, KeepsEveryPartWithAMatchAndOnlyPrunesPartsWithout) {
  auto c = slabs("plan-where", 4);
  for (const char* text : {"x >= 0.76", "0.26 < x < 0.49", "2 * x - 1 > 0.05", "not (x < 0.5)", "x > 0.9 or x < 0.1",
                           "x > 2", "energy > 0.9 and kind != 0", "noise > 2", "energy != energy", "id in (5, 7000)",
                           "abs(x - 0.5) < 0.1", "sqrt(y) > 0.95"}) {
    const QuerySpec spec = where(text);
    const ReadPlan plan = plan_reads(c, spec);
    EXPECT_EQ(plan.parts.size() + plan.pruned, c->part_count()) << text;
    std::vector<bool> kept(c->part_count(), false);
    uint32_t last = 0;
    for (size_t i = 0; i < plan.parts.size(); ++i) {
      const PartRead& p = plan.parts[i];
      if (i) EXPECT_GT(p.part, last) << text;  // part order
      last = p.part;
      kept[p.part] = true;
      EXPECT_EQ(p.count, c->part_particle_count(p.part));
      EXPECT_EQ(p.rows, double(p.count)) << text;  // no box, every level: exact
      EXPECT_TRUE(p.levels.empty());
    }
    for (uint32_t k = 0; k < c->part_count(); ++k)
      if (!kept[k]) EXPECT_EQ(matches(c->part(k), spec), 0u) << text << " part " << k;
  }
  EXPECT_EQ(plan_reads(c, where("x > 2")).parts.size(), 0u);
  EXPECT_EQ(plan_reads(c, where("x >= 0.76")).parts.size(), 1u);  // slabs along x: one part
}

TEST(ReadPlan, BoxesAndQualitiesEstimateRowsAsLevelCounts) {
  auto c = slabs("plan-box", 4);
  QuerySpec spec;
  spec.box = Box{{0.3, 0.1, 0.0}, {0.45, 0.9, 1.0}};  // inside the second slab
  ReadPlan plan = plan_reads(c, spec, true);
  ASSERT_EQ(plan.parts.size(), 1u);
  EXPECT_EQ(plan.parts[0].part, 1u);
  EXPECT_EQ(plan.pruned, 3u);
  const std::vector<double> levels = level_counts(*c->part(1), spec.box);
  EXPECT_EQ(plan.parts[0].levels, levels);
  double all = 0;
  for (double v : levels) all += v;
  EXPECT_DOUBLE_EQ(plan.parts[0].rows, all);
  // A part the box holds whole: exactly its particles (its file is not needed for that).
  QuerySpec across;
  across.box = Box{{0.2, -1.0, -1.0}, {0.55, 2.0, 2.0}};  // slab 1 whole, slabs 0 and 2 in part
  const ReadPlan cut = plan_reads(c, across);
  ASSERT_EQ(cut.parts.size(), 3u);
  EXPECT_EQ(cut.parts[1].rows, double(cut.parts[1].count));
  for (size_t i : {0u, 2u}) {
    double sum = 0;
    for (double v : level_counts(*c->part(cut.parts[i].part), across.box)) sum += v;
    EXPECT_DOUBLE_EQ(cut.parts[i].rows, sum);
    EXPECT_LT(cut.parts[i].rows, double(cut.parts[i].count));
  }
  // A quality range reads its levels: without a box, exactly the rows a query returns.
  QuerySpec half;
  half.quality_from = 0.25, half.quality_to = 0.6;
  for (const PartRead& p : plan_reads(c, half).parts) EXPECT_EQ(p.rows, double(matches(c->part(p.part), half)));
  // A fraction: round(f * N) rows of each part, exactly.
  QuerySpec some;
  some.fraction = 0.3;
  for (const PartRead& p : plan_reads(c, some).parts) {
    EXPECT_EQ(p.rows, std::floor(0.3 * double(p.count) + 0.5));
    EXPECT_EQ(p.rows, double(matches(c->part(p.part), some)));
  }
  // With a box, a fraction's estimate is the box's share of those rows, level by level.
  some.box = spec.box;
  const PartRead p = plan_reads(c, some).parts.at(0);
  EXPECT_GT(p.rows, 0.0);
  EXPECT_LE(p.rows, std::floor(0.3 * double(p.count) + 0.5));
  QuerySpec none;
  none.quality_to = 0.0;
  EXPECT_TRUE(plan_reads(c, none).parts.empty());
}

TEST(ReadPlan, ASingleFileIsPrunedByItsRoot) {
  const std::string path = test::temp_path("plan-single.mpf");
  WriteOptions o;
  o.sync = false;
  write_particle_file(path, test::make_columns(3000, 3).views(), o);
  auto c = Collection::open(path);
  EXPECT_TRUE(plan_reads(c, where("x > 2")).parts.empty());
  EXPECT_EQ(plan_reads(c, where("x > 2")).pruned, 1u);
  ReadPlan kept = plan_reads(c, where("x < 2"));
  ASSERT_EQ(kept.parts.size(), 1u);
  EXPECT_EQ(kept.parts[0].rows, 3000.0);
  EXPECT_THROW(plan_reads(c, where("nope > 1")), UsageError);
}
