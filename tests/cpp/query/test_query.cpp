#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <random>
#include <set>

#include "motes/analysis/analysis.hpp"
#include "motes/particles/writer.hpp"
#include "motes/query/engine.hpp"
#include "motes/query/selection.hpp"
#include "motes/expr/expr.hpp"
#include "test_util.hpp"

using namespace motes;

TEST(Expr, ParsesPrecedenceAndChains) {
  EXPECT_EQ(parse_expression("a < b and c > 1 or not d == 2")->to_string(),
            "(((a < b) and (c > 1)) or not ((d == 2)))");
  EXPECT_EQ(parse_expression("1 < x <= 2")->to_string(), "((1 < x) and (x <= 2))");
  EXPECT_EQ(parse_expression("-x**2 > -1")->to_string(), "((-(x ** 2)) > (-1))");
  EXPECT_EQ(parse_expression("2**-1 == x")->to_string(), "((2 ** (-1)) == x)");
  // Printed forms read back to the same tree (found by the fuzzer: negations as a power's base).
  for (const char* text : {"x**(--x)**y > 0", "(-2)**x < 1", "-(-x)**2 == -0", "x ** -y ** -2 != 3"}) {
    std::string printed = parse_expression(text)->to_string();
    EXPECT_EQ(parse_expression(printed)->to_string(), printed) << text;
  }
  EXPECT_EQ(parse_expression("ux*ux + uy*uy + uz*uz > 4")->to_string(), "((((ux * ux) + (uy * uy)) + (uz * uz)) > 4)");
  EXPECT_EQ(parse_expression("(x > 1) & (y < 2) | ~(z != 3)")->to_string(), "(((x > 1) and (y < 2)) or not ((z != 3)))");
  EXPECT_EQ(parse_expression("sqrt(abs(x)) >= 1e-3")->to_string(), "(sqrt(abs(x)) >= 0.001)");
}

TEST(Expr, RejectsMalformedInputWithPositions) {
  struct Case { const char* text; const char* needle; };
  for (Case c : std::vector<Case>{{"", "empty"},
                                  {"x >", "ends where a value is expected"},
                                  {"x = 1", "did you mean '=='"},
                                  {"(x > 1", "expected ')'"},
                                  {"x > 1)", "unexpected ')'"},
                                  {"x + 1", "not a condition"},
                                  {"x > 1 + (y < 2)", "needs numbers"},
                                  {"foo(x) > 1", "unknown function 'foo'"},
                                  {"x > 1 and 3", "needs conditions"},
                                  {"x $ 1", "unexpected character '$'"},
                                  {"1x > 2", "malformed number"},
                                  {"x > and", "expected a value"}}) {
    try {
      parse_expression(c.text);
      FAIL() << "accepted '" << c.text << "'";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find(c.needle), std::string::npos) << c.text << " -> " << e.what();
    }
  }
  EXPECT_THROW(parse_expression(std::string(100000, '(')), UsageError);
  EXPECT_THROW(parse_expression(std::string(5000, '(') + "x>1" + std::string(5000, ')')), UsageError);
}

TEST(Expr, UnknownColumnsAreNamed) {
  auto e = parse_expression("energy > 1 and bogus < 2");
  try {
    bind_columns(*e, {"x", "y", "z", "energy"});
    FAIL();
  } catch (const UsageError& err) {
    EXPECT_NE(std::string(err.what()).find("unknown column 'bogus'"), std::string::npos);
    EXPECT_NE(std::string(err.what()).find("x, y, z, energy"), std::string::npos);
  }
}

namespace {

struct Fixture {
  test::Columns cols;
  std::shared_ptr<ParticleFile> file;
  explicit Fixture(uint64_t n) : cols(test::make_columns(n, 7)) {
    WriteOptions o;
    o.layout.leaf_size = 128;
    o.layout.treelet_size = 4096;
    o.sync = false;
    std::string path = test::temp_path("query-" + std::to_string(n) + ".mpf");
    write_particle_file(path, cols.views(), o);
    file = ParticleFile::open(path);
  }
  // ids selected by the query, sorted
  std::vector<uint64_t> ids(const QuerySpec& spec) {
    Query q(file, spec);
    Selection s(q);
    std::vector<uint64_t> out(s.size());
    s.gather(file->column("id"), 0, s.size(), out.data(), 2);
    std::sort(out.begin(), out.end());
    return out;
  }
  std::vector<uint64_t> brute(const std::function<bool(uint64_t)>& pred) {
    std::vector<uint64_t> out;
    for (uint64_t i = 0; i < cols.x.size(); ++i)
      if (pred(i)) out.push_back(i);
    return out;
  }
};

}  // namespace

