#include "motes/expr/derive.hpp"

#include <algorithm>

#include "motes/core/errors.hpp"
#include "motes/core/text.hpp"
#include "motes/expr/numeric.hpp"

namespace motes {

ExprPtr derived_expression(const std::string& expression, const std::vector<std::string>& names,
                           const std::vector<double>& error_bounds) {
  ExprPtr e = parse_value(expression);
  bind_columns(*e, names);
  if (!referenced_fields(*e).empty()) throw UsageError("derived quantity " + printable(expression) + " samples a field; only columns can be derived from");
  for (int c : referenced_columns(*e))
    if (error_bounds[size_t(c)] > 0)
      throw UsageError("derived quantity " + printable(expression) + " reads column '" + names[size_t(c)] +
                       "', stored within an error bound; derived quantities are computed from exact values");
  return e;
}

DerivedValues derive_values(const std::string& expression, const std::vector<ColumnView>& columns) {
  std::vector<std::string> names;
  std::vector<double> bounds;
  for (const ColumnView& c : columns) names.push_back(c.spec.name), bounds.push_back(c.spec.error_bound);
  const ExprPtr e = derived_expression(expression, names, bounds);
  const uint64_t n = columns.empty() ? 0 : columns[0].count;
  DerivedValues out{e->to_string(), std::vector<double>(n)};
  NumericRuns runs;
  for (uint64_t start = 0; start < n; start += kDeriveRun) {
    const uint32_t m = uint32_t(std::min<uint64_t>(kDeriveRun, n - start));
    runs.eval(*e, m, out.values.data() + start, 0, [&](const Expr& col, double* values) {
      const ColumnView& v = columns[size_t(col.column)];
      dispatch_dtype(v.spec.dtype, [&](auto zero) {
        using T = decltype(zero);
        for (uint32_t i = 0; i < m; ++i) values[i] = double(v.at<T>(start + i));
      });
    });
  }
  return out;
}

}  // namespace motes
