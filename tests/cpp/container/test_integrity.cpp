// Every byte a decoder or the planner uses is covered by a checksum checked before use
// (docs/format.md §4.14): one flipped bit anywhere in a file makes each query either answer
// exactly as before or throw FormatError, never answer differently. Small files holding
// every section kind (raw and coded bulk data, quantile codes raw beside values coded
// relative to them, the id index, tail indexes), every byte flipped in turn, a suite of
// queries run on each; the same for a step index over parts and for a field file.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <random>
#include <set>
#include <sstream>

#include "motes/analysis/analysis.hpp"
#include "motes/container/container.hpp"
#include "motes/fields/file.hpp"
#include "motes/io/byte_source.hpp"
#include "motes/particles/collection.hpp"
#include "motes/particles/reader.hpp"
#include "motes/particles/step_index.hpp"
#include "motes/particles/writer.hpp"
#include "motes/query/engine.hpp"
#include "motes/query/selection.hpp"
#include "test_util.hpp"

using namespace motes;
using motes::fields::ComponentRange;
using motes::fields::FieldFile;
using motes::fields::FieldSpec;
using motes::fields::FieldWriteOptions;
using motes::fields::Region;

namespace {

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Small columns: positions, a smooth f32 column `u` (quantile index), a small integer
// `k`, a heavy-tailed f64 `e` (tail index) and a shuffled u64 `id` (id index).
struct Data {
  std::vector<float> x, y, z, u;
  std::vector<int32_t> k;
  std::vector<double> e;
  std::vector<uint64_t> id;
  explicit Data(size_t n, uint32_t seed = 3) {
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<float> uf(0.f, 1.f);
    std::exponential_distribution<double> ex(1.0);
    for (size_t i = 0; i < n; ++i) {
      x.push_back(uf(rng)), y.push_back(uf(rng)), z.push_back(uf(rng));
      u.push_back(x.back() * 0.5f + 0.5f * uf(rng));
      k.push_back(int32_t(rng() % 8));
      e.push_back(ex(rng));
      id.push_back(i * 7919 % 1000003);
    }
  }
  std::vector<ColumnView> views() const {
    auto v = [](const char* name, DType t, IndexKind index, const void* p, size_t n) {
      ColumnView c;
      c.spec = {name, t, index, ""};
      c.data = p;
      c.count = n;
      return c;
    };
    const size_t n = x.size();
    return {v("x", DType::f32, IndexKind::automatic, x.data(), n), v("y", DType::f32, IndexKind::automatic, y.data(), n),
            v("z", DType::f32, IndexKind::automatic, z.data(), n), v("u", DType::f32, IndexKind::quantile, u.data(), n),
            v("k", DType::i32, IndexKind::automatic, k.data(), n), v("e", DType::f64, IndexKind::automatic, e.data(), n),
            v("id", DType::u64, IndexKind::automatic, id.data(), n)};
  }
};

WriteOptions small_options(Compression c) {
  WriteOptions o;
  o.layout.leaf_size = 16;
  o.layout.lod_count = 2;
  o.layout.treelet_size = 64;
  o.compression = c;
  o.block_values = 64;  // several blocks per stream
  o.tail_fraction = 0.02;
  o.tail_cover = 0.02;  // the whole tail covered: the tail queries read the cover (kinds 16, 17)
  o.derived = {{"r", "x**2 + y**2 + e"}};  // a derived quantity, its tail and cover (kinds 18-23)
  o.sync = false;
  return o;
}

// What a query answered, as bytes: its rows' values of every column, or "!" for FormatError.
using Answers = std::vector<std::string>;

std::string gathered(Query& q) {
  Selection s(q);
  std::string out = std::to_string(s.size()) + ":";
  const auto& schema = q.collection().schema();
  for (size_t c = 0; c < schema.size(); ++c) {
    std::string col(s.size() * dtype_size(schema[c].dtype), '\0');
    s.gather(c, 0, s.size(), col.data(), 1);
    out += col;
  }
  return out;
}

std::string numbers(const std::vector<double>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(double));
}