TEST(Query, MatchesBruteForce) {
  Fixture fx(30000);
  auto& c = fx.cols;
  struct Case { std::string where; std::function<bool(uint64_t)> pred; };
  std::vector<Case> cases = {
      {"energy > 0.6", [&](uint64_t i) { return double(c.energy[i]) > 0.6; }},
      {"0.1 < x < 0.3 and y >= 0.2", [&](uint64_t i) { return 0.1 < double(c.x[i]) && double(c.x[i]) < 0.3 && double(c.y[i]) >= 0.2; }},
      {"noise > 2.5", [&](uint64_t i) { return c.noise[i] > 2.5; }},
      {"noise <= -3 or noise == 0", [&](uint64_t i) { return c.noise[i] <= -3 || c.noise[i] == 0; }},
      {"not (kind == 0)", [&](uint64_t i) { return c.kind[i] != 0; }},
      {"kind != 1 and id < 777", [&](uint64_t i) { return c.kind[i] != 1 && c.id[i] < 777; }},
      {"x**2 + y**2 < 0.05", [&](uint64_t i) { double x = c.x[i], y = c.y[i]; return x * x + y * y < 0.05; }},
      {"sqrt(abs(noise)) > 1.5 and energy / 2 < 0.2",
       [&](uint64_t i) { return std::sqrt(std::fabs(c.noise[i])) > 1.5 && double(c.energy[i]) / 2 < 0.2; }},
      {"id >= 29990", [&](uint64_t i) { return c.id[i] >= 29990; }},
      {"-x > -0.1", [&](uint64_t i) { return -double(c.x[i]) > -0.1; }},
  };
  for (const auto& cs : cases) {
    QuerySpec s;
    s.where = cs.where;
    EXPECT_EQ(fx.ids(s), fx.brute(cs.pred)) << cs.where;
  }
}

TEST(Query, BoxAndWhereCombine) {
  Fixture fx(30000);
  auto& c = fx.cols;
  QuerySpec s;
  s.box = Box{{0.15, 0.1, 0.1}, {0.3, 0.3, 0.35}};
  s.where = "energy > 0.05";
  EXPECT_EQ(fx.ids(s), fx.brute([&](uint64_t i) {
              double x = c.x[i], y = c.y[i], z = c.z[i];
              return x >= 0.15 && x <= 0.3 && y >= 0.1 && y <= 0.3 && z >= 0.1 && z <= 0.35 && double(c.energy[i]) > 0.05;
            }));
  s.box = Box{{1, 0, 0}, {0, 1, 1}};
  EXPECT_THROW(Query(fx.file, s), UsageError);
}

TEST(Query, ProgressiveReadsPartitionTheData) {
  Fixture fx(20000);
  std::set<uint64_t> all;
  size_t previous = 0;
  for (int k = 0; k < 10; ++k) {
    QuerySpec s;
    s.quality_from = k / 10.0;
    s.quality_to = (k + 1) / 10.0;
    for (uint64_t id : fx.ids(s)) EXPECT_TRUE(all.insert(id).second) << "duplicate " << id;
    QuerySpec prefix;
    prefix.quality_to = (k + 1) / 10.0;
    size_t n = fx.ids(prefix).size();
    EXPECT_GE(n, previous);
    EXPECT_EQ(n, all.size());
    previous = n;
  }
  EXPECT_EQ(all.size(), 20000u);
  QuerySpec none;
  none.quality_to = 0;
  EXPECT_TRUE(fx.ids(none).empty());
}

TEST(Query, FilteredProgressiveReadsPartitionTheFilteredSet) {
  Fixture fx(20000);
  QuerySpec full;
  full.where = "energy > 0.3";
  auto want = fx.ids(full);
  std::vector<uint64_t> got;
  for (int k = 0; k < 10; ++k) {
    QuerySpec s = full;
    s.quality_from = k / 10.0;
    s.quality_to = (k + 1) / 10.0;
    auto part = fx.ids(s);
    got.insert(got.end(), part.begin(), part.end());
  }
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got, want);
}

