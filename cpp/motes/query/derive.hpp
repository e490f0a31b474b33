// Derived quantities (format 2.4, particles/derived.hpp) in the query layer, which knows
// expressions: their values for the writer (derive_values, with the queries' own arithmetic,
// query/numeric.hpp, so that the tail the writer indexes holds the bits a query computes),
// the quantity a query's expression names (derived_of), and their check (verify_derived).
#pragma once

#include <string>
#include <vector>

#include "motes/particles/collection.hpp"
#include "motes/particles/derived.hpp"
#include "motes/particles/reader.hpp"
#include "motes/query/expr.hpp"

namespace motes {

// A derived quantity's values from the caller's columns (WriteOptions::derive): `expression`
// parsed as a numeric expression over the columns' names. UsageError for bad syntax, an
// unknown column, a condition, a field(...) or a column stored within an error bound.
DerivedValues derive_values(const std::string& expression, const std::vector<ColumnView>& columns);

// The number of `file`'s derived quantity whose expression is `e` (printed alike), or -1.
int derived_of(const ParticleFile& file, const Expr& e);

// Replaces each name in `e` that is no column of `collection` but one of its derived
// quantities (as its first part file declares them) by that quantity's expression as the file
// prints it, so that `vmag > 3` is `sqrt(...) > 3` and is answered through its tail. A file
// is opened only when `e` names something that is not a column.
void expand_derived(Expr& e, const Collection& collection);

// Recomputes every derived quantity of `file` from its columns and checks its statistics and
// its tail index (entries bit for bit, counts, covers); FormatError naming what is wrong.
void verify_derived(const ParticleFile& file);

}  // namespace motes