// The suite: every path of the planner and the readers a file's bytes can reach.
Answers run_suite(const std::function<std::shared_ptr<const Collection>()>& open) {
  std::vector<std::function<std::string(std::shared_ptr<const Collection>)>> queries;
  auto where = [](std::string text, std::optional<Box> box = std::nullopt, double q0 = 0, double q1 = 1) {
    return [=](std::shared_ptr<const Collection> c) {
      QuerySpec s;
      s.where = text, s.box = box, s.quality_from = q0, s.quality_to = q1, s.threads = 1;
      Query q(c, s);
      return gathered(q);
    };
  };
  queries.push_back(where(""));                                          // everything
  queries.push_back(where("u > 0.3"));                                   // quantile codes
  queries.push_back(where("k == 4"));                                    // node ranges, bitmaps
  queries.push_back(where("", Box{{0.2, 0.2, 0.2}, {0.7, 0.7, 0.7}}));   // the tree
  queries.push_back(where("e > 4.2"));                                   // the tail index (high), its cover
  queries.push_back(where("e < 0.04"));                                  // the tail index (low), its cover
  queries.push_back(where("x**2 + y**2 + e > 5.2"));                     // the derived tail, its cover
  queries.push_back(where("id in (0, 7919, 23757, 55433, 999999)"));     // the id index
  queries.push_back(where("", std::nullopt, 0.3, 0.6));                  // levels
  queries.push_back(where("x**2 + y < 0.5 and u <= 0.6"));               // arithmetic
  queries.push_back([](std::shared_ptr<const Collection> c) {            // analyses
    QuerySpec s;
    s.where = "x < 0.5";
    s.threads = 1;
    Query q(c, s);
    const size_t e = c->schema().size() - 2;
    std::vector<double> h = histogram(q, Axis{e, 16, 0.0, 4.0});
    Query q2(c, s);
    ColumnStats st = stats(q2, e);
    h.push_back(double(st.count)), h.push_back(st.min), h.push_back(st.max), h.push_back(st.sum);
    return numbers(h);
  });
  Answers out;
  std::shared_ptr<const Collection> c;
  try {
    c = open();
  } catch (const FormatError&) {
    return Answers(queries.size(), "!");
  }
  for (auto& q : queries) {
    try {
      out.push_back(q(c));
    } catch (const FormatError&) {
      out.push_back("!");
    }
  }
  return out;
}

// The bytes of a container file that a reader may use: the header, the section table and
// every section's extent; the rest is padding (docs/format.md §4.14), which no reader uses.
std::vector<bool> used_bytes(const std::string& bytes, const char (&magic)[8], uint16_t major, const char* what) {
  std::vector<bool> used(bytes.size(), false);
  container::Reader r(memory_source(bytes), magic, major, what);
  auto mark = [&](uint64_t at, uint64_t n) { std::fill(used.begin() + long(at), used.begin() + long(at + n), true); };
  mark(0, container::kHeaderBytes);
  mark(r.header().section_table_offset, uint64_t(r.header().section_count) * container::kEntryBytes);
  for (const auto& e : r.sections()) mark(e.offset, e.length);
  return used;
}

// Flips one bit of every byte of `bytes` in turn (bit i % 8 of byte i), or of every byte
// `used` marks and every 61st other one (padding, which nothing reads), and checks the
// suite's answers; returns how many flips some query noticed.
size_t flip_every_byte(const std::string& bytes, const std::function<Answers(const std::string&)>& suite,
                       const std::string& what, const std::vector<bool>& used = {}) {
  const Answers want = suite(bytes);
  for (const std::string& a : want) EXPECT_NE(a, "!") << what << ": the intact file fails";
  size_t noticed = 0;
  std::string flipped = bytes;
  for (size_t i = 0; i < bytes.size(); ++i) {
    if (!used.empty() && !used[i] && i % 61 != 0) continue;
    flipped[i] = char(bytes[i] ^ (1 << (i % 8)));
    clear_block_cache();
    const Answers got = suite(flipped);
    flipped[i] = bytes[i];
    bool any = false;
    for (size_t q = 0; q < want.size(); ++q) {
      if (got[q] == "!") {
        any = true;
        continue;
      }
      EXPECT_EQ(got[q], want[q]) << what << ": flipping byte " << i << " changed the answer of query " << q
                                 << " without an error";
      if (got[q] != want[q]) return noticed;  // one report is enough
    }
    noticed += any;
  }
  return noticed;
}

std::shared_ptr<const Collection> one_file(const std::string& bytes) {
  return Collection::of(ParticleFile::open(memory_source(bytes, "flipped.mpf")));
}

}  // namespace

TEST(Integrity, EveryFlippedByteOfAParticleFileIsCaughtOrHarmless) {
  const Data d(300);
  for (Compression c : {Compression::none, Compression::lossless}) {
    const std::string path = test::temp_path(std::string("flip-") + (c == Compression::none ? "raw" : "coded") + ".mpf");
    write_particle_file(path, d.views(), small_options(c));
    const std::string bytes = read_all(path);
    // Every section kind is there: the test covers them all.
    std::set<uint32_t> kinds;
    {
      auto f = ParticleFile::open(memory_source(bytes));
      container::Reader r(memory_source(bytes), spec::kMagic, spec::kVersionMajor, "particle file");
      for (const auto& e : r.sections()) kinds.insert(e.kind);
    }
    const std::set<uint32_t> expected = c == Compression::none
                                             ? std::set<uint32_t>{1, 2, 3, 4, 5, 6, 7, 8}
                                             : std::set<uint32_t>{1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11, 12,
                                                                  13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23};
    EXPECT_EQ(kinds, expected);
    if (c == Compression::lossless)
      for (const char* tail : {"e > 4.2", "e < 0.04", "x**2 + y**2 + e > 5.2"}) {  // the suite's tail queries read the cover
        QuerySpec s;
        s.where = tail, s.threads = 1;
        Query q(one_file(bytes), s);
        Selection sel(q);
        EXPECT_EQ(q.counters().tail_index_parts, 1u) << tail;
        EXPECT_EQ(q.counters().covered_parts, 1u) << tail;
      }
    size_t noticed = flip_every_byte(bytes, [](const std::string& b) { return run_suite([&] { return one_file(b); }); },
                                     path, used_bytes(bytes, spec::kMagic, spec::kVersionMajor, "particle file"));
    EXPECT_GT(noticed, bytes.size() / 8) << path;  // the sections' bytes, at least
  }
}

