// Analyses computed while the query traverses: nothing is materialised beyond
// one work chunk's selection; per-worker partial results are merged at the end.
// Also the defaults of histograms (bins, range), which every caller takes from here.
#pragma once

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "motes/query/engine.hpp"

namespace motes {

struct ColumnStats {
  uint64_t count = 0;  // selected points
  uint64_t valid = 0;  // of which not NaN
  double min = 0, max = 0, sum = 0;  // min and max: when valid
  double mean() const { return valid ? sum / double(valid) : 0.0; }
  // Adds the stats of a disjoint selection: the stats of the union. The one merge of stats
  // (work chunks here; part files across MPI ranks and Dask tasks, through the binding's
  // merge_stats); sums are added in the order the parts are added.
  void add(const ColumnStats& o) {
    count += o.count;
    if (!o.valid) return;
    if (!valid) min = o.min, max = o.max;
    min = std::min(min, o.min);
    max = std::max(max, o.max);
    sum += o.sum;
    valid += o.valid;
  }
};

// What an analysis reads at each selected point: a column, or a numeric expression over
// the columns and the query's grid fields ("field('Bz')", "ux**2 + uy**2"), as float64.
struct Values {
  Values(size_t column) : column(column) {}  // NOLINT(google-explicit-constructor): a column is a value
  explicit Values(std::shared_ptr<const Expr> expression) : expression(std::move(expression)) {}
  size_t column = 0;
  std::shared_ptr<const Expr> expression;  // when set, instead of the column (columns and fields bound)
};

// The values `text` names in `collection`: the column of that name, else a numeric
// expression (parse_value) over its columns and the grid `fields` (a QuerySpec's) it may
// sample. UsageError naming an unknown column (listing the columns) or field.
Values values_of(const Collection& collection, const std::string& text, const std::vector<FieldRef>& fields);

// Equal-width bins over [lo, hi]; the last bin includes hi (as numpy.histogram). NaN and
// values outside [lo, hi] are not counted.
struct Axis {
  Values values;
  uint32_t bins;
  double lo, hi;
};

// Bins per axis of a histogram when the caller gives none (the Python API, the server).
constexpr uint32_t kHistogramBins = 64;
// Bins per axis of a 2-D histogram drawn by the command line (motes hist x y): an image.
constexpr uint32_t kHistogramBins2d = 128;

struct Range {
  double lo, hi;
};
// The range of a histogram axis: `given`, else [min, max] of the values to bin (`found`;
// none: [0, 1]); a range of one value v is [v - 0.5, v + 0.5] (as numpy.histogram).
Range histogram_range(std::optional<Range> given, std::optional<Range> found);

uint64_t count(Query& q);
ColumnStats stats(Query& q, const Values& values);
// Counts (or sums of weights) per bin; 2-D results are row-major [x bin][y bin].
std::vector<double> histogram(Query& q, const Axis& x, std::optional<Values> weight = std::nullopt);
std::vector<double> histogram2d(Query& q, const Axis& x, const Axis& y, std::optional<Values> weight = std::nullopt);

}  // namespace motes
