#include "motes/particles/derived.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "motes/core/errors.hpp"
#include "motes/core/text.hpp"
#include "motes/particles/spec.hpp"

namespace motes {

std::string encode_derived(const DerivedQuantity& q) {
  std::string out(spec::kDerivedHead, '\0');
  const uint32_t n = uint32_t(q.name.size()), x = uint32_t(q.expression.size());
  std::memcpy(out.data(), &q.nan_count, 8);
  std::memcpy(out.data() + 8, &q.min, 8);
  std::memcpy(out.data() + 16, &q.max, 8);
  std::memcpy(out.data() + 24, &n, 4);
  std::memcpy(out.data() + 28, &x, 4);
  return out + q.name + q.expression;
}

DerivedQuantity decode_derived(const std::string& b, uint64_t particle_count, std::string& problem) {
  DerivedQuantity q;
  if (b.size() < spec::kDerivedHead) {
    problem = "has " + std::to_string(b.size()) + " bytes";
    return q;
  }
  uint32_t n = 0, x = 0;
  std::memcpy(&q.nan_count, b.data(), 8);
  std::memcpy(&q.min, b.data() + 8, 8);
  std::memcpy(&q.max, b.data() + 16, 8);
  std::memcpy(&n, b.data() + 24, 4);
  std::memcpy(&x, b.data() + 28, 4);
  const bool none = q.nan_count == particle_count;
  if (n == 0 || n > 255 || x == 0 || b.size() != spec::kDerivedHead + uint64_t(n) + x)
    problem = "has the wrong length for a name of " + std::to_string(n) + " bytes and an expression of " + std::to_string(x);
  else if (q.nan_count > particle_count)
    problem = "counts " + std::to_string(q.nan_count) + " NaN values of " + std::to_string(particle_count);
  else if (none ? !(std::isnan(q.min) && std::isnan(q.max)) : !(q.min <= q.max))
    problem = "has statistics out of order (min " + number_text(q.min) + ", max " + number_text(q.max) + ")";
  if (!problem.empty()) return q;
  q.name = b.substr(spec::kDerivedHead, n);
  q.expression = b.substr(spec::kDerivedHead + n, x);
  if (!valid_utf8(q.name) || !valid_utf8(q.expression)) problem = "is not UTF-8 text";
  return q;
}

void summarise_derived(const double* v, uint64_t n, DerivedQuantity& q) {
  q.nan_count = 0;
  q.min = std::numeric_limits<double>::infinity();
  q.max = -q.min;
  for (uint64_t i = 0; i < n; ++i) {
    if (std::isnan(v[i])) {
      ++q.nan_count;
      continue;
    }
    q.min = std::min(q.min, v[i]);
    q.max = std::max(q.max, v[i]);
  }
  if (q.nan_count == n) q.min = q.max = std::numeric_limits<double>::quiet_NaN();
}

DerivedSections derived_sections(const DerivedSpec& spec, const DerivedValues& v, const uint64_t* order, uint64_t n,
                                 uint32_t slot, double fraction, int zstd_level, unsigned threads) {
  if (v.values.size() != n) throw Error("derived quantity '" + spec.name + "': the evaluator gave the wrong number of values");
  DerivedSections out{DerivedQuantity{spec.name, v.canonical}, std::nullopt};
  summarise_derived(v.values.data(), n, out.quantity);
  const ColumnView view{ColumnSpec{spec.name, DType::f64, IndexKind::none, "", 0}, v.values.data(), n, {}};
  std::unique_ptr<TailCollector> tail = make_tail_collector(view, fraction);
  if (!tail) return out;
  // Streamed in file order, as a column's tail is collected.
  std::vector<double> run(std::min<uint64_t>(n, uint64_t(1) << 16));
  for (uint64_t at = 0; at < n; at += run.size()) {
    const uint64_t m = std::min<uint64_t>(run.size(), n - at);
    for (uint64_t i = 0; i < m; ++i) run[i] = v.values[order[at + i]];
    tail->add(run.data(), at, m);
  }
  out.tail = tail->finish(slot, n, zstd_level, threads);
  return out;
}

}  // namespace motes
