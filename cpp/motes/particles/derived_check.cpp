#include "motes/particles/derived_check.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "motes/container/block_stream.hpp"
#include "motes/core/errors.hpp"
#include "motes/core/text.hpp"
#include "motes/expr/derive.hpp"
#include "motes/expr/numeric.hpp"
#include "motes/io/byte_source.hpp"
#include "motes/particles/derived.hpp"

namespace motes {

void verify_derived(const ParticleFile& file) {
  std::vector<std::string> names;
  std::vector<double> bounds;
  for (const ColumnSpec& c : file.schema()) names.push_back(c.name), bounds.push_back(c.error_bound);
  const uint64_t n = file.particle_count();
  for (size_t d = 0; d < file.derived().size(); ++d) {
    const DerivedQuantity& q = file.derived()[d];
    const std::string what = file.path() + ": derived quantity '" + printable(q.name) + "'";
    ExprPtr e;
    try {
      e = derived_expression(q.expression, names, bounds);
    } catch (const UsageError& x) {
      throw FormatError(what + " has an expression this file cannot compute: " + x.what());
    }
    if (e->to_string() != q.expression) throw FormatError(what + " has an expression not in its printed form");
    std::string bytes(n * sizeof(double), '\0');
    double* values = reinterpret_cast<double*>(bytes.data());
    NumericRuns runs;  // the arithmetic of queries and of the writer, over the stored columns
    BlockReader reader;
    for (uint64_t start = 0; start < n; start += kDeriveRun) {
      const uint32_t m = uint32_t(std::min<uint64_t>(kDeriveRun, n - start));
      runs.eval(*e, m, values + start, 0,
                [&](const Expr& c, double* out) { column_doubles(file, reader, size_t(c.column), start, m, out); });
    }
    DerivedQuantity again = q;
    summarise_derived(values, n, again);
    auto same = [](double a, double b) { return a == b || (std::isnan(a) && std::isnan(b)); };  // ±0 in any order
    if (again.nan_count != q.nan_count || !same(again.min, q.min) || !same(again.max, q.max))
      throw FormatError(what + "'s statistics differ from its values (NaN count, min or max)");
    const BlockStream stream = BlockStream::contiguous(memory_source(std::move(bytes), what), what, uint8_t(DType::f64), n,
                                                       uint64_t(1) << 16, 0, {});
    file.verify_derived_tail(d, stream);
  }
}

}  // namespace motes
