// HZ order (fields/hz): the numbering is a bijection of the padded grid; every prefix
// [0, 2^r) is the lattice of resolution r; levels keep every 2^k-th sample per axis;
// gather and scatter agree with plain loops; the blocks of a box hold all its samples.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>

#include "motes/core/errors.hpp"
#include "motes/fields/hz.hpp"

using namespace motes;
using namespace motes::fields;

namespace {

struct Grid {
  Dims dims;
  int ndim;
};

std::vector<Grid> grids() {
  return {{{1, 1, 1}, 1}, {{7, 1, 1}, 1},   {{8, 4, 2}, 3},    {{5, 3, 1}, 2},
          {{6, 5, 3}, 3}, {{16, 16, 16}, 3}, {{33, 2, 9}, 3}, {{1, 17, 4}, 3}};
}

}  // namespace

TEST(Hz, GuessIsOpenVisusRegularAsSoonAsPossible) {
  EXPECT_EQ(Bitmask::guess({8, 4, 2}, 3).text(), "V001012");
  EXPECT_EQ(Bitmask::guess({512, 512, 512}, 3).text(), "V012012012012012012012012012");
  EXPECT_EQ(Bitmask::guess({5, 3, 1}, 2).text(), "V00101");
  EXPECT_EQ(Bitmask::guess({1, 1, 1}, 3).text(), "V");
  EXPECT_EQ(Bitmask::parse("V001012").text(), "V001012");
  EXPECT_THROW(Bitmask::parse("X01"), FormatError);
  EXPECT_THROW(Bitmask::parse("V013"), FormatError);
  EXPECT_THROW(Bitmask::guess({0, 1, 1}, 1), UsageError);
}

TEST(Hz, NumberingIsABijectionWhosePrefixesAreLattices) {
  for (const Grid& g : grids()) {
    const Bitmask m = Bitmask::guess(g.dims, g.ndim);
    const HzOrder order(m);
    const Dims p2 = m.pow2_dims();
    std::set<uint64_t> seen;
    for (uint64_t z = 0; z < p2[2]; ++z)
      for (uint64_t y = 0; y < p2[1]; ++y)
        for (uint64_t x = 0; x < p2[0]; ++x) {
          const uint64_t hz = order.hz_of(x, y, z);
          ASSERT_LT(hz, order.size());
          EXPECT_TRUE(seen.insert(hz).second) << m.text();
          EXPECT_EQ(order.point_of_hz(hz), (Dims{x, y, z})) << m.text() << " hz " << hz;
          // hz < 2^r exactly when the point is on the lattice of resolution r.
          for (int r = 0; r <= m.maxh(); ++r) {
            const auto s = m.stride_bits(r);
            const bool on = x % (1u << s[0]) == 0 && y % (1u << s[1]) == 0 && z % (1u << s[2]) == 0;
            EXPECT_EQ(hz < (uint64_t(1) << r), on) << m.text() << " r " << r;
          }
        }
    EXPECT_EQ(seen.size(), order.size());
  }
}

TEST(Hz, LevelsKeepEvery2kThSampleAlongEachAxis) {
  for (const Grid& g : grids()) {
    const Bitmask m = Bitmask::guess(g.dims, g.ndim);
    for (int k = 0; k <= m.levels() + 1; ++k) {
      const auto s = m.stride_bits(m.resolution_of_level(k));
      for (int a = 0; a < 3; ++a) EXPECT_EQ(s[size_t(a)], std::min(k, m.bits(a))) << m.text() << " k " << k;
    }
  }
  // OpenVisus' other guess (regular near the V) has no such resolution for k = 1.
  EXPECT_THROW(Bitmask::parse("V012012012010").resolution_of_level(1), UsageError);
}

