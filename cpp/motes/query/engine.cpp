#include "motes/query/engine.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#ifdef __SSE2__
#include <emmintrin.h>
#endif
#include <mutex>

#include "motes/particles/spec.hpp"
#include "motes/core/parallel.hpp"

namespace motes {

namespace {

using K = Expr::Kind;

enum class Tri : uint8_t { none, some, all };

struct Interval {
  double lo, hi;
  bool empty = false;  // no non-NaN values
  static Interval full() { return {-INFINITY, INFINITY}; }
};

Interval widen(Interval v) {
  if (v.empty) return v;
  if (std::isnan(v.lo) || std::isnan(v.hi)) return Interval::full();
  return {std::nextafter(v.lo, -INFINITY), std::nextafter(v.hi, INFINITY)};
}

bool is_simple_comparison(const Expr& e, int& column, double& constant, K& kind) {
  if (!e.is_comparison()) return false;
  const Expr& a = *e.args[0];
  const Expr& b = *e.args[1];
  if (a.kind == K::column && b.kind == K::number) {
    column = a.column, constant = b.value, kind = e.kind;
    return true;
  }
  if (a.kind == K::number && b.kind == K::column) {
    column = b.column, constant = a.value;
    switch (e.kind) {  // c < x  ==  x > c
      case K::lt: kind = K::gt; break;
      case K::le: kind = K::ge; break;
      case K::gt: kind = K::lt; break;
      case K::ge: kind = K::le; break;
      default: kind = e.kind;
    }
    return true;
  }
  return false;
}

// Decides, per node, whether none/some/all of its subtree can match.
class Pruner {
 public:
  explicit Pruner(const std::vector<ColumnIndex>& columns) : columns_(columns) {}

  Tri eval(const Expr& e, uint32_t node) const {
    switch (e.kind) {
      case K::and_: {
        Tri a = eval(*e.args[0], node);
        if (a == Tri::none) return a;
        Tri b = eval(*e.args[1], node);
        if (b == Tri::none) return b;
        return (a == Tri::all && b == Tri::all) ? Tri::all : Tri::some;
      }
      case K::or_: {
        Tri a = eval(*e.args[0], node);
        if (a == Tri::all) return a;
        Tri b = eval(*e.args[1], node);
        if (b == Tri::all) return b;
        return (a == Tri::none && b == Tri::none) ? Tri::none : Tri::some;
      }
      case K::not_: {
        Tri a = eval(*e.args[0], node);
        return a == Tri::all ? Tri::none : a == Tri::none ? Tri::all : Tri::some;
      }
      default:
        return compare(e, node);
    }
  }

 private:
  const std::vector<ColumnIndex>& columns_;

  Tri compare(const Expr& e, uint32_t node) const {
    int col;
    double c;
    K kind;
    if (is_simple_comparison(e, col, c, kind)) return simple(col, c, kind, node);
    Interval a = interval(*e.args[0], node), b = interval(*e.args[1], node);
    if (a.empty || b.empty) return Tri::some;  // NaN-only inputs: let the exact test decide
    bool impossible = false;
    switch (e.kind) {
      case K::lt: impossible = a.lo >= b.hi; break;
      case K::le: impossible = a.lo > b.hi; break;
      case K::gt: impossible = a.hi <= b.lo; break;
      case K::ge: impossible = a.hi < b.lo; break;
      case K::eq: impossible = a.hi < b.lo || a.lo > b.hi; break;
      default: break;
    }
    return impossible ? Tri::none : Tri::some;
  }

