#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

#include "motes/analysis/analysis.hpp"
#include "motes/container/container.hpp"
#include "motes/dataset/dataset.hpp"
#include "motes/particles/reader.hpp"
#include "motes/particles/spec.hpp"
#include "motes/particles/writer.hpp"
#include "motes/query/engine.hpp"
#include "test_util.hpp"

using namespace motes;
namespace fs = std::filesystem;

namespace {

WriteOptions small_options(Compression c = Compression::lossless) {
  WriteOptions o;
  // Files of a few thousand points in leaves of 64: their tree and ranges alone pass the
  // index budget, which would leave out the quantile codes and covers these tests read.
  o.index_budget = 0;
  o.layout.leaf_size = 64;
  o.layout.lod_count = 4;
  o.layout.treelet_size = 2048;
  o.block_values = 1024;
  o.layout.region_points = 512;  // fine levels region by region in files of a few thousand points
  o.compression = c;
  o.sync = false;
  return o;
}

// Every value of column `name` in file order, read through the file's block stream.
template <class T>
std::vector<T> values_of(const ParticleFile& f, const std::string& name) {
  const BlockStream& s = f.values(f.column(name));
  std::vector<T> out(f.particle_count());
  s.read(0, out.size(), out.data());
  return out;
}

template <class T>
std::vector<T> read_back(const ParticleFile& f, const std::string& name, const std::vector<uint64_t>& file_to_row) {
  std::vector<T> in_file = values_of<T>(f, name);
  std::vector<T> out(f.particle_count());
  for (uint64_t i = 0; i < f.particle_count(); ++i) out[file_to_row[i]] = in_file[i];
  return out;
}

class FormatBoth : public ::testing::TestWithParam<Compression> {};
INSTANTIATE_TEST_SUITE_P(Compression, FormatBoth, ::testing::Values(Compression::none, Compression::lossless),
                         [](const auto& info) { return info.param == Compression::none ? "none" : "lossless"; });

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}
void spit(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), std::streamsize(bytes.size()));
}

}  // namespace

TEST_P(FormatBoth, RoundTripsEveryColumnBitExactly) {
  auto cols = test::make_columns(20000);
  std::string path = test::temp_path("roundtrip.mpf");
  WriteSummary s = write_particle_file(path, cols.views(), small_options(GetParam()));
  EXPECT_EQ(s.particle_count, 20000u);
  auto f = ParticleFile::open(path, true);
  ASSERT_EQ(f->particle_count(), 20000u);
  EXPECT_EQ(f->version_major(), 2);
  if (GetParam() == Compression::none) {
    EXPECT_EQ(f->required_features(), uint64_t(container::kFeatureRegionalDetail));  // no codec needed
    EXPECT_GT(f->detail_level(), 0u);
    for (size_t c = 0; c < f->schema().size(); ++c) EXPECT_NE(f->values(c).in_place(), nullptr);
  } else {
    EXPECT_LT(f->stats().data_bytes, f->stats().raw_data_bytes);
    EXPECT_TRUE(f->values(f->column("id")).is_coded());  // sequential ids compress to almost nothing
  }
  // ids tell where each point came from
  std::vector<uint64_t> file_to_row = values_of<uint64_t>(*f, "id");
  EXPECT_EQ(read_back<float>(*f, "x", file_to_row), cols.x);
  EXPECT_EQ(read_back<float>(*f, "energy", file_to_row), cols.energy);
  EXPECT_EQ(read_back<double>(*f, "noise", file_to_row), cols.noise);
  EXPECT_EQ(read_back<int32_t>(*f, "kind", file_to_row), cols.kind);
  // The noisy column got the quantile index automatically, the smooth one did not.
  EXPECT_EQ(f->schema()[f->column("noise")].index, IndexKind::quantile);
  EXPECT_EQ(f->schema()[f->column("energy")].index, IndexKind::none);
  EXPECT_EQ(f->schema()[f->column("x")].index, IndexKind::none);
  // Node ranges bound their subtrees.
  const ColumnIndex& e = f->index(f->column("energy"));
  const std::vector<float> ev = values_of<float>(*f, "energy");
  const LevelRuns& lv = f->levels().runs(f->nodes());
  for (uint32_t i = 0; i < f->nodes().size(); ++i)
    for (uint32_t r = lv.run_begin[i]; r < lv.run_begin[i + 1]; ++r)
      for (uint32_t k = 0; k < lv.runs[r].count; ++k) {
        float v = ev[lv.runs[r].start + k];
        ASSERT_GE(v, e.node_min[0]);
        ASSERT_LE(v, e.node_max[i]);
        ASSERT_GE(v, e.node_min[i]);
        ASSERT_TRUE(e.node_bits[i] & (1u << spec::bitmap_bin(v, e.global_min, e.global_max)));
      }
}

