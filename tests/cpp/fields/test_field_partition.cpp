// Parallel field writes without MPI (fields/partition): parts are near-equal runs of blocks
// over at most one aggregator per rank; the ranks' boxes must cover the grid once; routing a
// box sends every sample to the part holding its HZ index, once; parts written from routed
// samples (write_field_part) read back as the serial writer's file does, and one part is the
// serial file byte for byte.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <set>

#include "motes/core/errors.hpp"
#include "motes/fields/file.hpp"
#include "motes/fields/partition.hpp"

using namespace motes;
using namespace motes::fields;
namespace fs = std::filesystem;

namespace {

FieldSpec spec_of(Dims dims, int ndim, DType dtype = DType::f32) {
  FieldSpec s;
  s.name = "rho";
  s.dtype = dtype;
  s.ndim = ndim;
  s.dims = dims;
  return s;
}

std::string bytes_of(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

// Splits dims into a grid of boxes, one per rank (some ranks may get none).
std::vector<GridBox> rank_boxes(const Dims& dims, const std::array<uint64_t, 3>& split) {
  std::vector<GridBox> out;
  for (uint64_t k = 0; k < split[2]; ++k)
    for (uint64_t j = 0; j < split[1]; ++j)
      for (uint64_t i = 0; i < split[0]; ++i) {
        GridBox b;
        const uint64_t idx[3] = {i, j, k};
        for (size_t a = 0; a < 3; ++a) {
          const uint64_t lo = idx[a] * dims[a] / split[a], hi = (idx[a] + 1) * dims[a] / split[a];
          b.offset[a] = lo, b.count[a] = hi - lo;
        }
        out.push_back(b);
      }
  return out;
}

}  // namespace

TEST(FieldPartition, PartsAreRunsOfBlocksWithSpreadAggregators) {
  const FieldSpec s = spec_of({100, 90, 80}, 3);  // padded 128^3 = 2^21 samples, 128 blocks of 2^14
  const uint64_t bytes = s.sample_count() * 4;
  for (int ranks : {1, 2, 3, 7, 64, 1000}) {
    for (uint64_t target : {uint64_t(0), bytes / 5, bytes / 1000, uint64_t(1)}) {
      const FieldPartition p = plan_field_parts(s, kDefaultBlockBits, target, ranks);
      ASSERT_GE(p.parts, 1u);
      EXPECT_LE(p.parts, uint32_t(std::min(ranks, 128)));
      EXPECT_EQ(p.first_block.front(), 0u);
      EXPECT_EQ(p.first_block.back(), 128u);
      std::set<int> aggs(p.aggregator.begin(), p.aggregator.end());
      EXPECT_EQ(aggs.size(), p.parts);  // one part per aggregator
      for (uint32_t k = 0; k < p.parts; ++k) {
        const uint64_t n = p.first_block[k + 1] - p.first_block[k];
        EXPECT_GE(n, 128 / p.parts);
        EXPECT_LE(n, 128 / p.parts + 1);
        EXPECT_LT(p.aggregator[k], ranks);
        EXPECT_EQ(p.part_of(p.first_sample(k)), k);
        EXPECT_EQ(p.part_of(p.first_sample(k) + p.samples(k) - 1), k);
      }
      if (target == bytes / 5 && ranks >= 5) EXPECT_EQ(p.parts, 5u);
    }
  }
}

TEST(FieldPartition, CoverMustBeExactlyOnce) {
  const Dims dims{10, 7, 3};
  EXPECT_NO_THROW(check_cover("rho", dims, rank_boxes(dims, {3, 2, 1})));
  auto boxes = rank_boxes(dims, {2, 2, 1});
  boxes.push_back(GridBox{});  // a rank without a block
  EXPECT_NO_THROW(check_cover("rho", dims, boxes));
  auto overlap = boxes;
  overlap[1].offset[0] -= 1;
  overlap[1].count[0] += 1;
  try {
    check_cover("rho", dims, overlap);
    FAIL() << "an overlap was accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("ranks 0"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("overlap"), std::string::npos) << e.what();
  }
  auto hole = boxes;
  hole[3].count[1] -= 1;
  try {
    check_cover("rho", dims, hole);
    FAIL() << "a hole was accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("hole"), std::string::npos) << e.what();
  }
  auto outside = boxes;
  outside[2].offset[2] = 2;
  EXPECT_THROW(check_cover("rho", dims, outside), UsageError);
}

TEST(FieldPartition, RoutingSendsEverySampleToItsPartOnce) {
  for (bool by_blocks : {false, true})
  for (auto [dims, ndim] : std::vector<std::pair<Dims, int>>{{{37, 21, 9}, 3}, {{130, 70, 1}, 2}, {{5000, 1, 1}, 1}, {{64, 64, 32}, 3}}) {
    const FieldSpec s = spec_of(dims, ndim);
    const HzOrder order(Bitmask::guess(dims, ndim));
    for (uint32_t want : {1u, 3u, 5u}) {
      const FieldPartition p = plan_field_parts(s, kMinBlockBits, s.sample_count() * 4 / want, 64);
      std::vector<uint8_t> seen(order.size(), 0);
      for (const GridBox& b : rank_boxes(dims, {3, ndim > 1 ? 2u : 1u, ndim > 2 ? 2u : 1u})) {
        const BoxRouting r = by_blocks ? route_box_blocks(order, p, b, 2) : route_box(order, p, b, 2);
        uint64_t total = 0;
        for (uint32_t k = 0; k < p.parts; ++k) {
          ASSERT_EQ(r.start[k + 1] - r.start[k], r.counts[k]);
          total += r.counts[k];
          for (uint64_t j = r.start[k]; j < r.start[k + 1]; ++j) {
            const uint64_t i = r.index_in_array[j];
            const uint64_t x = b.offset[0] + i % b.count[0], y = b.offset[1] + (i / b.count[0]) % b.count[1],
                           z = b.offset[2] + i / (b.count[0] * b.count[1]);
            const uint64_t hz = order.hz_of(x, y, z);
            ASSERT_EQ(p.first_sample(k) + r.offset_in_part[j], hz);
            ASSERT_EQ(seen[hz]++, 0);
          }
        }
        EXPECT_EQ(total, b.size());
      }
      uint64_t covered = 0;
      for (uint8_t v : seen) covered += v;
      EXPECT_EQ(covered, s.sample_count());
    }
  }
}

TEST(FieldPartition, PartsReadBackAsTheWholeFieldAndOnePartIsTheSerialFile) {
  const fs::path dir = fs::temp_directory_path() / ("motes_partition_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  FieldSpec s = spec_of({45, 33, 20}, 3, DType::f64);
  s.components = {"x", "y"};
  const HzOrder order(Bitmask::guess(s.dims, s.ndim));
  std::mt19937_64 rng(3);
  std::vector<std::vector<double>> values(2, std::vector<double>(s.sample_count()));
  for (auto& v : values)
    for (uint64_t i = 0; i < v.size(); ++i) v[i] = double(i % 97) * 0.25 + double(rng() % 1000) * 1e-3;
  FieldWriteOptions o;
  o.sync = false;
  o.block_bits = 10;
  const std::string serial = (dir / "serial.mfd").string();
  write_field_file(serial, s, {values[0].data(), values[1].data()}, o);
  for (uint32_t want : {1u, 4u, 9u}) {
    const FieldPartition p = plan_field_parts(s, o.block_bits, s.sample_count() * 16 / want, 16);
    ASSERT_EQ(p.parts, want);
    std::vector<std::string> paths;
    for (uint32_t k = 0; k < p.parts; ++k) {
      // The part's samples in HZ order, as an aggregator assembles them.
      const uint64_t n = p.samples(k);
      std::vector<std::vector<double>> hz(2, std::vector<double>(n, 0.0));
      std::vector<uint8_t> inside(n, 0);
      for (uint64_t j = 0; j < n; ++j) {
        const Dims pt = order.point_of_hz(p.first_sample(k) + j);
        if (pt[0] >= s.dims[0] || pt[1] >= s.dims[1] || pt[2] >= s.dims[2]) continue;
        const uint64_t at = (pt[2] * s.dims[1] + pt[1]) * s.dims[0] + pt[0];
        for (int c = 0; c < 2; ++c) hz[size_t(c)][j] = values[size_t(c)][at];
        inside[j] = 1;
      }
      paths.push_back((dir / ("part" + std::to_string(k) + ".mfd")).string());
      write_field_part(paths.back(), s, {hz[0].data(), hz[1].data()}, inside.data(),
                       PartInfo{k, p.parts, p.first_block[k], p.first_block[k + 1] - p.first_block[k]}, o);
    }
    if (want == 1) EXPECT_EQ(bytes_of(paths[0]), bytes_of(serial));
    const auto whole = FieldFile::open(serial);
    const auto parted = FieldFile::open(paths);
    EXPECT_EQ(parted->part_count(), want);
    for (int level : {0, 1, 3}) {
      for (size_t c = 0; c < 2; ++c) {
        const Region r = parted->region({3, 2, 1}, {44, 30, 19}, level);
        std::vector<double> a(r.size()), b(r.size());
        whole->read(r, c, a.data());
        parted->read(r, c, b.data());
        EXPECT_EQ(a, b) << "parts " << want << " level " << level;
        EXPECT_EQ(whole->ranges()[c].min, parted->ranges()[c].min);
        EXPECT_EQ(whole->ranges()[c].max, parted->ranges()[c].max);
      }
    }
    parted->verify();
    if (want > 1) {
      // A part missing, or the parts out of order, is refused by name.
      std::vector<std::string> missing(paths.begin(), paths.end() - 1);
      EXPECT_THROW(FieldFile::open(missing), FormatError);
      std::vector<std::string> swapped = paths;
      std::swap(swapped[0], swapped[1]);
      EXPECT_THROW(FieldFile::open(swapped), FormatError);
      EXPECT_THROW(FieldFile::open(paths[1]), FormatError);  // a part alone is not a field
    }
  }
  fs::remove_all(dir);
}
