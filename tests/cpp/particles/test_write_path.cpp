// The write path's row stage (particles/row_stage.hpp): the same files with it and
// without it, rows gathered exactly, and the choice of when it pays.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <numeric>
#include <random>

#include "motes/particles/reader.hpp"
#include "motes/particles/row_stage.hpp"
#include "motes/particles/writer.hpp"
#include "test_util.hpp"

using namespace motes;

namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// make_columns' rows (random order) with a 1-byte and a 2-byte column beside them: the
// stage packs every width.
struct Mixed {
  test::Columns c;
  std::vector<uint8_t> flag;
  std::vector<int16_t> charge;
  explicit Mixed(uint64_t n) : c(test::make_columns(n, 5)) {
    for (uint64_t i = 0; i < n; ++i) flag.push_back(uint8_t(i * 7)), charge.push_back(int16_t(int64_t(i % 1000) - 500));
  }
  std::vector<ColumnView> views() const {
    std::vector<ColumnView> v = c.views();
    ColumnView f = v[0], q = v[0];
    f.spec = {"flag", DType::u8, IndexKind::automatic, ""}, f.data = flag.data();
    q.spec = {"charge", DType::i16, IndexKind::automatic, ""}, q.data = charge.data();
    v.insert(v.begin() + 1, f);  // between the positions: offsets must not follow schema order
    v.push_back(q);
    return v;
  }
};

}  // namespace

TEST(WritePath, RowStageGathersEveryColumnExactly) {
  Mixed m(5000);
  const std::vector<ColumnView> cols = m.views();
  RowStage stage(cols, 2);
  EXPECT_EQ(stage.row_bytes() % 8, 0u);
  std::vector<uint64_t> rows(1500);
  std::mt19937_64 rng(3);
  for (uint64_t& r : rows) r = rng() % 5000;
  // Gathered into rows [100, 1600) of a buffer laid out for 1999 rows per column: an odd
  // count, whose regions must still start aligned.
  std::vector<uint64_t> words((stage.region(cols.size(), 1999) + 7) / 8);
  unsigned char* out = reinterpret_cast<unsigned char*>(words.data());
  stage.gather(rows.data(), rows.size(), out, 1999, 100);
  for (size_t c = 0; c < cols.size(); ++c) {
    const size_t size = dtype_size(cols[c].spec.dtype);
    EXPECT_EQ(stage.region(c, 1999) % 64, 0u) << cols[c].spec.name;
    EXPECT_GE(stage.region(c + 1, 1999) - stage.region(c, 1999), 1999 * size);
    for (size_t i = 0; i < rows.size(); ++i) {
      const unsigned char* want = static_cast<const unsigned char*>(cols[c].data) + rows[i] * size;
      ASSERT_EQ(0, std::memcmp(out + stage.region(c, 1999) + (100 + i) * size, want, size))
          << cols[c].spec.name << " row " << rows[i];
    }
  }
}

TEST(WritePath, RowStageWritesTheSameBytesAsSeparateColumns) {
  // Enough rows for a stage, many small windows so that gathers and column tasks of
  // several windows interleave, on several thread counts; an odd count, so that the last
  // window's column regions need their alignment.
  Mixed m(100003);
  const std::vector<ColumnView> cols = m.views();
  ASSERT_TRUE(RowStage::pays(cols[0], cols[2], cols[3]));  // make_columns' rows are in random order
  std::string without;
  for (unsigned threads : {1u, 2u, 3u}) {
    for (bool staged : {false, true}) {
      WriteOptions o;
      o.sync = false;
      o.block_values = 512;
      o.window_rows = 4096;
      o.layout.treelet_size = 4096;
      o.layout.threads = threads;
      o.stage_rows = staged;
      o.stage_min_bytes = 0;  // any size: these columns hold a few megabytes
      const std::string path = test::temp_path("stage" + std::to_string(threads) + std::to_string(staged) + ".mpf");
      WriteSummary s = write_particle_file(path, cols, o);
      EXPECT_EQ(s.phases.seconds.front().first, "quantize");
      const std::string bytes = slurp(path);
      if (without.empty()) {
        without = bytes;
        auto f = ParticleFile::open(path, true);
        EXPECT_EQ(f->particle_count(), 100003u);
      } else {
        ASSERT_TRUE(bytes == without) << threads << " threads, stage " << staged << ": other bytes";
      }
    }
  }
}

TEST(WritePath, RowStageIsLeftOutForRowsInSpatialOrder) {
  // The same points sorted by cell of a 32^3 grid, as simulations sort theirs:
  // neighbouring rows are neighbours in space.
  test::Columns c = test::make_columns(100000, 6);
  auto cell = [&](size_t i) {
    auto at = [](float v) { return std::clamp(int64_t(v * 32), int64_t(0), int64_t(31)); };
    return at(c.x[i]) + 32 * (at(c.y[i]) + 32 * at(c.z[i]));
  };
  std::vector<size_t> order(c.x.size());
  std::iota(order.begin(), order.end(), size_t(0));
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return cell(a) < cell(b); });
  test::Columns s;
  for (size_t i : order) s.x.push_back(c.x[i]), s.y.push_back(c.y[i]), s.z.push_back(c.z[i]);
  std::vector<ColumnView> random_order = c.views(), sorted = s.views();
  EXPECT_TRUE(RowStage::pays(random_order[0], random_order[1], random_order[2]));
  EXPECT_FALSE(RowStage::pays(sorted[0], sorted[1], sorted[2]));
  // Every point in one place: no order to fix.
  test::Columns same;
  same.x.assign(100000, 0.5f), same.y = same.x, same.z = same.x;
  std::vector<ColumnView> sv = same.views();
  EXPECT_FALSE(RowStage::pays(sv[0], sv[1], sv[2]));
  // Too few rows to pay, in any order.
  test::Columns few = test::make_columns(1000, 7);
  std::vector<ColumnView> fv = few.views();
  EXPECT_FALSE(RowStage::pays(fv[0], fv[1], fv[2]));
}
