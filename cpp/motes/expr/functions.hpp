// The functions of the query language, registered once: each row gives the name the
// parser accepts, the exact evaluation over a run of values, and the bound of its result
// over an interval of inputs (what the pruner uses). Adding a function is adding a row.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace motes {

// A closed interval of doubles; `empty` when it holds no non-NaN value.
struct Interval {
  double lo, hi;
  bool empty = false;
  static Interval full();
};

// The interval widened by one ulp on both sides (results of rounded arithmetic); the full
// line when an end is NaN.
Interval widen(Interval v);

struct Function {
  const char* name;
  void (*eval)(double* values, uint32_t n);  // in place
  Interval (*bound)(Interval arg);           // contains f(x) for every x in arg (arg not empty)
};

// The table, and lookup by name (nullptr when unknown).
const std::vector<Function>& functions();
const Function* find_function(const std::string& name);
std::string function_names();  // "abs, sqrt, ..." for messages

}  // namespace motes
