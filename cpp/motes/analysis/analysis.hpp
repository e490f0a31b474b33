// Analyses computed while the query traverses: nothing is materialised beyond
// one work chunk's selection; per-worker partial results are merged at the end.
#pragma once

#include <optional>
#include <vector>

#include "motes/query/engine.hpp"

namespace motes {

struct ColumnStats {
  uint64_t count = 0;  // selected points
  uint64_t valid = 0;  // of which not NaN
  double min = 0, max = 0, sum = 0;
  double mean() const { return valid ? sum / double(valid) : 0.0; }
};

// Equal-width bins over [lo, hi]; the last bin includes hi (as numpy.histogram).
struct Axis {
  size_t column;
  uint32_t bins;
  double lo, hi;
};

uint64_t count(Query& q);
ColumnStats stats(Query& q, size_t column);
// Counts (or sums of weights) per bin; 2-D results are row-major [x bin][y bin].
std::vector<double> histogram(Query& q, const Axis& x, std::optional<size_t> weight = std::nullopt);
std::vector<double> histogram2d(Query& q, const Axis& x, const Axis& y, std::optional<size_t> weight = std::nullopt);

}  // namespace motes
