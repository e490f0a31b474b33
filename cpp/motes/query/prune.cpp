#include "motes/query/prune.hpp"

#include <algorithm>
#include <cmath>

#include "motes/particles/spec.hpp"

namespace motes {

namespace {
using K = Expr::Kind;
}  // namespace

bool is_simple_comparison(const Expr& e, int& column, long double& constant, K& kind) {
  if (!e.is_comparison()) return false;
  const Expr& a = *e.args[0];
  const Expr& b = *e.args[1];
  if (a.kind == K::column && b.kind == K::number) {
    column = a.column, constant = b.exact, kind = e.kind;
    return true;
  }
  if (a.kind == K::number && b.kind == K::column) {
    column = b.column, constant = a.exact, kind = mirrored(e.kind);
    return true;
  }
  return false;
}

K mirrored(K kind) {
  switch (kind) {  // c < x  ==  x > c
    case K::lt: return K::gt;
    case K::le: return K::ge;
    case K::gt: return K::lt;
    case K::ge: return K::le;
    default: return kind;
  }
}

std::vector<const ColumnIndex*> indexes_for(const ParticleFile& file, const Expr& predicate) {
  std::vector<const ColumnIndex*> out(file.schema().size(), nullptr);
  for (int c : referenced_columns(predicate)) out[size_t(c)] = &file.index(size_t(c));
  return out;
}

std::vector<const ColumnIndex*> indexes_of(const std::vector<ColumnIndex>& columns) {
  std::vector<const ColumnIndex*> out;
  for (const ColumnIndex& c : columns) out.push_back(&c);
  return out;
}

NodeMatch Pruner::eval(const Expr& e, uint32_t node) const {
  switch (e.kind) {
    case K::and_: {
      NodeMatch a = eval(*e.args[0], node);
      if (a == NodeMatch::none) return a;
      NodeMatch b = eval(*e.args[1], node);
      if (b == NodeMatch::none) return b;
      return (a == NodeMatch::all && b == NodeMatch::all) ? NodeMatch::all : NodeMatch::some;
    }
    case K::or_: {
      NodeMatch a = eval(*e.args[0], node);
      if (a == NodeMatch::all) return a;
      NodeMatch b = eval(*e.args[1], node);
      if (b == NodeMatch::all) return b;
      return (a == NodeMatch::none && b == NodeMatch::none) ? NodeMatch::none : NodeMatch::some;
    }
    case K::not_: {
      NodeMatch a = eval(*e.args[0], node);
      return a == NodeMatch::all ? NodeMatch::none : a == NodeMatch::none ? NodeMatch::all : NodeMatch::some;
    }
    case K::in_: {
      // None when no listed value lies in the operand's range. Rounding to double is
      // monotone, so a value v in [lo, hi] rounds into [double(lo), double(hi)], and so does
      // the literal equal to it.
      const Interval a = interval(*e.args[0], node);
      if (a.empty) return NodeMatch::none;  // NaN only: in no list
      const std::vector<double>& r = e.list->rounded;
      auto it = std::lower_bound(r.begin(), r.end(), a.lo);
      return it != r.end() && *it <= a.hi ? NodeMatch::some : NodeMatch::none;
    }
    default:
      return compare(e, node);
  }
}

NodeMatch Pruner::compare(const Expr& e, uint32_t node) const {
  int col;
  long double c;
  K kind;
  // The literal rounded to double: rounding is monotone, so the node ranges and bitmaps (of
  // the values as doubles, 64-bit integers bounded outward) still prune conservatively.
  if (is_simple_comparison(e, col, c, kind)) return simple(col, double(c), kind, node);
  Interval a = interval(*e.args[0], node), b = interval(*e.args[1], node);
  if (a.empty || b.empty) return NodeMatch::some;  // NaN-only inputs: let the exact test decide
  bool impossible = false;
  switch (e.kind) {
    case K::lt: impossible = a.lo >= b.hi; break;
    case K::le: impossible = a.lo > b.hi; break;
    case K::gt: impossible = a.hi <= b.lo; break;
    case K::ge: impossible = a.hi < b.lo; break;
    case K::eq: impossible = a.hi < b.lo || a.lo > b.hi; break;
    default: break;
  }
  return impossible ? NodeMatch::none : NodeMatch::some;
}

NodeMatch Pruner::simple(int col, double c, K kind, uint32_t node) const {
  const ColumnIndex& ci = *columns_[size_t(col)];
  uint32_t bits = ci.node_bits[node];
  if (std::isnan(c)) return kind == K::ne ? NodeMatch::all : NodeMatch::none;
  if (bits == 0) return kind == K::ne ? NodeMatch::all : NodeMatch::none;  // only NaN values here
  double lo = ci.node_min[node], hi = ci.node_max[node];
  const bool nan_free = ci.nan_count == 0;
  auto bins_between = [&](uint32_t b0, uint32_t b1) { return (b1 >= 31 ? ~0u : ((2u << b1) - 1)) & ~((1u << b0) - 1); };
  const double g0 = ci.global_min, g1 = ci.global_max;
  switch (kind) {
    case K::lt:
      if (lo >= c) return NodeMatch::none;
      if (!(bits & bins_between(0, spec::bitmap_bin(c, g0, g1)))) return NodeMatch::none;
      return hi < c && nan_free ? NodeMatch::all : NodeMatch::some;
    case K::le:
      if (lo > c) return NodeMatch::none;
      if (!(bits & bins_between(0, spec::bitmap_bin(c, g0, g1)))) return NodeMatch::none;
      return hi <= c && nan_free ? NodeMatch::all : NodeMatch::some;
    case K::gt:
      if (hi <= c) return NodeMatch::none;
      if (!(bits & bins_between(spec::bitmap_bin(c, g0, g1), 31))) return NodeMatch::none;
      return lo > c && nan_free ? NodeMatch::all : NodeMatch::some;
    case K::ge:
      if (hi < c) return NodeMatch::none;
      if (!(bits & bins_between(spec::bitmap_bin(c, g0, g1), 31))) return NodeMatch::none;
      return lo >= c && nan_free ? NodeMatch::all : NodeMatch::some;
    case K::eq: {
      if (c < lo || c > hi) return NodeMatch::none;
      uint32_t b = spec::bitmap_bin(c, g0, g1);
      if (!(bits & (1u << b))) return NodeMatch::none;
      return lo == c && hi == c && nan_free ? NodeMatch::all : NodeMatch::some;
    }
    case K::ne:
      if (c < lo || c > hi) return NodeMatch::all;  // NaN != c holds too
      return NodeMatch::some;
    default:
      return NodeMatch::some;
  }
}

Interval Pruner::interval(const Expr& e, uint32_t node) const {
  switch (e.kind) {
    case K::field:  // a field's values in a node are not indexed: anything
      return Interval::full();
    case K::number:
      return {e.value, e.value, std::isnan(e.value)};
    case K::column: {
      const ColumnIndex& ci = *columns_[size_t(e.column)];
      if (ci.node_bits[node] == 0) return {0, 0, true};
      return {ci.node_min[node], ci.node_max[node]};
    }
    case K::negate: {
      Interval a = interval(*e.args[0], node);
      return {-a.hi, -a.lo, a.empty};
    }
    case K::add:
    case K::sub:
    case K::mul:
    case K::div: {
      Interval a = interval(*e.args[0], node), b = interval(*e.args[1], node);
      if (a.empty || b.empty) return {0, 0, true};
      if (e.kind == K::add) return widen({a.lo + b.lo, a.hi + b.hi});
      if (e.kind == K::sub) return widen({a.lo - b.hi, a.hi - b.lo});
      if (e.kind == K::div) {
        if (b.lo <= 0 && b.hi >= 0) return Interval::full();
        b = {1.0 / b.hi, 1.0 / b.lo};
        b = widen(b);
      }
      double p[4] = {a.lo * b.lo, a.lo * b.hi, a.hi * b.lo, a.hi * b.hi};
      for (double v : p)
        if (std::isnan(v)) return Interval::full();
      return widen({*std::min_element(p, p + 4), *std::max_element(p, p + 4)});
    }
    case K::pow: {
      Interval a = interval(*e.args[0], node);
      const Expr& ex = *e.args[1];
      if (a.empty) return a;
      if (ex.kind != K::number || ex.value != std::floor(ex.value) || ex.value < 1 || ex.value > 64) return Interval::full();
      double n = ex.value;
      double plo = std::pow(a.lo, n), phi = std::pow(a.hi, n);
      if (std::fmod(n, 2.0) == 1.0) return widen({plo, phi});
      if (a.lo >= 0) return widen({plo, phi});
      if (a.hi <= 0) return widen({phi, plo});
      return widen({0.0, std::max(plo, phi)});
    }
    case K::call: {
      Interval a = interval(*e.args[0], node);
      if (a.empty) return a;
      return e.function->bound(a);
    }
    default:
      return Interval::full();
  }
}

}  // namespace motes