TEST(Hz, GatherAndScatterOfRandomBoxesAndLevels) {
  std::mt19937_64 rng(7);
  for (const Grid& g : grids()) {
    const Bitmask m = Bitmask::guess(g.dims, g.ndim);
    const HzOrder order(m);
    const uint64_t n = g.dims[0] * g.dims[1] * g.dims[2];
    std::vector<int32_t> grid(n);
    for (uint64_t i = 0; i < n; ++i) grid[i] = int32_t(i * 7 + 3);
    std::vector<int32_t> hz(order.size());
    order.gather(grid.data(), g.dims, 4, 0, order.size(), hz.data());
    for (uint64_t h = 0; h < order.size(); ++h) {
      const Dims p = order.point_of_hz(h);
      const bool inside = p[0] < g.dims[0] && p[1] < g.dims[1] && p[2] < g.dims[2];
      EXPECT_EQ(hz[h], inside ? grid[(p[2] * g.dims[1] + p[1]) * g.dims[0] + p[0]] : 0);
    }
    for (int trial = 0; trial < 20; ++trial) {
      Dims lo{}, hi{};
      for (size_t a = 0; a < 3; ++a) {
        lo[a] = rng() % g.dims[a];
        hi[a] = lo[a] + 1 + rng() % (g.dims[a] - lo[a]);
      }
      const int k = int(rng() % uint64_t(m.levels() + 1));
      const int r = m.resolution_of_level(k);
      const auto sb = m.stride_bits(r);
      Dims first{}, count{};
      for (size_t a = 0; a < 3; ++a) {
        const uint64_t s = uint64_t(1) << sb[a];
        first[a] = (lo[a] + s - 1) / s;
        count[a] = (hi[a] + s - 1) / s - first[a];
      }
      std::vector<int32_t> out(count[0] * count[1] * count[2], -1);
      const int bb = 2;  // blocks of 4 samples
      uint64_t written = 0;
      for (uint64_t b : blocks_for_box(order, bb, r, lo, hi)) {
        const uint64_t begin = b << bb, end = std::min((b + 1) << bb, uint64_t(1) << r);
        if (begin < end)
          written += order.scatter(hz.data() + begin, 4, begin, end - begin, lo, hi, sb, first, count, out.data());
      }
      EXPECT_EQ(written, out.size()) << m.text();
      for (uint64_t z = 0; z < count[2]; ++z)
        for (uint64_t y = 0; y < count[1]; ++y)
          for (uint64_t x = 0; x < count[0]; ++x) {
            const uint64_t gx = (first[0] + x) << sb[0], gy = (first[1] + y) << sb[1], gz = (first[2] + z) << sb[2];
            EXPECT_EQ(out[(z * count[1] + y) * count[0] + x], grid[(gz * g.dims[1] + gy) * g.dims[0] + gx]);
          }
    }
  }
}

TEST(Hz, BlockLatticeIsTheBlocksSamplesInRowMajorOrder) {
  for (const Grid& g : grids()) {
    const Bitmask m = Bitmask::guess(g.dims, g.ndim);
    const HzOrder order(m);
    for (int bb = 0; bb <= std::min(m.maxh(), 4); ++bb) {
      const uint64_t B = uint64_t(1) << bb;
      for (uint64_t b = 0; b < (order.size() >> bb); ++b) {
        const BlockLattice l = block_lattice(order, bb, b);
        ASSERT_EQ(l.count[0] * l.count[1] * l.count[2], B) << m.text() << " block " << b;
        // The block's points, sorted by (z, y, x), are the lattice's in C order.
        std::vector<std::array<uint64_t, 3>> pts;
        for (uint64_t h = b * B; h < (b + 1) * B; ++h) {
          const Dims p = order.point_of_hz(h);
          pts.push_back({p[2], p[1], p[0]});
        }
        std::sort(pts.begin(), pts.end());
        size_t i = 0;
        for (uint64_t z = 0; z < l.count[2]; ++z)
          for (uint64_t y = 0; y < l.count[1]; ++y)
            for (uint64_t x = 0; x < l.count[0]; ++x, ++i) {
              const std::array<uint64_t, 3> want{l.first[2] + (z << l.step_bits[2]), l.first[1] + (y << l.step_bits[1]),
                                                 l.first[0] + (x << l.step_bits[0])};
              EXPECT_EQ(pts[i], want) << m.text() << " bb " << bb << " block " << b;
            }
      }
      EXPECT_THROW(block_lattice(order, bb, order.size() >> bb), UsageError);
    }
  }
}
