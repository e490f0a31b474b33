// Comparisons in a column's own type: `v OP c` for a double constant c, and `v in (...)`
// for an in-list, rewritten as exactly equivalent tests against constants of the column's
// type, so loops compare native values and vectorise (query/evaluate.cpp), and indexes
// sorted in that type can be searched (query/indexed.cpp).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "motes/expr/expr.hpp"

namespace motes {

// `v OP c` for v of type T and a literal c (exact: long double holds every 64-bit
// integer and every double), rewritten as an exactly equivalent comparison against a
// constant of type T (or a constant answer), so the loop compares native values and
// vectorises.
template <class T>
struct NativeCmp {
  Expr::Kind kind;
  T c{};
  int constant = -1;  // -1: compare; 0: nothing matches; 1: everything matches
};

template <class T>
NativeCmp<T> to_native(Expr::Kind kind, long double c) {
  if (std::isnan(c)) return {kind, T{}, kind == Expr::Kind::ne ? 1 : 0};
  T below, above;  // the largest T <= c and the smallest T >= c
  bool below_ok = true, above_ok = true;
  if constexpr (std::is_floating_point_v<T>) {
    T r = T(c);
    below = above = r;
    if ((long double)r > c) below = std::nextafter(r, -std::numeric_limits<T>::infinity());
    if ((long double)r < c) above = std::nextafter(r, std::numeric_limits<T>::infinity());
  } else {
    using L = std::numeric_limits<T>;
    long double f = std::floor((long double)c), u = std::ceil((long double)c);
    below_ok = f >= (long double)L::min();  // otherwise no T is <= c
    above_ok = u <= (long double)L::max();  // otherwise no T is >= c
    below = f > (long double)L::max() ? L::max() : below_ok ? T(f) : L::min();
    above = u < (long double)L::min() ? L::min() : above_ok ? T(u) : L::max();
  }
  bool exact = below_ok && above_ok && below == above;
  switch (kind) {
    case Expr::Kind::lt: return above_ok ? NativeCmp<T>{Expr::Kind::lt, above} : NativeCmp<T>{kind, T{}, 1};
    case Expr::Kind::le: return below_ok ? NativeCmp<T>{Expr::Kind::le, below} : NativeCmp<T>{kind, T{}, 0};
    case Expr::Kind::gt: return below_ok ? NativeCmp<T>{Expr::Kind::gt, below} : NativeCmp<T>{kind, T{}, 1};
    case Expr::Kind::ge: return above_ok ? NativeCmp<T>{Expr::Kind::ge, above} : NativeCmp<T>{kind, T{}, 0};
    case Expr::Kind::eq: return exact ? NativeCmp<T>{Expr::Kind::eq, below} : NativeCmp<T>{kind, T{}, 0};
    default: return exact ? NativeCmp<T>{Expr::Kind::ne, below} : NativeCmp<T>{kind, T{}, 1};
  }
}

// out[i] = p[i] OP c for a comparison made native (to_native): a loop that vectorises.
template <class T>
void compare_typed(const T* __restrict p, uint32_t m, const NativeCmp<T>& nc, uint8_t* __restrict out) {
  using K = Expr::Kind;
  if (nc.constant >= 0) {
    std::memset(out, nc.constant, m);
    return;
  }
  const T c = nc.c;
  switch (nc.kind) {
    case K::lt: for (uint32_t i = 0; i < m; ++i) out[i] = p[i] < c; break;
    case K::le: for (uint32_t i = 0; i < m; ++i) out[i] = p[i] <= c; break;
    case K::gt: for (uint32_t i = 0; i < m; ++i) out[i] = p[i] > c; break;
    case K::ge: for (uint32_t i = 0; i < m; ++i) out[i] = p[i] >= c; break;
    case K::eq: for (uint32_t i = 0; i < m; ++i) out[i] = p[i] == c; break;
    default: for (uint32_t i = 0; i < m; ++i) out[i] = p[i] != c; break;
  }
}

// The values of an in-list that a T can hold exactly, ascending and distinct (the others
// can equal no value of the column).
template <class T>
std::vector<T> native_list(const InList& list) {
  std::vector<T> out;
  for (long double v : list.values) {
    if constexpr (std::is_floating_point_v<T>) {
      if ((long double)T(v) == v) out.push_back(T(v));
    } else {
      if (v == std::floor(v) && v >= (long double)std::numeric_limits<T>::min() && v <= (long double)std::numeric_limits<T>::max())
        out.push_back(T(v));
    }
  }
  return out;  // the list is sorted and distinct, and so are its exact images
}

}  // namespace motes
