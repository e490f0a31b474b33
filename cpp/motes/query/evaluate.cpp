#include "motes/query/evaluate.hpp"

#include <limits>

#include "motes/fields/sample.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "motes/particles/spec.hpp"
#include "motes/query/native.hpp"
#include "motes/query/prune.hpp"

namespace motes {

namespace {

using K = Expr::Kind;

// Bit i set when quantile code i of 64 lies in [lo, lo + span].
uint64_t codes_in_range(const uint8_t* codes, uint8_t lo, uint8_t span) {
#ifdef __SSE2__
  const __m128i vlo = _mm_set1_epi8(char(lo)), vspan = _mm_set1_epi8(char(span));
  uint64_t bits = 0;
  for (int k = 0; k < 4; ++k) {
    __m128i x = _mm_sub_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(codes + 16 * k)), vlo);
    __m128i in = _mm_cmpeq_epi8(_mm_min_epu8(x, vspan), x);  // unsigned x <= span
    bits |= uint64_t(uint32_t(_mm_movemask_epi8(in))) << (16 * k);
  }
  return bits;
#else
  uint64_t bits = 0;
  for (uint32_t i = 0; i < 64; ++i) bits |= uint64_t(uint8_t(codes[i] - lo) <= span) << i;
  return bits;
#endif
}

template <class F>
void with_cmp(K kind, F&& f) {
  switch (kind) {
    case K::lt: return f([](auto a, auto b) { return a < b; });
    case K::le: return f([](auto a, auto b) { return a <= b; });
    case K::gt: return f([](auto a, auto b) { return a > b; });
    case K::ge: return f([](auto a, auto b) { return a >= b; });
    case K::eq: return f([](auto a, auto b) { return a == b; });
    default: return f([](auto a, auto b) { return a != b; });
  }
}


}  // namespace

Evaluator::Evaluator(const ParticleFile& f, const Expr& e) : f_(f), e_(e) {}

uint8_t Evaluator::code_of(int col, double c) {
  for (const CodeOf& k : codes_)
    if (k.col == col && k.c == c) return k.code;
  codes_.push_back({col, c, spec::quantile_code(c, f_.index(size_t(col)).edges.data())});
  return codes_.back().code;
}

double* Evaluator::num_buffer(size_t depth, uint32_t m) { return numeric_.buffer(depth, m); }

uint8_t* Evaluator::bool_buffer(size_t depth, uint32_t m) {
  if (bool_.size() <= depth) bool_.resize(depth + 1);
  if (bool_[depth].size() < m) bool_[depth].resize(m);
  return bool_[depth].data();
}

void Evaluator::simple_compare(int col, long double c, K kind, uint64_t start, uint32_t m, uint8_t* out) {
  const DType dtype = f_.schema()[size_t(col)].dtype;
  const BlockStream& values = f_.values(size_t(col));
  if (const BlockStream* codes_stream = f_.codes(size_t(col)); codes_stream && kind != K::ne && !std::isnan(c)) {
    uint8_t code = code_of(col, double(c));  // rounding is monotone: the codes stay conservative
    uint8_t lo = 0, hi = 255;
    if (kind == K::lt || kind == K::le) hi = code;
    else if (kind == K::gt || kind == K::ge) lo = code;
    else lo = hi = code;
    if (lo > 0 || hi < 255) {
      // Test exactly only the points whose codes admit a match; read values only when some do.
      const uint8_t* codes = reader_.values<uint8_t>(*codes_stream, start, m);
      const uint8_t span = uint8_t(hi - lo);
      thread_local std::vector<uint64_t> words;
      words.assign((m + 63) / 64, 0);
      uint64_t any = 0;
      uint32_t b = 0;
      for (; b + 64 <= m; b += 64) any |= words[b / 64] = codes_in_range(codes + b, lo, span);
      for (uint32_t i = b; i < m; ++i)
        if (uint8_t(codes[i] - lo) <= span) words[b / 64] |= uint64_t(1) << (i - b), any = 1;
      std::memset(out, 0, m);
      if (!any) return;
      dispatch_dtype(dtype, [&](auto v) {
        using T = decltype(v);
        const T* p = reader_.values<T>(values, start, m);
        const NativeCmp<T> nc = to_native<T>(kind, c);
        for (uint32_t w = 0; w < words.size(); ++w)
          for (uint64_t bits = words[w]; bits; bits &= bits - 1) {
            uint32_t k = w * 64 + uint32_t(__builtin_ctzll(bits));
            compare_typed(p + k, 1, nc, out + k);
          }
      });
      return;
    }
  }
  dispatch_dtype(dtype, [&](auto v) {
    using T = decltype(v);
    compare_typed(reader_.values<T>(values, start, m), m, to_native<T>(kind, c), out);
  });
}

