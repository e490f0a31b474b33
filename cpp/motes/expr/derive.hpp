// The values of a derived quantity (format 2.4, particles/derived.hpp): a named numeric
// expression over a file's columns, computed with the queries' own arithmetic
// (expr/numeric.hpp), so that the tail the writer indexes holds the bits a query computes.
// Below the particle files: the writer computes them itself, whatever calls it (C++, C,
// Fortran, Python), and the reader checks them (verify_derived, particles/derived_check.hpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "motes/core/types.hpp"
#include "motes/expr/expr.hpp"

namespace motes {

// Points per run of the arithmetic.
constexpr uint32_t kDeriveRun = 4096;

// `expression` parsed as a numeric expression and bound to the columns `names`, checked as a
// derived quantity's: UsageError for bad syntax, an unknown column, a condition, a field(...)
// or a column stored within an error bound (error_bounds[c] > 0).
ExprPtr derived_expression(const std::string& expression, const std::vector<std::string>& names,
                           const std::vector<double>& error_bounds);

// A derived quantity's values, one per particle in the caller's order, with the expression
// as the query language prints it (Expr::to_string: what the planner matches).
struct DerivedValues {
  std::string canonical;
  std::vector<double> values;
};

// The values of `expression` over the caller's columns (WriteOptions::derived), checked as
// derived_expression does.
DerivedValues derive_values(const std::string& expression, const std::vector<ColumnView>& columns);

}  // namespace motes
