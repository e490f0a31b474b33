#include "motes/query/derive.hpp"

#include <algorithm>
#include <cmath>

#include "motes/core/errors.hpp"
#include "motes/core/text.hpp"
#include "motes/io/byte_source.hpp"
#include "motes/query/evaluate.hpp"
#include "motes/query/numeric.hpp"

namespace motes {

namespace {

constexpr uint32_t kRun = 4096;  // points per run of the arithmetic

bool samples_a_field(const Expr& e) {
  if (e.kind == Expr::Kind::field) return true;
  return std::any_of(e.args.begin(), e.args.end(), [](const ExprPtr& a) { return samples_a_field(*a); });
}

// `expression` parsed and bound to `names`, checked as a derived quantity's.
ExprPtr derived_expression(const std::string& expression, const std::vector<std::string>& names,
                           const std::vector<double>& error_bounds) {
  ExprPtr e = parse_value(expression);
  bind_columns(*e, names);
  if (samples_a_field(*e)) throw UsageError("derived quantity " + printable(expression) + " samples a field; only columns can be derived from");
  for (int c : referenced_columns(*e))
    if (error_bounds[size_t(c)] > 0)
      throw UsageError("derived quantity " + printable(expression) + " reads column '" + names[size_t(c)] +
                       "', stored within an error bound; derived quantities are computed from exact values");
  return e;
}

}  // namespace

DerivedValues derive_values(const std::string& expression, const std::vector<ColumnView>& columns) {
  std::vector<std::string> names;
  std::vector<double> bounds;
  for (const ColumnView& c : columns) names.push_back(c.spec.name), bounds.push_back(c.spec.error_bound);
  const ExprPtr e = derived_expression(expression, names, bounds);
  const uint64_t n = columns.empty() ? 0 : columns[0].count;
  DerivedValues out{e->to_string(), std::vector<double>(n)};
  NumericRuns runs;
  for (uint64_t start = 0; start < n; start += kRun) {
    const uint32_t m = uint32_t(std::min<uint64_t>(kRun, n - start));
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

int derived_of(const ParticleFile& file, const Expr& e) {
  const std::vector<DerivedQuantity>& derived = file.derived();
  if (derived.empty() || e.kind == Expr::Kind::number || e.kind == Expr::Kind::column || e.is_boolean()) return -1;
  const std::string text = e.to_string();
  for (size_t d = 0; d < derived.size(); ++d)
    if (derived[d].expression == text) return int(d);
  return -1;
}

namespace {

bool is_column(const std::vector<ColumnSpec>& schema, const std::string& name) {
  return std::any_of(schema.begin(), schema.end(), [&](const ColumnSpec& c) { return c.name == name; });
}

// Whether `e` names something that is no column.
bool names_other(const Expr& e, const std::vector<ColumnSpec>& schema) {
  if (e.kind == Expr::Kind::column && !is_column(schema, e.name)) return true;
  return std::any_of(e.args.begin(), e.args.end(), [&](const ExprPtr& a) { return names_other(*a, schema); });
}

void substitute(Expr& e, const std::vector<ColumnSpec>& schema, const std::vector<DerivedQuantity>& derived) {
  if (e.kind == Expr::Kind::column) {
    if (is_column(schema, e.name)) return;
    std::string columns, names;
    for (const DerivedQuantity& q : derived) {
      if (q.name == e.name) {
        ExprPtr x = parse_value(q.expression);  // a file's text: bind_columns refuses what is no column
        e = std::move(*x);
        return;
      }
      names += (names.empty() ? "" : ", ") + q.name;
    }
    for (const ColumnSpec& c : schema) columns += (columns.empty() ? "" : ", ") + c.name;
    throw UsageError("unknown column '" + e.name + "' in expression (columns: " + columns + "; derived quantities: " + names + ")");
  }
  for (ExprPtr& a : e.args) substitute(*a, schema, derived);
}

}  // namespace

void expand_derived(Expr& e, const Collection& collection) {
  if (!names_other(e, collection.schema()) || collection.part_count() == 0) return;
  const std::shared_ptr<const ParticleFile> first = collection.part(0);
  if (!first->derived().empty()) substitute(e, collection.schema(), first->derived());
}

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
    Evaluator ev(file, *e);
    for (uint64_t start = 0; start < n; start += kRun) ev.values(start, uint32_t(std::min<uint64_t>(kRun, n - start)), values + start);
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
