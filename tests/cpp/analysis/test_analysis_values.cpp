// Analyses of values that are expressions (values_of: a column, or a numeric expression over
// the columns and fields) against brute force, and the default range rule of histograms.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "motes/analysis/analysis.hpp"
#include "motes/particles/collection.hpp"
#include "test_util.hpp"

using namespace motes;

TEST(AnalysisValues, ExpressionsAreBinnedLikeTheirValues) {
  const std::string path = test::temp_path("values.mpf");
  WriteOptions o;
  o.sync = false;
  test::Columns cols = test::make_columns(8000, 5);
  write_particle_file(path, cols.views(), o);
  auto c = Collection::open(path);
  const Values v = values_of(*c, "2 * energy - x", {});
  ASSERT_TRUE(v.expression);
  EXPECT_EQ(values_of(*c, "energy", {}).column, c->column("energy"));
  EXPECT_THROW(values_of(*c, "nope", {}), UsageError);
  EXPECT_THROW(values_of(*c, "energy > 1", {}), UsageError);   // a condition is not a value
  EXPECT_THROW(values_of(*c, "field('B')", {}), UsageError);   // a field the query was not given
  QuerySpec s;
  s.where = "y < 0.6";
  Query q(c, s);
  std::vector<double> h(12, 0.0);
  double lo = INFINITY, hi = -INFINITY;
  uint64_t n = 0;
  for (size_t i = 0; i < cols.x.size(); ++i) {
    if (!(cols.y[i] < 0.6f)) continue;
    const double e = 2.0 * double(cols.energy[i]) - double(cols.x[i]);
    lo = std::min(lo, e), hi = std::max(hi, e), ++n;
  }
  const ColumnStats st = stats(q, v);
  EXPECT_EQ(st.valid, n);
  EXPECT_EQ(st.min, lo);
  EXPECT_EQ(st.max, hi);
  const Range r = histogram_range(std::nullopt, Range{st.min, st.max});
  std::vector<double> edges(13);  // numpy's: k * step + lo, the last one hi
  for (int k = 0; k <= 12; ++k) edges[size_t(k)] = double(k) * ((r.hi - r.lo) / 12.0) + r.lo;
  edges[12] = r.hi;
  for (size_t i = 0; i < cols.x.size(); ++i) {
    if (!(cols.y[i] < 0.6f)) continue;
    const double e = 2.0 * double(cols.energy[i]) - double(cols.x[i]);
    size_t b = 0;
    while (b < 11 && e >= edges[b + 1]) ++b;
    h[b] += 1;
  }
  EXPECT_EQ(histogram(q, Axis{v, 12, r.lo, r.hi}), h);
}

TEST(AnalysisValues, TheDefaultRangeRule) {
  const Range none = histogram_range(std::nullopt, std::nullopt);
  EXPECT_EQ(none.lo, 0.0);
  EXPECT_EQ(none.hi, 1.0);
  const Range one = histogram_range(std::nullopt, Range{2.0, 2.0});
  EXPECT_EQ(one.lo, 1.5);
  EXPECT_EQ(one.hi, 2.5);
  const Range given = histogram_range(Range{-1.0, 3.0}, Range{0.0, 1.0});
  EXPECT_EQ(given.lo, -1.0);
  EXPECT_EQ(given.hi, 3.0);
  EXPECT_EQ(histogram_range(Range{4.0, 4.0}, std::nullopt).lo, 3.5);
}
