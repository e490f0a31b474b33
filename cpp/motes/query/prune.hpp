// Pruning: decides from an index alone (per-node ranges and 32-bin bitmaps of a particle
// file, or the nodes of a step index over part files) whether none, some or all of a
// node's points can satisfy a predicate. Conservative: "none" and "all" are certain.
#pragma once

#include <cstdint>
#include <vector>

#include "motes/particles/reader.hpp"
#include "motes/expr/expr.hpp"

namespace motes {

// How many of a node's points can satisfy a predicate: none, some (test them) or all.
enum class NodeMatch : uint8_t { none, some, all };

// `column` = index in the schema, `constant` the number it is compared with, `kind` the
// comparison with the column on the left: true for `x OP c` and `c OP x` (flipped).
bool is_simple_comparison(const Expr& e, int& column, long double& constant, Expr::Kind& kind);
// The comparison with its operands swapped: `c < x` is `x > c` (== and != stay).
Expr::Kind mirrored(Expr::Kind kind);

class Pruner {
 public:
  // The index of every column the predicate reads (by schema position; others may be null).
  explicit Pruner(std::vector<const ColumnIndex*> columns) : columns_(std::move(columns)) {}
  NodeMatch eval(const Expr& e, uint32_t node) const;

 private:
  std::vector<const ColumnIndex*> columns_;
  NodeMatch compare(const Expr& e, uint32_t node) const;
  NodeMatch simple(int col, double c, Expr::Kind kind, uint32_t node) const;
  Interval interval(const Expr& e, uint32_t node) const;
};

// The indexes a Pruner over `file` needs for `predicate` (decoded now, if not yet).
std::vector<const ColumnIndex*> indexes_for(const ParticleFile& file, const Expr& predicate);
// The same over columns decoded already (a step index).
std::vector<const ColumnIndex*> indexes_of(const std::vector<ColumnIndex>& columns);

}  // namespace motes