TEST(Integrity, EveryFlippedByteOfAStepIndexIsCaughtOrHarmless) {
  const Data d(800, 5);
  // Four parts (slabs along x) behind a step index; the index file's bytes are flipped.
  const std::string dir = test::temp_path("flip-parts");
  std::filesystem::create_directories(dir);
  const std::string index = dir + "/particles" + StepIndex::kExtension;
  std::vector<PartSummary> summaries;
  std::vector<ColumnSpec> schema;
  for (size_t k = 0; k < 4; ++k) {
    Data part(0);
    for (size_t i = 0; i < d.x.size(); ++i) {
      if (size_t(std::min(3.0f, d.x[i] * 4)) != k) continue;
      part.x.push_back(d.x[i]), part.y.push_back(d.y[i]), part.z.push_back(d.z[i]), part.u.push_back(d.u[i]);
      part.k.push_back(d.k[i]), part.e.push_back(d.e[i]), part.id.push_back(d.id[i]);
    }
    WriteSummary w = write_particle_file(StepIndex::part_path(index, k), part.views(), small_options(Compression::lossless));
    summaries.push_back({w.particle_count, w.file_bytes, w.bounds, w.columns});
    if (schema.empty())
      for (const ColumnSummary& c : w.columns) schema.push_back({c.name, c.dtype, c.index, ""});
  }
  StepIndex::write(index, schema, summaries, false);
  const std::string bytes = read_all(index);
  auto suite = [&](const std::string& b) {
    {
      std::ofstream out(index, std::ios::binary | std::ios::trunc);
      out.write(b.data(), std::streamsize(b.size()));
    }
    return run_suite([&] { return Collection::of(StepIndex::open(index)); });
  };
  const size_t noticed = flip_every_byte(bytes, suite, index);
  EXPECT_GT(noticed, bytes.size() / 2) << index;
}

TEST(Integrity, EveryFlippedByteOfAFieldFileIsCaughtOrHarmless) {
  FieldSpec spec;
  spec.name = "E";
  spec.dtype = DType::f32;
  spec.dims = {13, 9, 5};
  spec.components = {"x", "y"};
  spec.origin = {-1, 0, 2}, spec.spacing = {0.5, 0.25, 1};
  spec.unit = "V/m";
  std::vector<std::vector<float>> comps(2, std::vector<float>(spec.sample_count()));
  std::mt19937 rng(9);
  std::normal_distribution<float> g(0.f, 1.f);
  for (auto& c : comps)
    for (float& v : c) v = g(rng);
  FieldWriteOptions o;
  o.block_bits = 6;  // several blocks
  o.sync = false;
  for (double tolerance : {0.0, 1e-2}) {
    spec.tolerance = tolerance;
    const std::string path = test::temp_path(tolerance > 0 ? "flip-field-zfp.mfd" : "flip-field.mfd");
    fields::write_field_file(path, spec, {comps[0].data(), comps[1].data()}, o);
    const std::string bytes = read_all(path);
    auto suite = [](const std::string& b) {
      Answers out;
      std::shared_ptr<FieldFile> f;
      try {
        f = FieldFile::open(memory_source(b, "flipped.mfd"));
      } catch (const FormatError&) {
        return Answers(6, "!");
      }
      out.push_back(fields::spec_json(f->spec()).dump());
      std::vector<double> ranges;
      for (const ComponentRange& r : f->ranges()) ranges.push_back(r.min), ranges.push_back(r.max), ranges.push_back(double(r.nan_count));
      out.push_back(numbers(ranges));
      for (size_t c = 0; c < 2; ++c)
        for (int level : {f->levels(), 2}) {
          try {
            Region r = f->region({1, 2, 0}, {12, 9, 4}, level);
            std::string values(r.size() * 4, '\0');
            f->read(r, c, values.data(), 1);
            out.push_back(values);
          } catch (const FormatError&) {
            out.push_back("!");
          }
        }
      return out;
    };
    const size_t noticed = flip_every_byte(bytes, suite, path, used_bytes(bytes, fields::kMagic, 1, "field file"));
    EXPECT_GT(noticed, 256u) << path;
  }
}