  Tri simple(int col, double c, K kind, uint32_t node) const {
    const ColumnIndex& ci = columns_[size_t(col)];
    uint32_t bits = ci.node_bits[node];
    if (std::isnan(c)) return kind == K::ne ? Tri::all : Tri::none;
    if (bits == 0) return kind == K::ne ? Tri::all : Tri::none;  // only NaN values here
    double lo = ci.node_min[node], hi = ci.node_max[node];
    const bool nan_free = ci.nan_count == 0;
    auto bins_between = [&](uint32_t b0, uint32_t b1) { return (b1 >= 31 ? ~0u : ((2u << b1) - 1)) & ~((1u << b0) - 1); };
    const double g0 = ci.global_min, g1 = ci.global_max;
    switch (kind) {
      case K::lt:
        if (lo >= c) return Tri::none;
        if (!(bits & bins_between(0, spec::bitmap_bin(c, g0, g1)))) return Tri::none;
        return hi < c && nan_free ? Tri::all : Tri::some;
      case K::le:
        if (lo > c) return Tri::none;
        if (!(bits & bins_between(0, spec::bitmap_bin(c, g0, g1)))) return Tri::none;
        return hi <= c && nan_free ? Tri::all : Tri::some;
      case K::gt:
        if (hi <= c) return Tri::none;
        if (!(bits & bins_between(spec::bitmap_bin(c, g0, g1), 31))) return Tri::none;
        return lo > c && nan_free ? Tri::all : Tri::some;
      case K::ge:
        if (hi < c) return Tri::none;
        if (!(bits & bins_between(spec::bitmap_bin(c, g0, g1), 31))) return Tri::none;
        return lo >= c && nan_free ? Tri::all : Tri::some;
      case K::eq: {
        if (c < lo || c > hi) return Tri::none;
        uint32_t b = spec::bitmap_bin(c, g0, g1);
        if (!(bits & (1u << b))) return Tri::none;
        return lo == c && hi == c && nan_free ? Tri::all : Tri::some;
      }
      case K::ne:
        if (c < lo || c > hi) return Tri::all;  // NaN != c holds too
        return Tri::some;
      default:
        return Tri::some;
    }
  }

  Interval interval(const Expr& e, uint32_t node) const {
    switch (e.kind) {
      case K::number:
        return {e.value, e.value, std::isnan(e.value)};
      case K::column: {
        const ColumnIndex& ci = columns_[size_t(e.column)];
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
        const std::string& f = e.name;
        if (f == "abs") {
          if (a.lo >= 0) return a;
          if (a.hi <= 0) return {-a.hi, -a.lo};
          return {0.0, std::max(-a.lo, a.hi)};
        }
        if (f == "exp") return widen({std::exp(a.lo), std::exp(a.hi)});
        if (f == "sqrt" && a.lo >= 0) return widen({std::sqrt(a.lo), std::sqrt(a.hi)});
        if (f == "log" && a.lo > 0) return widen({std::log(a.lo), std::log(a.hi)});
        if (f == "log10" && a.lo > 0) return widen({std::log10(a.lo), std::log10(a.hi)});
        if (f == "sin" || f == "cos") return {-1.0, 1.0};
        return Interval::full();
      }
      default:
        return Interval::full();
    }
  }
};

// Exact, vectorised evaluation of the predicate over one run of points.
class Evaluator {
 public:
  Evaluator(const ParticleFile& f, const Expr& e) : f_(f), e_(e) {}

  // mask[i] = predicate(point start + i), for i < m. Returns how many points were read.
  void eval(uint64_t start, uint32_t m, uint8_t* mask) { eval_bool(e_, start, m, mask, 0); }

 private:
  const ParticleFile& f_;
  const Expr& e_;
  std::vector<std::vector<double>> num_;
  std::vector<std::vector<uint8_t>> bool_;
  // The quantile code of each (column, constant) compared, found once per evaluator
  // rather than once per run (a search of 257 edges).
  struct CodeOf {
    int col;
    double c;
    uint8_t code;
  };
  std::vector<CodeOf> codes_;
  uint8_t code_of(int col, double c, const ColumnIndex& ci) {
    for (const CodeOf& k : codes_)
      if (k.col == col && k.c == c) return k.code;
    codes_.push_back({col, c, spec::fine_code(c, ci.edges.data())});
    return codes_.back().code;
  }

  double* num_buffer(size_t depth, uint32_t m) {
    if (num_.size() <= depth) num_.resize(depth + 1);
    if (num_[depth].size() < m) num_[depth].resize(m);
    return num_[depth].data();
  }
  uint8_t* bool_buffer(size_t depth, uint32_t m) {
    if (bool_.size() <= depth) bool_.resize(depth + 1);
    if (bool_[depth].size() < m) bool_[depth].resize(m);
    return bool_[depth].data();
  }