TEST(Analysis, CountStatsHistogramsMatchBruteForce) {
  Fixture fx(25000);
  auto& c = fx.cols;
  QuerySpec s;
  s.where = "x < 0.5";
  Query q(fx.file, s);
  uint64_t n = 0;
  double sum = 0, mn = INFINITY, mx = -INFINITY;
  std::vector<double> h(10, 0), h2(4 * 5, 0), hw(10, 0);
  for (uint64_t i = 0; i < c.x.size(); ++i) {
    if (!(double(c.x[i]) < 0.5)) continue;
    ++n;
    double e = c.energy[i];
    sum += e, mn = std::min(mn, e), mx = std::max(mx, e);
    if (e >= 0 && e <= 1) {
      int b = std::min(9, int(e * 10));
      h[size_t(b)] += 1;
      hw[size_t(b)] += c.noise[i];
    }
    double y = c.y[i];
    if (e >= 0 && e <= 1 && y >= 0 && y <= 1) h2[size_t(std::min(3, int(e * 4)) * 5 + std::min(4, int(y * 5)))] += 1;
  }
  EXPECT_EQ(count(q), n);
  ColumnStats st = stats(q, fx.file->column("energy"));
  EXPECT_EQ(st.valid, n);
  EXPECT_EQ(st.min, mn);
  EXPECT_EQ(st.max, mx);
  EXPECT_NEAR(st.sum, sum, 1e-9 * std::fabs(sum));
  auto got = histogram(q, Axis{fx.file->column("energy"), 10, 0.0, 1.0});
  EXPECT_EQ(got, h);
  auto gotw = histogram(q, Axis{fx.file->column("energy"), 10, 0.0, 1.0}, fx.file->column("noise"));
  for (size_t b = 0; b < 10; ++b) EXPECT_NEAR(gotw[b], hw[b], 1e-9);
  auto got2 = histogram2d(q, Axis{fx.file->column("energy"), 4, 0.0, 1.0}, Axis{fx.file->column("y"), 5, 0.0, 1.0});
  EXPECT_EQ(got2, h2);
  EXPECT_THROW(histogram(q, Axis{0, 0, 0.0, 1.0}), UsageError);
  EXPECT_THROW(histogram(q, Axis{0, 4, 1.0, 1.0}), UsageError);
}

TEST(Analysis, CountsAnIndexAnswersFromTheIndexAlone) {
  // A count that one indexed test answers (a tail threshold on either side, ties, an id
  // list) is the index's count, without its rows: equal to brute force and to the
  // selection's size; counted as the plan taking those rows whole would count them.
  Fixture fx(25000);
  const std::vector<float>& e = fx.cols.energy;
  std::vector<float> sorted = e;
  std::sort(sorted.begin(), sorted.end());
  auto text = [](float v) { return number_text(double(v)); };
  const float hi = sorted[sorted.size() - 40], lo = sorted[30];
  struct Case {
    std::string where;
    std::function<bool(uint64_t)> pass;
    bool indexed;
  };
  const std::vector<Case> cases = {
      {"energy > " + text(hi), [&](uint64_t i) { return e[i] > hi; }, true},
      {"energy >= " + text(hi), [&](uint64_t i) { return e[i] >= hi; }, true},
      {"energy < " + text(lo), [&](uint64_t i) { return e[i] < lo; }, true},
      {"energy <= " + text(lo), [&](uint64_t i) { return e[i] <= lo; }, true},
      {"energy == " + text(hi), [&](uint64_t i) { return e[i] == hi; }, true},
      {"id in (3, 17, 24999, 40000)", [](uint64_t i) { return i == 3 || i == 17 || i == 24999; }, true},
      {"energy > " + text(hi) + " and x < 0.5", [&](uint64_t i) { return e[i] > hi && fx.cols.x[i] < 0.5f; }, false},
  };
  for (const Case& c : cases) {
    QuerySpec s;
    s.where = c.where;
    Query q(fx.file, s);
    const uint64_t n = fx.brute(c.pass).size();
    EXPECT_EQ(count(q), n) << c.where;
    const QueryCounters counted = q.counters();
    if (c.indexed) {
      EXPECT_EQ(counted.tail_index_parts + counted.id_index_parts, 1u) << c.where;
      EXPECT_EQ(counted.points_tested, 0u) << c.where;
      EXPECT_EQ(counted.points_taken_whole, n) << c.where;
    }
    Query again(fx.file, s);
    EXPECT_EQ(Selection(again).size(), n) << c.where;
    // A sample of the rows is tested, not counted by the index: the same count as its selection.
    s.fraction = 0.5;
    Query half(fx.file, s), half_again(fx.file, s);
    EXPECT_EQ(count(half), Selection(half_again).size()) << c.where;
  }
}

TEST(Selection, GatherF32ConvertsAndSubtracts) {
  Fixture fx(30000);
  QuerySpec s;
  s.where = "energy > 0.2";
  Query q(fx.file, s);
  Selection sel(q);
  ASSERT_GT(sel.size(), 1000u);
  for (const char* name : {"x", "noise", "id", "kind"}) {
    const size_t c = fx.file->column(name);
    std::vector<double> want(sel.size());
    dispatch_dtype(fx.file->schema()[c].dtype, [&](auto tag) {
      using T = decltype(tag);
      std::vector<T> native(sel.size());
      sel.gather(c, 0, sel.size(), native.data(), 1);
      for (size_t i = 0; i < native.size(); ++i) want[i] = double(native[i]);
    });
    for (double subtract : {0.0, 0.25, -3.5}) {
      for (unsigned threads : {1u, 2u}) {
        const uint64_t b = 17, e = sel.size() - 3;  // a range that starts and ends inside segments
        std::vector<float> got(e - b, -1.f);
        sel.gather_f32(c, b, e, got.data(), subtract, threads);
        for (uint64_t i = b; i < e; ++i)
          ASSERT_EQ(got[i - b], float(want[i] - subtract)) << name << " row " << i << " subtract " << subtract;
      }
    }
  }
}