TEST(Format, StridedInputIsReadInPlace) {
  struct P { double x, y, z; float m; };
  std::vector<P> aos(3000);
  for (size_t i = 0; i < aos.size(); ++i) aos[i] = {double(i % 17), double(i % 31) * 0.5, double(i) * 1e-3, float(i)};
  auto view = [&](const char* n, DType t, const void* p) {
    ColumnView c;
    c.spec = {n, t, IndexKind::none, "unit-" + std::string(n)};
    c.data = p;
    c.count = aos.size();
    c.stride_bytes = sizeof(P);
    return c;
  };
  std::vector<ColumnView> v = {view("x", DType::f64, &aos[0].x), view("y", DType::f64, &aos[0].y),
                               view("z", DType::f64, &aos[0].z), view("m", DType::f32, &aos[0].m)};
  std::string path = test::temp_path("strided.mpf");
  write_particle_file(path, v, small_options());
  auto f = ParticleFile::open(path, true);
  EXPECT_EQ(f->schema()[f->column("m")].unit, "unit-m");
  const std::vector<float> m = values_of<float>(*f, "m");
  const std::vector<double> x = values_of<double>(*f, "x");
  for (uint64_t i = 0; i < aos.size(); ++i) EXPECT_EQ(x[i], aos[size_t(m[i])].x);
}

TEST(Format, NegativeAndZeroStridesAreReadAsGiven) {
  // x runs backwards through its array (a reversed view); w is one value for every row
  // (a broadcast, stride 0). Read as contiguous, w would read far past its one value.
  const uint64_t n = 50000;
  std::vector<double> xs(n), ys(n), zs(n);
  std::vector<uint32_t> ids(n);
  for (uint64_t i = 0; i < n; ++i) xs[i] = double(i) / n, ys[i] = double(i % 101), zs[i] = double(i % 7), ids[i] = uint32_t(i);
  const double w = 42.5;
  auto view = [&](const char* name, DType t, const void* p, std::optional<int64_t> stride) {
    ColumnView c;
    c.spec = {name, t, IndexKind::none, ""};
    c.data = p;
    c.count = n;
    c.stride_bytes = stride;
    return c;
  };
  // Row i of the input is (xs[n-1-i], ys[i], zs[i], w, ids[i]).
  std::vector<ColumnView> v = {view("x", DType::f64, &xs[n - 1], -int64_t(sizeof(double))),
                               view("y", DType::f64, ys.data(), std::nullopt), view("z", DType::f64, zs.data(), 8),
                               view("w", DType::f64, &w, 0), view("id", DType::u32, ids.data(), std::nullopt)};
  std::string path = test::temp_path("strides.mpf");
  write_particle_file(path, v, small_options());
  auto f = ParticleFile::open(path, true);
  const std::vector<double> x = values_of<double>(*f, "x"), y = values_of<double>(*f, "y"), wf = values_of<double>(*f, "w");
  const std::vector<uint32_t> id = values_of<uint32_t>(*f, "id");
  for (uint64_t r = 0; r < n; ++r) {
    ASSERT_EQ(wf[r], w);
    ASSERT_EQ(x[r], xs[n - 1 - id[r]]);
    ASSERT_EQ(y[r], ys[id[r]]);
  }
}

TEST_P(FormatBoth, EmptyInputWritesAValidFile) {
  auto cols = test::make_columns(0);
  std::string path = test::temp_path("empty.mpf");
  write_particle_file(path, cols.views(), small_options(GetParam()));
  auto f = ParticleFile::open(path, true);
  EXPECT_EQ(f->particle_count(), 0u);
}

