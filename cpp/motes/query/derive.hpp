// Derived quantities (format 2.4, particles/derived.hpp) in the query planner: the quantity a
// query's expression names (derived_of), and a query's names of derived quantities replaced
// by their expressions (expand_derived). Their values are expr/derive.hpp's; their check
// particles/derived_check.hpp's.
#pragma once

#include <string>
#include <vector>

#include "motes/particles/collection.hpp"
#include "motes/particles/derived.hpp"
#include "motes/particles/reader.hpp"
#include "motes/expr/expr.hpp"

namespace motes {

// The number of `file`'s derived quantity whose expression is `e` (printed alike), or -1.
int derived_of(const ParticleFile& file, const Expr& e);

// Replaces each name in `e` that is no column of `collection` but one of its derived
// quantities (as its first part file declares them) by that quantity's expression as the file
// prints it, so that `vmag > 3` is `sqrt(...) > 3` and is answered through its tail. A file
// is opened only when `e` names something that is not a column.
void expand_derived(Expr& e, const Collection& collection);

}  // namespace motes