void Evaluator::eval_bool(const Expr& e, uint64_t start, uint32_t m, uint8_t* out, size_t depth) {
  switch (e.kind) {
    case K::and_:
    case K::or_: {
      eval_bool(*e.args[0], start, m, out, depth + 1);
      uint8_t any = 0, all = 1;
      for (uint32_t i = 0; i < m; ++i) any |= out[i], all &= out[i];
      if (e.kind == K::and_ ? !any : all) return;  // short circuit
      uint8_t* rhs = bool_buffer(depth, m);
      eval_bool(*e.args[1], start, m, rhs, depth + 1);
      if (e.kind == K::and_)
        for (uint32_t i = 0; i < m; ++i) out[i] &= rhs[i];
      else
        for (uint32_t i = 0; i < m; ++i) out[i] |= rhs[i];
      return;
    }
    case K::not_:
      eval_bool(*e.args[0], start, m, out, depth + 1);
      for (uint32_t i = 0; i < m; ++i) out[i] ^= 1;
      return;
    case K::in_:
      return eval_in(e, start, m, out, depth);
    default: {
      int col;
      long double c;
      K kind;
      if (is_simple_comparison(e, col, c, kind)) return simple_compare(col, c, kind, start, m, out);
      double* a = num_buffer(2 * depth, m);
      double* b = num_buffer(2 * depth + 1, m);
      eval_num(*e.args[0], start, m, a, 2 * depth + 2);
      eval_num(*e.args[1], start, m, b, 2 * depth + 2);
      with_cmp(e.kind, [&](auto cmp) {
        for (uint32_t i = 0; i < m; ++i) out[i] = cmp(a[i], b[i]);
      });
    }
  }
}

void Evaluator::eval_num(const Expr& e, uint64_t start, uint32_t m, double* out, size_t depth) {
  numeric_.eval(e, m, out, depth,
                [&](const Expr& c, double* values) { column_doubles(f_, reader_, size_t(c.column), start, m, values); });
}

// `x in (...)`: a column compared in its own type with the list's exact values; any other
// operand as doubles. A binary search per value (NaN is in no list).
void Evaluator::eval_in(const Expr& e, uint64_t start, uint32_t m, uint8_t* out, size_t depth) {
  const Expr& a = *e.args[0];
  auto member = [&](const auto* p, const auto& list) {
    for (uint32_t i = 0; i < m; ++i) {
      auto it = std::lower_bound(list.begin(), list.end(), p[i]);
      out[i] = it != list.end() && *it == p[i];
    }
  };
  const DType dtype = a.kind == K::column ? f_.schema()[size_t(a.column)].dtype : DType::f64;
  dispatch_dtype(dtype, [&](auto v) {
    using T = decltype(v);
    const std::vector<T>& list = lists_.get<T>(e);
    if (a.kind == K::column) return member(reader_.values<T>(f_.values(size_t(a.column)), start, m), list);
    double* x = num_buffer(2 * depth, m);
    eval_num(a, start, m, x, 2 * depth + 2);
    member(x, list);
  });
}

}  // namespace motes