  // `v OP c` for v of type T and a double c, rewritten as an exactly equivalent
  // comparison against a constant of type T (or a constant answer), so the loop
  // compares native values and vectorises.
  template <class T>
  struct NativeCmp {
    K kind;
    T c{};
    int constant = -1;  // -1: compare; 0: nothing matches; 1: everything matches
  };

  template <class T>
  static NativeCmp<T> to_native(K kind, double c) {
    if (std::isnan(c)) return {kind, T{}, kind == K::ne ? 1 : 0};
    T below, above;  // the largest T <= c and the smallest T >= c
    bool below_ok = true, above_ok = true;
    if constexpr (std::is_floating_point_v<T>) {
      T r = T(c);
      below = above = r;
      if (double(r) > c) below = std::nextafter(r, -std::numeric_limits<T>::infinity());
      if (double(r) < c) above = std::nextafter(r, std::numeric_limits<T>::infinity());
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
      case K::lt: return above_ok ? NativeCmp<T>{K::lt, above} : NativeCmp<T>{kind, T{}, 1};
      case K::le: return below_ok ? NativeCmp<T>{K::le, below} : NativeCmp<T>{kind, T{}, 0};
      case K::gt: return below_ok ? NativeCmp<T>{K::gt, below} : NativeCmp<T>{kind, T{}, 1};
      case K::ge: return above_ok ? NativeCmp<T>{K::ge, above} : NativeCmp<T>{kind, T{}, 0};
      case K::eq: return exact ? NativeCmp<T>{K::eq, below} : NativeCmp<T>{kind, T{}, 0};
      default: return exact ? NativeCmp<T>{K::ne, below} : NativeCmp<T>{kind, T{}, 1};
    }
  }

