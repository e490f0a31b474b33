// Multi-part species: part files behind a step index read as one collection.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>

#include "motes/analysis/analysis.hpp"
#include "motes/particles/step_index.hpp"
#include "motes/particles/writer.hpp"
#include "motes/query/engine.hpp"
#include "motes/query/selection.hpp"
#include "test_util.hpp"

using namespace motes;

namespace {

// Splits the columns into `parts` slabs along x and writes them with their index.
struct PartedFixture {
  test::Columns all;
  std::string index_path;
  std::vector<test::Columns> slabs;
  explicit PartedFixture(uint64_t n, int parts, const std::string& name) : all(test::make_columns(n, 11)) {
    index_path = test::temp_path(name + ".mpi");
    slabs = test::write_slabs(all, parts, index_path, 128);
  }
  std::vector<uint64_t> ids(const QuerySpec& spec, QueryCounters* counters = nullptr) {
    Query q(Collection::open(index_path), spec);
    Selection s(q);
    std::vector<uint64_t> out(s.size());
    s.gather(q.collection().column("id"), 0, s.size(), out.data(), 2);
    if (counters) *counters = q.counters();
    std::sort(out.begin(), out.end());
    return out;
  }
};

}  // namespace

TEST(StepIndex, PartPathsFollowTheIndexName) {
  EXPECT_EQ(StepIndex::part_path("d/steps/000003/electrons.mpi", 7), "d/steps/000003/electrons.p000007.mpf");
}

TEST(StepIndex, QueriesOverPartsMatchBruteForceAndSkipParts) {
  PartedFixture fx(40000, 6, "parted");
  auto c = Collection::open(fx.index_path);
  ASSERT_EQ(c->part_count(), 6u);
  EXPECT_EQ(c->particle_count(), 40000u);
  auto brute = [&](auto pred) {
    std::vector<uint64_t> out;
    for (uint64_t i = 0; i < fx.all.x.size(); ++i)
      if (pred(i)) out.push_back(i);
    return out;
  };
  QuerySpec everything;
  EXPECT_EQ(fx.ids(everything), brute([](uint64_t) { return true; }));
  QuerySpec box;
  box.box = Box{{0.05, 0.1, 0.1}, {0.3, 0.4, 0.4}};
  QueryCounters counters;
  EXPECT_EQ(fx.ids(box, &counters), brute([&](uint64_t i) {
              return fx.all.x[i] >= 0.05f && fx.all.x[i] <= 0.3f && fx.all.y[i] >= 0.1f && fx.all.y[i] <= 0.4f &&
                     fx.all.z[i] >= 0.1f && fx.all.z[i] <= 0.4f;
            }));
  EXPECT_GE(counters.parts_pruned, 4u);  // only the slabs of x in [0.05, 0.3] are opened
  QuerySpec energy;
  energy.where = "energy > 0.9 and kind != 0";
  EXPECT_EQ(fx.ids(energy, &counters), brute([&](uint64_t i) { return fx.all.energy[i] > 0.9f && fx.all.kind[i] != 0; }));
  EXPECT_GE(counters.parts_pruned, 1u);  // energy = x^2 + y/2 is small in the low-x slabs
  QuerySpec noise;
  noise.where = "noise > 2.5";
  EXPECT_EQ(fx.ids(noise), brute([&](uint64_t i) { return fx.all.noise[i] > 2.5; }));
  // Progressive reads over parts still partition the data.
  std::vector<uint64_t> seen;
  for (int s = 0; s < 10; ++s) {
    QuerySpec q;
    q.quality_from = s / 10.0, q.quality_to = (s + 1) / 10.0;
    auto got = fx.ids(q);
    seen.insert(seen.end(), got.begin(), got.end());
  }
  std::sort(seen.begin(), seen.end());
  EXPECT_EQ(seen, brute([](uint64_t) { return true; }));
}

TEST(StepIndex, AnalysesOverPartsEqualOneFile) {
  PartedFixture fx(30000, 4, "parted-analysis");
  WriteOptions o;
  o.sync = false;
  std::string single = test::temp_path("single-analysis.mpf");
  write_particle_file(single, fx.all.views(), o);
  QuerySpec spec;
  spec.where = "energy < 0.7";
  Query parted(Collection::open(fx.index_path), spec), whole(Collection::open(single), spec);
  EXPECT_EQ(count(parted), count(whole));
  ColumnStats a = stats(parted, 4), b = stats(whole, 4);
  EXPECT_EQ(a.count, b.count);
  EXPECT_EQ(a.min, b.min);
  EXPECT_EQ(a.max, b.max);
  EXPECT_NEAR(a.sum, b.sum, 1e-9 * std::max(1.0, std::abs(b.sum)));
  Axis ax{3, 16, 0.0, 1.5}, ay{1, 8, 0.0, 1.0};
  EXPECT_EQ(histogram(parted, ax), histogram(whole, ax));
  EXPECT_EQ(histogram2d(parted, ax, ay), histogram2d(whole, ax, ay));
}

TEST(StepIndex, DamageIsRejectedWithTheFileNamed) {
  PartedFixture fx(5000, 3, "parted-damage");
  std::ifstream in(fx.index_path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto expect_rejected = [&](const std::string& mutated, const char* needle) {
    std::string p = test::temp_path("damaged.mpi");
    std::ofstream(p, std::ios::binary) << mutated;
    try {
      StepIndex::open(p);
      FAIL() << "accepted: " << needle;
    } catch (const FormatError& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("damaged.mpi"), std::string::npos);
    }
  };
  expect_rejected(bytes.substr(0, 100), "shorter than");
  expect_rejected(bytes.substr(0, bytes.size() - 8), "truncated");
  for (size_t at : {size_t(0), size_t(9), size_t(20), size_t(140), bytes.size() / 2, bytes.size() - 1}) {
    std::string m = bytes;
    m[at] = char(m[at] ^ 0x40);
    std::string p = test::temp_path("damaged.mpi");
    std::ofstream(p, std::ios::binary) << m;
    EXPECT_THROW(StepIndex::open(p), FormatError) << "flip at " << at;
  }
  // A part file that does not match its index entry.
  auto c = Collection::open(fx.index_path);
  std::filesystem::copy_file(StepIndex::part_path(fx.index_path, 0), StepIndex::part_path(fx.index_path, 1),
                             std::filesystem::copy_options::overwrite_existing);
  EXPECT_THROW(c->part(1), FormatError);
}