TEST(Format, RejectsBadSchemas) {
  auto cols = test::make_columns(10);
  auto v = cols.views();
  auto expect_usage = [&](std::vector<ColumnView> cv, const char* needle) {
    try {
      write_particle_file(test::temp_path("bad.mpf"), cv, small_options());
      FAIL() << "accepted: " << needle;
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  auto dup = v;
  dup[4].spec.name = "energy";
  expect_usage(dup, "given twice");
  auto bad_name = v;
  bad_name[3].spec.name = "1energy";
  expect_usage(bad_name, "not an identifier");
  auto no_z = v;
  no_z.erase(no_z.begin() + 2);
  expect_usage(no_z, "'z' is missing");
  auto short_col = v;
  short_col[4].count = 5;
  expect_usage(short_col, "different lengths");
  EXPECT_FALSE(fs::exists(test::temp_path("bad.mpf")));
}

TEST_P(FormatBoth, DetectsCorruptionTruncationAndVersion) {
  auto cols = test::make_columns(5000);
  std::string path = test::temp_path("corrupt.mpf");
  write_particle_file(path, cols.views(), small_options(GetParam()));
  const std::string good = slurp(path);
  auto expect_format_error = [&](const std::string& bytes, const char* needle, bool verify = false) {
    std::string p = test::temp_path("mutated.mpf");
    spit(p, bytes);
    try {
      ParticleFile::open(p, verify);
      FAIL() << "accepted a file that should fail with: " << needle;
    } catch (const FormatError& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  expect_format_error(good.substr(0, 100), "shorter than");
  expect_format_error(good.substr(0, good.size() - 10), "truncated");
  std::string magic = good;
  magic[0] = 'X';
  expect_format_error(magic, "bad magic");
  std::string version = good;
  version[8] = 3;
  expect_format_error(version, "is not supported (this motes reads versions 1.x and 2.x)");
  std::string header = good;
  header[20] ^= 1;
  expect_format_error(header, "header checksum");
  // An unknown required feature is refused by name, even with a valid checksum.
  container::Header hh;
  std::memcpy(&hh, good.data(), sizeof hh);
  hh.required_features |= uint64_t(1) << 40;
  hh.header_checksum = spec::checksum(&hh, container::kHeaderChecksumAt);
  std::string feature = good;
  std::memcpy(feature.data(), &hh, sizeof hh);
  expect_format_error(feature, "needs features this motes does not know (bit 40)");
  // The detail level (2.6) and its feature bit agree, and the level lies below the level count.
  auto with_detail = [&](uint32_t level, uint64_t features) {
    container::Header d;
    std::memcpy(&d, good.data(), sizeof d);
    spec::ParticleArea area;
    std::memcpy(&area, d.kind_area, sizeof area);
    area.detail_level = level;
    std::memcpy(d.kind_area, &area, sizeof area);
    d.required_features = features;
    d.header_checksum = spec::checksum(&d, container::kHeaderChecksumAt);
    std::string out = good;
    std::memcpy(out.data(), &d, sizeof d);
    return out;
  };
  ASSERT_GT(ParticleFile::open(path, false)->detail_level(), 0u);  // the default share: fine levels by region
  ASSERT_TRUE(hh.required_features & container::kFeatureRegionalDetail);
  const uint64_t without = (hh.required_features & ~(uint64_t(1) << 40)) & ~uint64_t(container::kFeatureRegionalDetail);
  expect_format_error(with_detail(0, without | container::kFeatureRegionalDetail), "requires regional-detail but gives no detail level");
  expect_format_error(with_detail(2, without), "header gives detail level 2 without the feature regional-detail");
  expect_format_error(with_detail(200, without | container::kFeatureRegionalDetail), "detail level 200 is not below the level count");
  {
    container::Header d;  // a region depth below the detail level
    std::memcpy(&d, good.data(), sizeof d);
    spec::ParticleArea area;
    std::memcpy(&area, d.kind_area, sizeof area);
    area.region_depth = area.detail_level + 1;
    std::memcpy(d.kind_area, &area, sizeof area);
    d.required_features = without | container::kFeatureRegionalDetail;
    d.header_checksum = spec::checksum(&d, container::kHeaderChecksumAt);
    std::string out = good;
    std::memcpy(out.data(), &d, sizeof d);
    expect_format_error(out, "is below the detail level");
  }
  std::string data = good;
  data[4096 + 100] ^= 0x40;  // inside the first stored block
  EXPECT_NO_THROW(ParticleFile::open((spit(test::temp_path("d.mpf"), data), test::temp_path("d.mpf")), false));
  expect_format_error(data, "checksum mismatch", true);
  container::Header h;
  std::memcpy(&h, good.data(), sizeof h);
  std::string meta = good;
  meta[h.section_table_offset - 20] ^= 1;  // the last metadata section
  expect_format_error(meta, "checksum mismatch", true);
  std::string table = good;
  table[h.section_table_offset + 3] ^= 1;
  expect_format_error(table, "section table checksum");
}

TEST(Format, TheNodeTreeIsReadAndCheckedOnFirstUse) {
  // Open reads what every query needs; the node tree when a query first walks it. A damaged
  // nodes section is then refused with its name, and a count that the tail index answers
  // alone (which needs no tree) still answers, as an undamaged file does.
  auto cols = test::make_columns(5000);
  const std::string path = test::temp_path("lazy-tree.mpf");
  write_particle_file(path, cols.views(), small_options());
  std::string bytes = slurp(path);
  container::Header h;
  std::memcpy(&h, bytes.data(), sizeof h);
  const auto* table = reinterpret_cast<const container::SectionEntry*>(bytes.data() + h.section_table_offset);
  for (uint32_t i = 0; i < h.section_count; ++i)
    if (table[i].kind == spec::kNodes) bytes[table[i].offset + table[i].length / 2] ^= 0x04;
  const std::string damaged = test::temp_path("lazy-tree-damaged.mpf");
  spit(damaged, bytes);
  std::vector<float> e = cols.energy;
  std::sort(e.begin(), e.end());
  QuerySpec tail;
  tail.where = "energy > " + number_text(double(e[e.size() - 10]));
  Query good_count(ParticleFile::open(path), tail), damaged_count(ParticleFile::open(damaged), tail);
  EXPECT_EQ(count(damaged_count), count(good_count));
  EXPECT_EQ(damaged_count.counters().tail_index_parts, 1u);
  QuerySpec box;
  box.box = Box{{0, 0, 0}, {0.5, 0.5, 0.5}};
  Query walks(ParticleFile::open(damaged), box);
  try {
    count(walks);
    FAIL() << "a damaged nodes section was used";
  } catch (const FormatError& err) {
    EXPECT_NE(std::string(err.what()).find("nodes section checksum mismatch"), std::string::npos) << err.what();
  }
  EXPECT_THROW(ParticleFile::open(damaged, true), FormatError);  // verify_data reads it too
}

TEST(Format, ThePositionsNodeRangesAreStoredRaw) {
  // Every box query reads the node ranges of x, y and z first: the writer stores them raw
  // (docs/format.md §9, step 4); another column's are a zstd frame where that is smaller.
  auto cols = test::make_columns(20000);
  const std::string path = test::temp_path("raw-ranges.mpf");
  write_particle_file(path, cols.views(), small_options());
  const std::string bytes = slurp(path);
  container::Header h;
  std::memcpy(&h, bytes.data(), sizeof h);
  const auto* table = reinterpret_cast<const container::SectionEntry*>(bytes.data() + h.section_table_offset);
  const auto f = ParticleFile::open(path);
  int positions = 0, zstd = 0;
  for (uint32_t i = 0; i < h.section_count; ++i) {
    if (table[i].kind != spec::kNodeRanges) continue;
    if (is_position_column(f->schema()[table[i].column].name)) {
      EXPECT_EQ(table[i].storage, container::kRaw) << f->schema()[table[i].column].name;
      ++positions;
    } else {
      zstd += table[i].storage == container::kZstd;
    }
  }
  EXPECT_EQ(positions, 3);
  EXPECT_GT(zstd, 0);
  QuerySpec box;
  box.box = Box{{0.1, 0.2, 0.3}, {0.6, 0.5, 0.9}};
  Query q(f, box);
  uint64_t want = 0;
  for (size_t r = 0; r < cols.x.size(); ++r)
    want += cols.x[r] >= 0.1f && cols.x[r] <= 0.6f && cols.y[r] >= 0.2f && cols.y[r] <= 0.5f && cols.z[r] >= 0.3f &&
            cols.z[r] <= 0.9f;
  EXPECT_EQ(count(q), want);
}

TEST_P(FormatBoth, FlipEveryHeaderAndIndexByteIsCaught) {
  auto cols = test::make_columns(300);
  std::string path = test::temp_path("flip.mpf");
  write_particle_file(path, cols.views(), small_options(GetParam()));
  const std::string good = slurp(path);
  container::Header h;
  std::memcpy(&h, good.data(), sizeof h);
  const auto* table = reinterpret_cast<const container::SectionEntry*>(good.data() + h.section_table_offset);
  auto covered = [&](uint64_t at) {
    if (at < container::kHeaderBytes) return true;
    if (at >= h.section_table_offset) return true;
    for (uint32_t i = 0; i < h.section_count; ++i)
      if (at >= table[i].offset && at < table[i].offset + table[i].length) return true;
    return false;
  };
  std::string p = test::temp_path("flipped.mpf");
  int caught = 0, total = 0;
  for (uint64_t at = 0; at < good.size(); at += (at < container::kHeaderBytes || at > good.size() - 3000) ? 1 : 61) {
    std::string b = good;
    b[at] ^= 0x10;
    spit(p, b);
    ++total;
    try {
      ParticleFile::open(p, true);
      EXPECT_FALSE(covered(at)) << "undetected flip at byte " << at;  // only padding may change silently
    } catch (const FormatError&) {
      ++caught;
    }
  }
  EXPECT_GT(caught, total / 2);
}

TEST(Format, FailedWriteKeepsThePreviousFile) {
  auto cols = test::make_columns(1000);
  std::string path = test::temp_path("keep.mpf");
  write_particle_file(path, cols.views(), small_options());
  const std::string before = slurp(path);
  auto v = cols.views();
  cols.x[500] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_THROW(write_particle_file(path, v, small_options()), UsageError);
  EXPECT_EQ(slurp(path), before);
  for (const auto& e : fs::directory_iterator(fs::path(path).parent_path()))
    EXPECT_EQ(e.path().string().find(".tmp-"), std::string::npos) << "left a temporary: " << e.path();
}

TEST(Dataset, AppendsStepsAndSurvivesReopen) {
  std::string dir = test::temp_path("ds.motes");
  fs::remove_all(dir);
  auto a = test::make_columns(2000, 1), b = test::make_columns(1000, 2);
  {
    Dataset d = Dataset::create(dir);
    d.append_step(0, 0.0, {{"note", "first"}}, {{"electrons", a.views()}, {"ions", b.views()}}, small_options());
    d.append_step(5, 2.5, nlohmann::json::object(), {{"electrons", b.views()}}, small_options());
    EXPECT_THROW(d.append_step(5, 3.0, nlohmann::json::object(), {{"electrons", b.views()}}, small_options()), UsageError);
  }
  Dataset d = Dataset::open(dir);
  ASSERT_EQ(d.steps().size(), 2u);
  EXPECT_EQ(d.steps()[0].attributes["note"], "first");
  EXPECT_EQ(d.step(5).time, 2.5);
  EXPECT_EQ(d.step(0).find("ions").count, 1000u);
  EXPECT_THROW(d.step(0).find("photons"), UsageError);
  EXPECT_THROW(d.step(3), UsageError);
  auto f = ParticleFile::open(d.path_of(d.step(0).find("electrons")), true);
  EXPECT_EQ(f->particle_count(), 2000u);
  // A failing step (bad input) leaves the manifest as it was.
  b.x[3] = std::numeric_limits<float>::infinity();
  Dataset d2 = Dataset::open(dir);
  EXPECT_THROW(d2.append_step(9, 1.0, nlohmann::json::object(), {{"electrons", b.views()}}, small_options()), UsageError);
  EXPECT_EQ(Dataset::open(dir).steps().size(), 2u);
  EXPECT_THROW(Dataset::open(test::temp_path("nowhere.motes")), Error);
}

TEST_P(FormatBoth, QuantileCodesAgreeWithTheSpecFunction) {
  // Noise with long runs of equal values and NaNs exercises every path of the writer's fast code lookup.
  auto cols = test::make_columns(30000, 5);
  std::vector<double> steps(cols.x.size());
  std::mt19937_64 rng(9);
  for (size_t i = 0; i < steps.size(); ++i) {
    uint64_t r = rng() % 100;
    steps[i] = r < 40 ? 0.5 : r < 45 ? std::numeric_limits<double>::quiet_NaN() : double(rng() % 1000) / 7.0;
  }
  auto v = cols.views();
  for (auto& c : v)
    if (c.spec.name == "noise") c.spec.index = IndexKind::quantile;
  ColumnView sv;
  sv.spec = {"steps", DType::f64, IndexKind::quantile, ""};
  sv.data = steps.data();
  sv.count = steps.size();
  v.push_back(sv);
  std::string path = test::temp_path("codes.mpf");
  write_particle_file(path, v, small_options(GetParam()));
  auto f = ParticleFile::open(path, true);
  for (const char* name : {"noise", "steps"}) {
    const ColumnIndex& c = f->index(f->column(name));
    ASSERT_EQ(c.index, IndexKind::quantile) << name;
    const std::vector<double> values = values_of<double>(*f, name);
    std::vector<uint8_t> codes(f->particle_count());
    f->codes(f->column(name))->read(0, codes.size(), codes.data());
    for (uint64_t i = 0; i < f->particle_count(); ++i)
      ASSERT_EQ(codes[i], spec::quantile_code(values[i], c.edges.data())) << name << " at " << i << " value " << values[i];
  }
}

TEST(Format, FastBitmapBinsAgreeWithTheSpecFunction) {
  // The writer's bins (a multiply corrected by thresholds) must be the spec's bins exactly:
  // the pruner computes a query constant's bin with spec::bitmap_bin.
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  const double ranges[][2] = {{0, 1}, {-1, 1}, {-3.7e-5, 2.9e-5}, {1e300, 1.7e308}, {-1.7e308, 1.7e308}, {0, 5e-324},
                              {1, std::nextafter(1.0, 2.0)}, {-123456789, 987654321}, {0.1, 0.7}, {-INFINITY, 1},
                              {3, 3}, {2, 1}};
  for (const auto& r : ranges) {
    const double lo = r[0], hi = r[1];
    const spec::BitmapBins fast(lo, hi);
    std::vector<double> probes = {lo, hi, -INFINITY, INFINITY, 0.0, -0.0, std::nextafter(lo, -INFINITY), std::nextafter(hi, INFINITY)};
    for (int k = 0; k < 20000; ++k) probes.push_back(lo + (hi - lo) * unit(rng));
    for (uint32_t b = 0; b <= spec::kBitmapBins; ++b) {  // around every bin border
      const double t = lo + (hi - lo) * (double(b) / spec::kBitmapBins);
      double v = t;
      for (int s = 0; s < 8; ++s) v = std::nextafter(v, -INFINITY);
      for (int s = 0; s < 16; ++s, v = std::nextafter(v, INFINITY)) probes.push_back(v);
    }
    for (double v : probes) {
      if (std::isnan(v)) continue;
      ASSERT_EQ(fast(v), spec::bitmap_bin(v, lo, hi)) << "value " << v << " in [" << lo << ", " << hi << "]";
      // The branch-free batch form (the node bitmaps), on doubles and on floats.
      ASSERT_EQ(fast.mask(&v, 1), 1u << spec::bitmap_bin(v, lo, hi)) << "value " << v << " in [" << lo << ", " << hi << "]";
      const float f = float(v);
      if (!std::isnan(f)) ASSERT_EQ(fast.mask(&f, 1), 1u << spec::bitmap_bin(double(f), lo, hi)) << "float " << f;
    }
    const double nan = NAN;
    EXPECT_EQ(fast.mask(&nan, 1), 0u);  // NaN is in no bin
    uint32_t all = 0;
    for (double v : probes) all |= 1u << spec::bitmap_bin(v, lo, hi);
    EXPECT_EQ(fast.mask(probes.data(), probes.size()), all);
    // Stopping once the bins known possible are all set (the writer passes those between
    // a run's least and greatest value's bins, and the bits the node has) loses no bin.
    for (uint32_t have : {0u, all & 0x0F0F0F0Fu, all})
      EXPECT_EQ(fast.mask(probes.data(), probes.size(), have, all) | have, all);
  }
}

TEST(Format, ColumnPipelineWritesTheSameBytesOnAnyThreadCount) {
  // Many small windows: the (window, column) tasks run out of order on several threads,
  // placing windows in order; the file must not depend on the thread count, and read back.
  auto cols = test::make_columns(60000, 3);
  std::string first;
  for (unsigned threads : {1u, 2u, 3u, 5u}) {
    WriteOptions o = small_options();
    o.block_values = 256;
    o.window_rows = 1024;  // 59 windows
    o.layout.threads = threads;
    std::string path = test::temp_path("pipeline" + std::to_string(threads) + ".mpf");
    write_particle_file(path, cols.views(), o);
    std::ifstream in(path, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (first.empty()) {
      first = bytes;
      auto f = ParticleFile::open(path, true);
      std::vector<uint64_t> file_to_row = values_of<uint64_t>(*f, "id");
      EXPECT_EQ(read_back<float>(*f, "energy", file_to_row), cols.energy);
      EXPECT_EQ(read_back<double>(*f, "noise", file_to_row), cols.noise);
      EXPECT_EQ(read_back<int32_t>(*f, "kind", file_to_row), cols.kind);
    } else {
      EXPECT_TRUE(bytes == first) << threads << " threads wrote other bytes";
    }
  }
}

TEST(Format, CodecMemoChoosesOnceForFilesOfTheSameColumns) {
  // The MPI writer's aggregators write several parts with one memo: the first part chooses
  // every column's codecs, the next ones take them (and still read back exactly).
  WriteOptions o = small_options();
  o.ids_by_index = false;  // every column stored, the ids too: raw plans store all the data bytes
  auto a = test::make_columns(20000, 1), b = test::make_columns(20000, 2);
  CodecMemo memo;
  write_particle_file(test::temp_path("memo_a.mpf"), a.views(), o, &memo);
  ASSERT_EQ(memo.entries.size(), a.views().size());
  for (const CodecMemo::Entry& e : memo.entries) EXPECT_EQ(e.sampled, 3u * o.block_values) << e.key.column;
  // Plans taken from the memo: all raw here, so b's values are stored as they are.
  CodecMemo raw = memo;
  for (CodecMemo::Entry& e : raw.entries) {
    e.values.predictor = e.codes.predictor = codec::Predictor::none;
    e.values.layout = codec::Layout::planes, e.codes.layout = codec::Layout::whole;
    std::fill(e.values.coders.begin(), e.values.coders.end(), codec::Coder::raw);
    std::fill(e.codes.coders.begin(), e.codes.coders.end(), codec::Coder::raw);
  }
  const std::string path = test::temp_path("memo_b.mpf");
  WriteSummary s = write_particle_file(path, b.views(), o, &raw);
  EXPECT_EQ(s.stored_bytes, s.data_bytes);
  auto f = ParticleFile::open(path, true);
  std::vector<uint64_t> file_to_row = values_of<uint64_t>(*f, "id");
  EXPECT_EQ(read_back<float>(*f, "energy", file_to_row), b.energy);
  EXPECT_EQ(read_back<double>(*f, "noise", file_to_row), b.noise);
  // A plan chosen on fewer samples than this file gives is chosen again, and replaced.
  CodecMemo small;
  write_particle_file(test::temp_path("memo_small.mpf"), test::make_columns(100, 3).views(), o, &small);
  for (const CodecMemo::Entry& e : small.entries) EXPECT_EQ(e.sampled, 100u);
  s = write_particle_file(path, b.views(), o, &small);
  EXPECT_LT(s.stored_bytes, s.data_bytes);
  size_t chosen_again = 0;  // one per column (the tiny file may have chosen other index kinds: other keys)
  for (const CodecMemo::Entry& e : small.entries) chosen_again += e.sampled == 3u * o.block_values;
  EXPECT_EQ(chosen_again, a.views().size());
  // Another compression is another key: a file without compression ignores lossless plans.
  s = write_particle_file(path, b.views(), small_options(Compression::none), &memo);
  EXPECT_EQ(memo.entries.size(), 2 * a.views().size());
}
