// The expression language of queries, analyses and derived quantities: parser and syntax tree.
//
//   expr    := or
//   or      := and (("or" | "|") and)*
//   and     := not (("and" | "&") not)*
//   not     := ("not" | "~") not | compare
//   compare := sum (cmpop sum)*          -- chains: a < b < c  ==  a < b and b < c
//            | sum ["not"] "in" list      -- membership: id in (3, 17, 42); also [ ... ]
//   list    := ("(" | "[") literal ("," literal)* [","] (")" | "]")
//   literal := ["-" | "+"] (number | "inf")  -- integers are kept exactly, up to 64 bits
//   (every number literal is: `id == 9007199254740993` compares exactly, not rounded)
//   sum     := product (("+" | "-") product)*
//   product := unary (("*" | "/") unary)*
//   unary   := "-" unary | power
//   power   := atom ("**" unary)?        -- right associative, binds tighter than unary minus on its left
//   atom    := number | column | function "(" sum ")" | "(" expr ")"
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "motes/core/types.hpp"
#include "motes/expr/functions.hpp"
#include "motes/expr/sampler.hpp"

namespace motes {

// The literals of `x in (...)`, sorted by value and distinct. long double holds every 64-bit
// integer and every double exactly (x86-64's 80-bit and aarch64's 128-bit formats), so a
// list of uint64 ids compares exactly in the column's own type (query/native.hpp).
struct InList {
  std::vector<long double> values;
  std::vector<double> rounded;  // the values rounded to double, ascending (for pruning)
};

struct Expr {
  enum class Kind { number, column, negate, add, sub, mul, div, pow, call, field, lt, le, gt, ge, eq, ne, and_, or_, not_, in_ };
  Kind kind;
  double value = 0;           // number (what arithmetic uses)
  // number: the literal's exact value, which comparisons with a column use: an integer
  // literal below 2^64 as written (long double holds it exactly), anything else = value.
  long double exact = 0;
  std::string name;           // column, function or field name
  std::string component;      // field: the component of a vector field ("" for a scalar)
  // field: the field sampled at each point's position (args: the x, y, z columns); set
  // by bind_fields.
  std::shared_ptr<const PointSampler> sampler;
  int column = -1;            // column index, set by bind()
  const Function* function = nullptr;  // call: the function, set by the parser
  uint32_t height = 1;        // nodes on the longest path down from here (bounded by the parser)
  std::vector<std::unique_ptr<Expr>> args;
  std::shared_ptr<const InList> list;  // in_: args[0] is one of these values

  bool is_boolean() const { return kind >= Kind::lt; }
  bool is_comparison() const { return kind >= Kind::lt && kind <= Kind::ne; }
  std::unique_ptr<Expr> clone() const;
  std::string to_string() const;
};

using ExprPtr = std::unique_ptr<Expr>;

// Parses a boolean expression; throws UsageError("... at position N: ...") on bad syntax.
ExprPtr parse_expression(const std::string& text);
// Parses a numeric expression (what an analysis bins or sums: "field('Bz')", "ux**2 + uy**2");
// UsageError on bad syntax or for a condition.
ExprPtr parse_value(const std::string& text);

// Resolves column names to indexes; UsageError naming an unknown column and listing the known ones.
void bind_columns(Expr& e, const std::vector<std::string>& columns);

// A field an expression may sample, `field('name')` or `field('name', 'component')`.
struct FieldRef {
  std::string name, component;
  std::shared_ptr<const PointSampler> sampler;
};
// Gives every field(...) of the expression its sampler; UsageError naming a field the
// query was not given (and the ones it was).
void bind_fields(Expr& e, const std::vector<FieldRef>& fields);
// The fields an expression samples, as (name, component).
std::vector<std::pair<std::string, std::string>> referenced_fields(const Expr& e);

// Column indexes an expression reads (sorted, unique).
std::vector<int> referenced_columns(const Expr& e);

}  // namespace motes
