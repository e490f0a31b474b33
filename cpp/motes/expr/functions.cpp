#include "motes/expr/functions.hpp"
#include "motes/core/text.hpp"

#include <algorithm>
#include <cmath>

namespace motes {

Interval Interval::full() { return {-INFINITY, INFINITY}; }

Interval widen(Interval v) {
  if (v.empty) return v;
  if (std::isnan(v.lo) || std::isnan(v.hi)) return Interval::full();
  return {std::nextafter(v.lo, -INFINITY), std::nextafter(v.hi, INFINITY)};
}

namespace {

template <double (*F)(double)>
void each(double* v, uint32_t n) {
  for (uint32_t i = 0; i < n; ++i) v[i] = F(v[i]);
}

Interval abs_bound(Interval a) {
  if (a.lo >= 0) return a;
  if (a.hi <= 0) return {-a.hi, -a.lo};
  return {0.0, std::max(-a.lo, a.hi)};
}
// Increasing functions defined on [domain_lo, inf): the image of the interval, widened.
template <double (*F)(double)>
Interval increasing_from(Interval a, double domain_lo, bool open) {
  if (open ? !(a.lo > domain_lo) : !(a.lo >= domain_lo)) return Interval::full();
  return widen({F(a.lo), F(a.hi)});
}
double sqrt_(double v) { return std::sqrt(v); }
double exp_(double v) { return std::exp(v); }
double log_(double v) { return std::log(v); }
double log10_(double v) { return std::log10(v); }
double sin_(double v) { return std::sin(v); }
double cos_(double v) { return std::cos(v); }
double tan_(double v) { return std::tan(v); }
double abs_(double v) { return std::fabs(v); }

}  // namespace

const std::vector<Function>& functions() {
  static const std::vector<Function> table = {
      {"abs", each<abs_>, abs_bound},
      {"sqrt", each<sqrt_>, [](Interval a) { return increasing_from<sqrt_>(a, 0.0, false); }},
      {"exp", each<exp_>, [](Interval a) { return widen({std::exp(a.lo), std::exp(a.hi)}); }},
      {"log", each<log_>, [](Interval a) { return increasing_from<log_>(a, 0.0, true); }},
      {"log10", each<log10_>, [](Interval a) { return increasing_from<log10_>(a, 0.0, true); }},
      {"sin", each<sin_>, [](Interval) { return Interval{-1.0, 1.0}; }},
      {"cos", each<cos_>, [](Interval) { return Interval{-1.0, 1.0}; }},
      {"tan", each<tan_>, [](Interval) { return Interval::full(); }},
  };
  return table;
}

const Function* find_function(const std::string& name) {
  for (const Function& f : functions())
    if (name == f.name) return &f;
  return nullptr;
}

std::string function_names() {
  return joined(functions(), [](const Function& f) { return std::string(f.name); });
}

}  // namespace motes
