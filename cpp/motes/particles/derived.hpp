// Derived quantities (format 2.4, docs/format.md §4.18): named expressions over a file's
// columns (`vmag = sqrt(vx**2 + vy**2 + vz**2)`) whose values the writer computes, indexes
// with a tail index (and its cover) and summarises, but does not store, so that a query
// testing the same expression against a constant in its tail (`sqrt(vx**2+vy**2+vz**2) >
// 3000`) is answered through the index, as PostgreSQL's expression indexes are.
//
// The writer computes the values itself (expr/derive.hpp: derive_values, with the same
// arithmetic as queries, so that both give the same bits), the reader keeps the quantity's
// canonical text, which the planner compares with the expressions it is asked
// (query/indexed.cpp), and verify_data computes them again (particles/derived_check.hpp).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "motes/core/types.hpp"
#include "motes/expr/derive.hpp"
#include "motes/particles/tail_index.hpp"

namespace motes {

// What the writer is asked for: a name (an identifier, not a column's) and an expression.
struct DerivedSpec {
  std::string name, expression;
};

// Computes a derived quantity's values instead of derive_values (WriteOptions::derive): a
// writer with other arithmetic, as the tests make one to see verify_derived refuse its file.
using DeriveFn = std::function<DerivedValues(const std::string& expression, const std::vector<ColumnView>& columns)>;

// The derived quantity section (kind 18): its statistics, name and canonical expression.
struct DerivedQuantity {
  std::string name, expression;
  uint64_t nan_count = 0;  // values that are NaN
  double min = 0, max = 0;  // over the other values; NaN when every value is NaN
};
std::string encode_derived(const DerivedQuantity& q);
// The section's fields, or what is wrong with its bytes (then `problem` is not empty);
// `particle_count` bounds the NaN count.
DerivedQuantity decode_derived(const std::string& bytes, uint64_t particle_count, std::string& problem);
// The statistics of `n` values.
void summarise_derived(const double* values, uint64_t n, DerivedQuantity& q);

// What the writer stores of derived quantity `spec`: its statistics (the expression as
// `values` prints it), and its tail index at column `slot` (columns + d) with about
// `fraction` of the values beyond each limit, not yet placed or covered; no tail when its
// values have none. `values` in the caller's order; order[p]: the caller's row at position p.
struct DerivedSections {
  DerivedQuantity quantity;
  std::optional<TailIndexSections> tail;
};
DerivedSections derived_sections(const DerivedSpec& spec, const DerivedValues& values, const uint64_t* order,
                                 uint64_t particle_count, uint32_t slot, double fraction, int zstd_level, unsigned threads);

}  // namespace motes
