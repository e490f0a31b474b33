// The arithmetic of numeric expressions over runs of m points, in float64: one code path for
// queries (Evaluator, query/evaluate.hpp) and for the derived quantities the writer indexes
// (expr/derive.hpp), so that both compute the same bits from the same values and expression.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "motes/expr/expr.hpp"

namespace motes {

class NumericRuns {
 public:
  // A scratch run of m doubles for recursion depth `depth` (the evaluators' one numbering).
  double* buffer(size_t depth, uint32_t m) {
    if (num_.size() <= depth) num_.resize(depth + 1);
    if (num_[depth].size() < m) num_[depth].resize(m);
    return num_[depth].data();
  }

  // out[i] = value of numeric expression `e` at point i < m; column(c, out) gives column node
  // c's m values as float64.
  template <class Column>
  void eval(const Expr& e, uint32_t m, double* out, size_t depth, const Column& column) {
    using K = Expr::Kind;
    switch (e.kind) {
      case K::number:
        std::fill(out, out + m, e.value);
        return;
      case K::column:
        column(e, out);
        return;
      case K::negate:
        eval(*e.args[0], m, out, depth + 1, column);
        for (uint32_t i = 0; i < m; ++i) out[i] = -out[i];
        return;
      case K::call:
        eval(*e.args[0], m, out, depth + 1, column);
        e.function->eval(out, m);
        return;
      case K::field: {  // sampled at the points' positions (NaN outside the grid)
        double* x = buffer(2 * depth, m);
        double* y = buffer(2 * depth + 1, m);
        eval(*e.args[0], m, x, depth + 1, column);
        eval(*e.args[1], m, y, depth + 1, column);
        eval(*e.args[2], m, out, depth + 1, column);
        e.sampler->sample(x, y, out, m, std::numeric_limits<double>::quiet_NaN(), out, 1);
        return;
      }
      default: {
        eval(*e.args[0], m, out, depth + 1, column);
        double* b = buffer(depth, m);
        if (e.args[1]->kind == K::number && e.kind == K::pow && e.args[1]->value == 2.0) {
          for (uint32_t i = 0; i < m; ++i) out[i] *= out[i];
          return;
        }
        eval(*e.args[1], m, b, depth + 1, column);
        switch (e.kind) {
          case K::add: for (uint32_t i = 0; i < m; ++i) out[i] += b[i]; break;
          case K::sub: for (uint32_t i = 0; i < m; ++i) out[i] -= b[i]; break;
          case K::mul: for (uint32_t i = 0; i < m; ++i) out[i] *= b[i]; break;
          case K::div: for (uint32_t i = 0; i < m; ++i) out[i] /= b[i]; break;
          case K::pow: for (uint32_t i = 0; i < m; ++i) out[i] = std::pow(out[i], b[i]); break;
          default: break;
        }
      }
    }
  }

 private:
  std::vector<std::vector<double>> num_;
};

}  // namespace motes
