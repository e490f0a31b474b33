// The expression tree (expr.hpp): copies, the printed form that reads back to the same
// tree, and the binding of its columns and fields. The parser is in parse.cpp.
#include "motes/expr/expr.hpp"

#include <algorithm>
#include <cmath>

#include "motes/core/text.hpp"

namespace motes {

namespace {

using K = Expr::Kind;

// A literal printed so that it reads back to the same exact value: integers below 2^64 in
// full, others in the shortest text of their double.
std::string exact_text(long double v) {
  const long double mag = std::fabs(v);
  if (v == std::floor(v) && mag < 0x1p64L && (long double)(double)v != v)
    return (v < 0 ? "-" : "") + std::to_string(uint64_t(mag));
  return number_text(double(v));
}

const char* op_text(K k) {
  switch (k) {
    case K::add: return " + "; case K::sub: return " - "; case K::mul: return " * "; case K::div: return " / ";
    case K::pow: return " ** "; case K::lt: return " < "; case K::le: return " <= "; case K::gt: return " > ";
    case K::ge: return " >= "; case K::eq: return " == "; case K::ne: return " != "; case K::and_: return " and ";
    case K::or_: return " or ";
    default: return "?";
  }
}

std::string wrap(std::string prefix, const std::string& body, const char* suffix) {
  prefix.append(body);
  prefix.append(suffix);
  return prefix;
}

void collect_columns(const Expr& e, std::vector<int>& out) {
  if (e.kind == K::column) out.push_back(e.column);
  for (const auto& a : e.args) collect_columns(*a, out);
}

}  // namespace

ExprPtr Expr::clone() const {
  auto e = std::make_unique<Expr>();
  e->kind = kind;
  e->value = value;
  e->exact = exact;
  e->name = name;
  e->column = column;
  e->function = function;
  e->component = component;
  e->sampler = sampler;
  e->height = height;
  e->list = list;
  for (const auto& a : args) e->args.push_back(a->clone());
  return e;
}

std::string Expr::to_string() const {
  switch (kind) {
    case K::number: {
      std::string s = exact_text(exact);  // shortest exact text, locale-independent
      // A negative literal is parenthesised: "-2 ** x" would read back as -(2 ** x).
      return std::signbit(value) ? wrap("(", s, ")") : s;
    }
    case K::column: return name;
    case K::negate: return wrap("(-", args[0]->to_string(), ")");  // whole, so it can be a power's base
    case K::call: return wrap(name + "(", args[0]->to_string(), ")");
    case K::field: return "field('" + name + (component.empty() ? "" : "', '" + component) + "')";
    case K::not_: return wrap("not (", args[0]->to_string(), ")");
    case K::in_: {
      std::string s = "(" + args[0]->to_string() + " in (";
      for (size_t i = 0; i < list->values.size(); ++i) {
        if (i) s += ", ";
        s += exact_text(list->values[i]);
      }
      return s + "))";
    }
    default: return wrap("(", args[0]->to_string() + op_text(kind) + args[1]->to_string(), ")");
  }
}

void bind_fields(Expr& e, const std::vector<FieldRef>& fields) {
  if (e.kind == K::field) {
    for (const FieldRef& f : fields)
      if (f.name == e.name && f.component == e.component) {
        e.sampler = f.sampler;
        break;
      }
    if (!e.sampler) {
      const std::string list =
          joined(fields, [](const FieldRef& f) { return f.name + (f.component.empty() ? "" : "/" + f.component); });
      throw UsageError("the expression samples " + e.to_string() + ", which this query was not given (fields: " +
                       (list.empty() ? "none" : list) + ")");
    }
  }
  for (auto& a : e.args) bind_fields(*a, fields);
}

namespace {
void collect_fields(const Expr& e, std::vector<std::pair<std::string, std::string>>& out) {
  if (e.kind == K::field && std::find(out.begin(), out.end(), std::make_pair(e.name, e.component)) == out.end())
    out.emplace_back(e.name, e.component);
  for (const auto& a : e.args) collect_fields(*a, out);
}
}  // namespace

std::vector<std::pair<std::string, std::string>> referenced_fields(const Expr& e) {
  std::vector<std::pair<std::string, std::string>> out;
  collect_fields(e, out);
  return out;
}

void bind_columns(Expr& e, const std::vector<std::string>& columns) {
  if (e.kind == K::column) {
    auto it = std::find(columns.begin(), columns.end(), e.name);
    if (it == columns.end()) {
      throw UsageError("unknown column '" + e.name + "' in expression (columns: " + joined(columns) + ")");
    }
    e.column = int(it - columns.begin());
  }
  for (auto& a : e.args) bind_columns(*a, columns);
}

std::vector<int> referenced_columns(const Expr& e) {
  std::vector<int> out;
  collect_columns(e, out);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace motes
