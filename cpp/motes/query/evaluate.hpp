// Exact, vectorised evaluation of a predicate (or of a numeric expression) over runs of
// points of one particle file: values are read through a BlockReader (in place, or decoded
// blocks), comparisons are made in the column's own type, and columns with quantile codes
// test only the points whose codes admit a match.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "motes/container/block_stream.hpp"
#include "motes/particles/reader.hpp"
#include "motes/expr/expr.hpp"
#include "motes/query/native.hpp"
#include "motes/expr/numeric.hpp"

namespace motes {

class Evaluator {
 public:
  Evaluator(const ParticleFile& f, const Expr& e);
  // mask[i] = predicate(point start + i), for i < m.
  void eval(uint64_t start, uint32_t m, uint8_t* mask) { eval_bool(e_, start, m, mask, 0); }
  // out[i] = value of point start + i of a numeric expression (as float64), for i < m.
  void values(uint64_t start, uint32_t m, double* out) { eval_num(e_, start, m, out, 0); }

 private:
  const ParticleFile& f_;
  const Expr& e_;
  BlockReader reader_;
  NumericRuns numeric_;  // the arithmetic, shared with derived quantities (query/numeric.hpp)
  std::vector<std::vector<uint8_t>> bool_;
  // The quantile code of each (column, constant) compared, found once per evaluator
  // rather than once per run (a search of 257 edges).
  struct CodeOf {
    int col;
    double c;
    uint8_t code;
  };
  std::vector<CodeOf> codes_;
  // The in-lists' values in their operand's type (query/native.hpp), made once per evaluator.
  struct Lists {
    std::vector<std::pair<const Expr*, std::shared_ptr<void>>> made;
    template <class T>
    const std::vector<T>& get(const Expr& e) {
      for (auto& [at, list] : made)
        if (at == &e) return *static_cast<std::vector<T>*>(list.get());
      auto list = std::make_shared<std::vector<T>>(native_list<T>(*e.list));
      made.emplace_back(&e, list);
      return *list;
    }
  } lists_;
  uint8_t code_of(int col, double c);

  double* num_buffer(size_t depth, uint32_t m);
  uint8_t* bool_buffer(size_t depth, uint32_t m);
  void simple_compare(int col, long double c, Expr::Kind kind, uint64_t start, uint32_t m, uint8_t* out);
  void eval_bool(const Expr& e, uint64_t start, uint32_t m, uint8_t* out, size_t depth);
  void eval_num(const Expr& e, uint64_t start, uint32_t m, double* out, size_t depth);
  void eval_in(const Expr& e, uint64_t start, uint32_t m, uint8_t* out, size_t depth);
};

}  // namespace motes