  // Bit i set when quantile code i of 64 lies in [lo, lo + span].
  static uint64_t codes_in_range(const uint8_t* codes, uint8_t lo, uint8_t span) {
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

  template <class T>
  static void compare_typed(const T* __restrict p, uint32_t m, const NativeCmp<T>& nc, uint8_t* __restrict out) {
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

  template <class F>
  static void with_cmp(K kind, F&& f) {
    switch (kind) {
      case K::lt: return f([](auto a, auto b) { return a < b; });
      case K::le: return f([](auto a, auto b) { return a <= b; });
      case K::gt: return f([](auto a, auto b) { return a > b; });
      case K::ge: return f([](auto a, auto b) { return a >= b; });
      case K::eq: return f([](auto a, auto b) { return a == b; });
      default: return f([](auto a, auto b) { return a != b; });
    }
  }

  void simple_compare(int col, double c, K kind, uint64_t start, uint32_t m, uint8_t* out, size_t depth) {
    const ColumnIndex& ci = f_.columns()[size_t(col)];
    if (ci.codes && kind != K::ne && !std::isnan(c)) {
      uint8_t code = code_of(col, c, ci);
      uint8_t lo = 0, hi = 255;
      if (kind == K::lt || kind == K::le) hi = code;
      else if (kind == K::gt || kind == K::ge) lo = code;
      else lo = hi = code;
      if (lo > 0 || hi < 255) {
        // Test exactly only the 64-point chunks whose codes admit a match.
        const uint8_t* codes = ci.codes + start;
        const uint8_t span = uint8_t(hi - lo);
        dispatch_dtype(ci.spec.dtype, [&](auto v) {
          using T = decltype(v);
          const T* p = static_cast<const T*>(ci.data) + start;
          const NativeCmp<T> nc = to_native<T>(kind, c);
          // Only points whose code admits a match are loaded and tested.
          uint32_t b = 0;
          for (; b + 64 <= m; b += 64) {
            std::memset(out + b, 0, 64);
            for (uint64_t bits = codes_in_range(codes + b, lo, span); bits; bits &= bits - 1) {
              uint32_t i = b + uint32_t(__builtin_ctzll(bits));
              compare_typed(p + i, 1, nc, out + i);
            }
          }
          if (b < m) compare_typed(p + b, m - b, nc, out + b);
        });
        return;
      }
    }
    dispatch_dtype(ci.spec.dtype, [&](auto v) {
      using T = decltype(v);
      compare_typed(static_cast<const T*>(ci.data) + start, m, to_native<T>(kind, c), out);
    });
  }

  void eval_bool(const Expr& e, uint64_t start, uint32_t m, uint8_t* out, size_t depth) {
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
      default: {
        int col;
        double c;
        K kind;
        if (is_simple_comparison(e, col, c, kind)) return simple_compare(col, c, kind, start, m, out, depth);
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

  void eval_num(const Expr& e, uint64_t start, uint32_t m, double* out, size_t depth) {
    switch (e.kind) {
      case K::number:
        std::fill(out, out + m, e.value);
        return;
      case K::column: {
        const ColumnIndex& ci = f_.columns()[size_t(e.column)];
        dispatch_dtype(ci.spec.dtype, [&](auto v) {
          using T = decltype(v);
          const T* p = static_cast<const T*>(ci.data) + start;
          for (uint32_t i = 0; i < m; ++i) out[i] = double(p[i]);
        });
        return;
      }
      case K::negate:
        eval_num(*e.args[0], start, m, out, depth + 1);
        for (uint32_t i = 0; i < m; ++i) out[i] = -out[i];
        return;
      case K::call:
        eval_num(*e.args[0], start, m, out, depth + 1);
        for (uint32_t i = 0; i < m; ++i) out[i] = apply_function(e.name, out[i]);
        return;
      default: {
        eval_num(*e.args[0], start, m, out, depth + 1);
        double* b = num_buffer(depth, m);
        if (e.args[1]->kind == K::number && e.kind == K::pow && e.args[1]->value == 2.0) {
          for (uint32_t i = 0; i < m; ++i) out[i] *= out[i];
          return;
        }
        eval_num(*e.args[1], start, m, b, depth + 1);
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
};

void push_segment(std::vector<Segment>& out, uint64_t start, uint64_t count) {
  if (!count) return;
  if (!out.empty() && out.back().start + out.back().count == start) out.back().count += count;
  else out.push_back({start, count});
}

ExprPtr box_expression(const Box& b) {
  static const char* axes[3] = {"x", "y", "z"};
  ExprPtr all;
  for (int a = 0; a < 3; ++a) {
    if (!(b.lo[a] <= b.hi[a]))
      throw UsageError(std::string("box is empty or invalid on ") + axes[a] + ": [" + number_text(b.lo[a]) + ", " +
                       number_text(b.hi[a]) + "]");
    for (int side = 0; side < 2; ++side) {
      auto cmp = std::make_unique<Expr>();
      cmp->kind = side == 0 ? K::ge : K::le;
      auto col = std::make_unique<Expr>();
      col->kind = K::column;
      col->name = axes[a];
      auto num = std::make_unique<Expr>();
      num->kind = K::number;
      num->value = side == 0 ? b.lo[a] : b.hi[a];
      cmp->args.push_back(std::move(col));
      cmp->args.push_back(std::move(num));
      if (!all) {
        all = std::move(cmp);
      } else {
        auto both = std::make_unique<Expr>();
        both->kind = K::and_;
        both->args.push_back(std::move(all));
        both->args.push_back(std::move(cmp));
        all = std::move(both);
      }
    }
  }
  return all;
}

}  // namespace

Query::Query(std::shared_ptr<const ParticleFile> file, const QuerySpec& spec) : Query(Collection::of(std::move(file)), spec) {}

Query::Query(std::shared_ptr<const Collection> collection, const QuerySpec& spec)
    : collection_(std::move(collection)),
      quality_from_(spec.quality_from),
      quality_to_(spec.quality_to),
      fraction_(spec.fraction) {
  if (spec.quality_from > spec.quality_to)
    throw UsageError("quality range is reversed: from " + number_text(spec.quality_from) + " to " +
                     number_text(spec.quality_to));
  if (fraction_) {
    if (!(*fraction_ >= 0.0 && *fraction_ <= 1.0))
      throw UsageError("fraction must be a number in [0, 1], got " + number_text(*fraction_));
    if (spec.quality_from != 0.0 || spec.quality_to != 1.0)
      throw UsageError("pass either a fraction or a quality, not both");
    quality_from_ = 0.0, quality_to_ = *fraction_ > 0.0 ? 1.0 : 0.0;
  }
  threads_ = spec.threads ? spec.threads : default_threads();
  std::vector<std::string> names;
  for (const ColumnSpec& c : collection_->schema()) names.push_back(c.name);
  if (!spec.where.empty()) predicate_ = parse_expression(spec.where);
  if (spec.box) {
    ExprPtr b = box_expression(*spec.box);
    if (predicate_) {
      auto both = std::make_unique<Expr>();
      both->kind = K::and_;
      both->args.push_back(std::move(b));  // box first: cheap and usually most selective
      both->args.push_back(std::move(predicate_));
      predicate_ = std::move(both);
    } else {
      predicate_ = std::move(b);
    }
  }
  if (predicate_) bind_columns(*predicate_, names);
}

std::vector<uint32_t> Query::parts_to_read() {
  const StepIndex* index = collection_->index();
  std::vector<uint32_t> out;
  if (quality_to_ <= 0.0 || quality_from_ >= quality_to_) return out;
  if (!index || !predicate_) {
    for (uint32_t k = 0; k < collection_->part_count(); ++k) out.push_back(k);
    return out;
  }
  const auto& nodes = index->nodes();
  Pruner pruner(index->columns());
  for (uint32_t i = 0; i < nodes.size();) {
    if (pruner.eval(*predicate_, i) == Tri::none) {
      counters_.parts_pruned += nodes[i].part_count;
      i = nodes[i].subtree_end;
      continue;
    }
    if (nodes[i].is_leaf()) out.push_back(nodes[i].first_part);
    ++i;
  }
  return out;
}

std::vector<Query::Task> Query::plan(const ParticleFile& f, QueryCounters& counters) {
  const Levels& lv = f.levels();
  const auto& nodes = f.nodes();
  uint32_t level_begin_ = levels_for_quality(quality_from_, lv.level_count());
  uint32_t level_end_ = levels_for_quality(quality_to_, lv.level_count());
  sample_ = {};
  if (fraction_ && f.particle_count() > 0) {
    // round(f * N) particles: the whole levels before level l, and k of level l's rows.
    const uint64_t want = std::min<uint64_t>(f.particle_count(), uint64_t(std::floor(*fraction_ * double(f.particle_count()) + 0.5)));
    uint32_t l = 0;
    while (l < lv.level_count() && lv.level_start[l + 1] < want) ++l;
    level_begin_ = 0;
    level_end_ = want == 0 ? 0 : l + 1;
    if (want > 0) sample_ = LevelSample(lv.level_start[l], lv.level_start[l + 1] - lv.level_start[l], want - lv.level_start[l]);
  }
  if (level_begin_ >= level_end_ || f.particle_count() == 0) return {};
  if (!predicate_) {
    // Everything matches: the selected levels are one contiguous range (a sampled level, tested).
    uint64_t b = lv.level_start[level_begin_], e = lv.level_start[level_end_];
    if (!sample_.active()) {
      counters.points_taken_whole = e - b;
      return {Task{b, e - b, true}};
    }
    std::vector<Task> out;
    if (sample_.start() > b) out.push_back({b, sample_.start() - b, true});
    counters.points_taken_whole = sample_.start() - b;
    for (uint64_t s = sample_.start(); s < e; s += kScanBlock) out.push_back({s, std::min(kScanBlock, e - s), false});
    return out;
  }
  const uint64_t range_begin = lv.level_start[level_begin_], range = lv.level_start[level_end_] - range_begin;
  auto scan_all = [&] {
    counters.scanned = true;
    counters.points_tested = range;
    counters.points_taken_whole = 0;
    std::vector<Task> blocks;
    for (uint64_t b = 0; b < range; b += kScanBlock) blocks.push_back({range_begin + b, std::min(kScanBlock, range - b), false});
    return blocks;
  };
  // Two plans, priced from the index alone before any value is read: test the points of
  // the nodes the tree cannot rule out (random access, cheap when the tree prunes well,
  // as for a tail that sits in a few regions), or scan the selected levels in order
  // (sequential; for columns with quantile codes the scan reads their 1-byte codes first).
  // Leaves sampled across the tree price the first plan before any traversal: when the
  // predicate leaves more than a quarter of their points to test (a column that does not
  // follow space), scan at once. Otherwise traverse, and stop as soon as the points to
  // test outnumber range / 8: past that the scan is cheaper.
  const uint64_t scan_above = range / 8;
  Pruner pruner(f.columns());
  {
    constexpr uint32_t kProbes = 128;
    uint64_t probed = 0, to_test = 0;
    const uint32_t nn = uint32_t(nodes.size());
    for (uint32_t k = 0, last = UINT32_MAX; k < kProbes && nn > 0; ++k) {
      uint32_t i = uint32_t(uint64_t(k) * nn / kProbes);
      while (i < nn && !nodes[i].is_leaf()) ++i;
      if (i >= nn || i == last) continue;
      last = i;
      probed += nodes[i].own_count;
      if (pruner.eval(*predicate_, i) == Tri::some) to_test += nodes[i].own_count;
    }
    if (probed >= 1024 && to_test * 4 > probed) return scan_all();
  }
  // Runs of one level are met in preorder, which is their file order, so
  // bucketing tasks by level yields them sorted by position without a sort.
  std::vector<std::vector<Task>> by_level(level_end_);
  auto take_runs = [&](uint32_t node, bool all) {
    for (uint32_t r = lv.run_begin[node]; r < lv.run_begin[node + 1]; ++r) {
      const Run& run = lv.runs[r];
      if (run.level < level_begin_ || run.level >= level_end_) continue;
      const bool whole = all && !(sample_.active() && run.start >= sample_.start());  // sampled rows are tested
      by_level[run.level].push_back({run.start, run.count, whole});
      (whole ? counters.points_taken_whole : counters.points_tested) += run.count;
    }
  };
  for (uint32_t i = 0; i < nodes.size();) {
    if (lv.subtree_count[i] == 0 || lv.depth[i] >= level_end_) {
      i = lv.subtree_end[i];
      continue;
    }
    ++counters.nodes_visited;
    Tri t = pruner.eval(*predicate_, i);
    if (t == Tri::none) {
      ++counters.nodes_pruned;
      i = lv.subtree_end[i];
    } else if (t == Tri::all) {
      ++counters.nodes_all;
      for (uint32_t k = i; k < lv.subtree_end[i]; ++k) take_runs(k, true);
      i = lv.subtree_end[i];
    } else {
      take_runs(i, false);
      ++i;
    }
    if (counters.points_tested > scan_above) return scan_all();
  }
  // The exact test decides every point either way: both plans give the same result.
  return coalesce(by_level);
}

// Concatenates the levels' tasks (each sorted, levels ascending: file order) and
// joins nearby runs that need testing into blocks: fewer, longer loops over
// contiguous memory. Points in the gaps lie inside the selected levels (one
// contiguous file range) in pruned nodes, so the exact test rejects them;
// runs taken whole are joined only with adjacent whole runs.
std::vector<Query::Task> Query::coalesce(const std::vector<std::vector<Task>>& by_level) {
  constexpr uint64_t kMaxGap = 64;
  std::vector<Task> out;
  for (const auto& level : by_level) {
    for (const Task& t : level) {
      if (!out.empty() && out.back().all == t.all) {
        Task& b = out.back();
        uint64_t end = b.start + b.count;
        if (t.all ? end == t.start : (t.start - end <= kMaxGap && t.start + t.count - b.start <= kScanBlock)) {
          b.count = t.start + t.count - b.start;
          continue;
        }
      }
      out.push_back(t);
    }
  }
  return out;
}

size_t Query::run(const Sink& sink, Schedule schedule) {
  counters_ = {};
  size_t chunks = 0;
  for (uint32_t part : parts_to_read()) {
    std::shared_ptr<const ParticleFile> file = collection_->part(part);
    file->check_unchanged();  // a file truncated under us is an error here, not SIGBUS below
    QueryCounters c;
    std::vector<Task> tasks = plan(*file, c);
    ++counters_.parts_read;
    counters_.nodes_visited += c.nodes_visited, counters_.nodes_pruned += c.nodes_pruned, counters_.nodes_all += c.nodes_all;
    counters_.points_tested += c.points_tested, counters_.points_taken_whole += c.points_taken_whole;
    counters_.scanned |= c.scanned;
    chunks += run_part(*file, part, tasks, chunks, sink, schedule);
  }
  return chunks;
}

size_t Query::run_part(const ParticleFile& file, uint32_t part, const std::vector<Task>& tasks, size_t first_chunk,
                       const Sink& sink, Schedule schedule) {
  // Chunks of about equal work; whole runs cost little per point.
  std::vector<size_t> chunk_begin{0};
  uint64_t work = 0;
  const uint64_t target = 1 << 15;
  for (size_t k = 0; k < tasks.size(); ++k) {
    work += tasks[k].all ? 64 : tasks[k].count;
    if (work >= target) {
      chunk_begin.push_back(k + 1);
      work = 0;
    }
  }
  if (chunk_begin.back() != tasks.size()) chunk_begin.push_back(tasks.size());
  size_t chunks = chunk_begin.size() - 1;
  uint32_t max_run = 1;
  for (const Task& t : tasks)
    if (!t.all) max_run = std::max<uint32_t>(max_run, uint32_t(t.count));
  const Expr* pred = predicate_.get();
  auto process = [&](unsigned worker, uint64_t c) {
    std::vector<Segment> segs;
    std::vector<uint8_t> mask(max_run);
    std::unique_ptr<Evaluator> ev = pred ? std::make_unique<Evaluator>(file, *pred) : nullptr;
    for (size_t k = chunk_begin[c]; k < chunk_begin[c + 1]; ++k) {
      const Task& t = tasks[k];
      if (t.all) {
        push_segment(segs, t.start, t.count);
        continue;
      }
      uint32_t m = uint32_t(t.count);
      if (ev) ev->eval(t.start, m, mask.data());
      else std::fill(mask.begin(), mask.begin() + m, uint8_t(1));
      sample_.apply(t.start, m, mask.data());  // rows of a partly taken level: only the sampled ones
      for (uint32_t i = 0; i < m;) {
        uint64_t word;
        if (i + 8 <= m && (std::memcpy(&word, mask.data() + i, 8), word == 0)) {
          i += 8;
          continue;
        }
        if (!mask[i]) {
          ++i;
          continue;
        }
        uint32_t j = i + 1;
        while (j < m && mask[j]) ++j;
        push_segment(segs, t.start + i, j - i);
        i = j;
      }
    }
    sink(worker, first_chunk + size_t(c), part, segs);
  };
  if (schedule == Schedule::fixed) {
    // Worker w takes chunks w, w + t, w + 2t, ... in order: per-worker partial sums
    // come out the same on every run with the same thread count.
    const uint64_t t = std::max<uint64_t>(1, std::min<uint64_t>(threads_, chunks));
    parallel_for_worker(t, unsigned(t), [&](unsigned, uint64_t w) {
      for (uint64_t c = w; c < chunks; c += t) process(unsigned(w), c);
    });
  } else {
    parallel_for_worker(chunks, threads_, process);
  }
  return chunks;
}

Selection::Selection(Query& query) : collection_(query.collection_ptr()) {
  struct Chunk {
    uint32_t part;
    std::vector<Segment> segments;
  };
  std::vector<Chunk> chunks;
  std::mutex m;
  query.run([&](unsigned, size_t chunk, uint32_t part, const std::vector<Segment>& segs) {
    std::lock_guard lock(m);
    if (chunks.size() <= chunk) chunks.resize(chunk + 1);
    chunks[chunk] = {part, segs};
  });
  size_t total = 0;
  for (const auto& c : chunks) total += c.segments.size();
  segments_.reserve(total);
  part_of_.reserve(total);
  for (const auto& c : chunks)
    for (const Segment& s : c.segments) {
      if (!part_of_.empty() && part_of_.back() == c.part && segments_.back().start + segments_.back().count == s.start) {
        segments_.back().count += s.count;
        continue;
      }
      segments_.push_back(s);
      part_of_.push_back(c.part);
    }
  offsets_.resize(segments_.size() + 1);
  offsets_[0] = 0;
  for (size_t k = 0; k < segments_.size(); ++k) offsets_[k + 1] = offsets_[k] + segments_[k].count;
}

size_t Selection::segment_of(uint64_t row) const {
  return size_t(std::upper_bound(offsets_.begin(), offsets_.end(), row) - offsets_.begin()) - 1;
}

void Selection::gather(size_t column, uint64_t row_begin, uint64_t row_end, void* dest, unsigned threads) const {
  if (row_end > size() || row_begin > row_end) throw UsageError("selection rows out of range");
  if (row_begin == row_end) return;
  if (column >= collection_->schema().size()) throw UsageError("column index out of range");
  const DType dtype = collection_->schema()[column].dtype;
  // The column's data in every part the rows touch (opened already by the query).
  std::vector<const char*> base(collection_->part_count(), nullptr);
  for (size_t k = segment_of(row_begin), k1 = segment_of(row_end - 1) + 1; k < k1; ++k)
    if (!base[part_of_[k]]) {
      auto file = collection_->part(part_of_[k]);
      file->check_unchanged();
      base[part_of_[k]] = static_cast<const char*>(file->columns()[column].data);
    }
  char* dst = static_cast<char*>(dest);
  // Copies rows [a, b) of the selection; split by rows so big segments are shared between threads.
  // Short segments (typical of filtered results) are copied element by element, not by memcpy calls.
  auto copy_rows = [&](uint64_t a, uint64_t b) {
    if (a >= b) return;
    dispatch_dtype(dtype, [&](auto tag) {
      using T = decltype(tag);
      T* to_base = reinterpret_cast<T*>(dst) - row_begin;
      for (size_t k = segment_of(a), k1 = segment_of(b - 1) + 1; k < k1; ++k) {
        const T* from_base = reinterpret_cast<const T*>(base[part_of_[k]]);
        uint64_t r0 = std::max(offsets_[k], a), r1 = std::min(offsets_[k + 1], b);
        const T* from = from_base + segments_[k].start + (r0 - offsets_[k]);
        if (r1 - r0 < 16) {
          if (k + 8 < k1 && part_of_[k + 8] == part_of_[k])
            __builtin_prefetch(from_base + segments_[k + 8].start);  // scattered rows: hide the misses
          for (uint64_t r = r0; r < r1; ++r) to_base[r] = from[r - r0];
        } else {
          std::memcpy(to_base + r0, from, (r1 - r0) * sizeof(T));
        }
      }
    });
  };
  uint64_t rows = row_end - row_begin;
  if (threads <= 1 || rows < (1u << 16)) return copy_rows(row_begin, row_end);
  uint64_t pieces = std::min<uint64_t>(uint64_t(threads) * 4, rows / (1 << 14) + 1);
  parallel_for(pieces, threads, [&](uint64_t p) {
    copy_rows(row_begin + rows * p / pieces, row_begin + rows * (p + 1) / pieces);
  });
}

void Selection::positions(uint64_t row_begin, uint64_t row_end, uint64_t* dest) const {
  if (row_end > size() || row_begin > row_end) throw UsageError("selection rows out of range");
  if (row_begin == row_end) return;
  for (size_t k = segment_of(row_begin); k < segments_.size() && offsets_[k] < row_end; ++k) {
    uint64_t r0 = std::max(offsets_[k], row_begin), r1 = std::min(offsets_[k + 1], row_end);
    uint64_t first = collection_->part_offset(part_of_[k]) + segments_[k].start;
    for (uint64_t r = r0; r < r1; ++r) dest[r - row_begin] = first + (r - offsets_[k]);
  }
}

}  // namespace motes
