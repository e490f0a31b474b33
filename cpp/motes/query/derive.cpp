#include "motes/query/derive.hpp"

#include <algorithm>
#include <cmath>

#include "motes/core/errors.hpp"
#include "motes/core/text.hpp"

namespace motes {

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
    for (const DerivedQuantity& q : derived) {
      if (q.name == e.name) {
        ExprPtr x = parse_value(q.expression);  // a file's text: bind_columns refuses what is no column
        e = std::move(*x);
        return;
      }
    }
    throw UsageError("unknown column '" + e.name + "' in expression (columns: " +
                     joined(schema, [](const ColumnSpec& c) { return c.name; }) + "; derived quantities: " +
                     joined(derived, [](const DerivedQuantity& q) { return q.name; }) + ")");
  }
  for (ExprPtr& a : e.args) substitute(*a, schema, derived);
}

}  // namespace

void expand_derived(Expr& e, const Collection& collection) {
  if (!names_other(e, collection.schema()) || collection.part_count() == 0) return;
  const std::shared_ptr<const ParticleFile> first = collection.part(0);
  if (!first->derived().empty()) substitute(e, collection.schema(), first->derived());
}

}  // namespace motes
