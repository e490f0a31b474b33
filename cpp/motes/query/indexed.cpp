#include "motes/query/indexed.hpp"

#include <algorithm>
#include <cstring>
#include <memory>

#include "motes/query/derive.hpp"
#include "motes/query/native.hpp"
#include "motes/query/prune.hpp"

namespace motes {

namespace {

using K = Expr::Kind;

void conjuncts(const Expr& e, std::vector<const Expr*>& out) {
  if (e.kind == K::and_) {
    conjuncts(*e.args[0], out);
    conjuncts(*e.args[1], out);
  } else {
    out.push_back(&e);
  }
}

// `expr op c` or `c op expr` where expr is a derived quantity of the file (query/derive.hpp):
// its tail's slot (columns + d), the constant and the test as `expr op c`. The constant is
// the literal rounded to float64, as the evaluator compares any expression but a column.
bool derived_comparison(const ParticleFile& f, const Expr& e, int& slot, long double& c, K& kind) {
  if (!e.is_comparison() || f.derived().empty()) return false;
  const bool left = e.args[1]->kind == K::number;
  if (!left && e.args[0]->kind != K::number) return false;
  const int d = derived_of(f, *e.args[left ? 0 : 1]);
  if (d < 0) return false;
  slot = int(f.schema().size()) + d;
  c = e.args[left ? 1 : 0]->value;  // as the evaluator compares an expression: in float64
  kind = left ? e.kind : mirrored(e.kind);
  return true;
}

// A conjunct an index answers, with its count of candidate rows (an upper bound).
struct Candidate {
  const Expr* e;
  uint64_t count;
  IndexedRows::Index index;
  int column;
  TailTest test;
  uint64_t constant;  // the tail test's constant, in the column's dtype (bytes)
  bool none;          // nothing can pass (a constant the column's type cannot reach)
  bool covered = false;  // a tail's cover holds every candidate (TailIndex::cover_holds)
};

std::optional<Candidate> answer(const ParticleFile& f, const Expr& e) {
  if (e.kind == K::in_ && e.args[0]->kind == K::column) {
    const IdIndex* ids = f.id_index();
    if (!ids || int(ids->column()) != e.args[0]->column) return std::nullopt;
    return Candidate{&e, e.list->values.size(), IndexedRows::Index::id, e.args[0]->column, TailTest::eq, 0, false};
  }
  int col;
  long double c;
  K kind;
  if (!is_simple_comparison(e, col, c, kind) && !derived_comparison(f, e, col, c, kind)) return std::nullopt;
  if (kind == K::ne) return std::nullopt;
  const TailIndex* tail = f.tail_index(size_t(col));
  if (!tail) return std::nullopt;
  const DType dtype = size_t(col) < f.schema().size() ? f.schema()[size_t(col)].dtype : DType::f64;
  return dispatch_dtype(dtype, [&](auto zero) -> std::optional<Candidate> {
    using T = decltype(zero);
    const NativeCmp<T> nc = to_native<T>(kind, c);
    TailTest test;
    switch (nc.kind) {
      case K::lt: test = TailTest::lt; break;
      case K::le: test = TailTest::le; break;
      case K::gt: test = TailTest::gt; break;
      case K::ge: test = TailTest::ge; break;
      default: test = TailTest::eq; break;
    }
    uint64_t bytes = 0;
    std::memcpy(&bytes, &nc.c, sizeof(T));
    if (nc.constant == 0) return Candidate{&e, 0, IndexedRows::Index::tail, col, test, bytes, true};
    if (nc.constant == 1) return std::nullopt;
    const std::optional<uint64_t> count = tail->covers(test, &nc.c);
    if (!count) return std::nullopt;
    return Candidate{&e, *count, IndexedRows::Index::tail, col, test, bytes, false, tail->cover_holds(test, &nc.c)};
  });
}

// The covered tail conjunct of a conjunction and its other conjuncts, each a comparison of
// a column the cover holds with a constant; nothing when the predicate is not so.
struct CoverPlan {
  Candidate tail;
  uint64_t begin = 0, end = 0;  // the tail's passing entries
  struct Test {
    int column;
    long double c;
    K kind;
  };
  std::vector<Test> tests;
};

std::optional<CoverPlan> cover_plan(const ParticleFile& f, const Expr& predicate) {
  if (predicate.kind != K::and_) return std::nullopt;
  std::vector<const Expr*> parts;
  conjuncts(predicate, parts);
  // The tail conjunct (of a stored column: a derived tail is left to the tree) with the fewest
  // candidates; its passing entries, which its cover must hold (cover_holds is conservative,
  // by blocks of the fences: the entries themselves decide).
  std::optional<Candidate> best;
  for (const Expr* e : parts)
    if (std::optional<Candidate> c = answer(f, *e); c && c->index == IndexedRows::Index::tail && !c->none &&
                                                    size_t(c->column) < f.schema().size() && (!best || c->count < best->count))
      best = c;
  if (!best) return std::nullopt;
  CoverPlan plan{*best};
  const TailIndex* tail = f.tail_index(size_t(best->column));
  std::tie(plan.begin, plan.end) = tail->passing(best->test, &best->constant);
  uint64_t at = 0;
  if (!tail->covering(uint32_t(best->column), plan.begin, plan.end, at)) return std::nullopt;
  for (const Expr* e : parts) {
    if (e == best->e) continue;
    CoverPlan::Test t;
    if (!is_simple_comparison(*e, t.column, t.c, t.kind) ||
        !tail->covering(uint32_t(t.column), plan.begin, plan.end, at))
      return std::nullopt;
    plan.tests.push_back(t);
  }
  return plan;
}

}  // namespace

std::optional<IndexedRows> covered_conjunction(const ParticleFile& f, const Expr& predicate,
                                               const std::function<bool(const CoveredConjunction&)>& worth) {
  const std::optional<CoverPlan> plan = cover_plan(f, predicate);
  if (!plan) return std::nullopt;
  CoveredConjunction cost;
  cost.rows = plan->end - plan->begin;
  uint64_t per_row = f.particle_count() > UINT32_MAX ? 8 : 4;  // the tail's rows
  for (const CoverPlan::Test& t : plan->tests) per_row += dtype_size(f.schema()[size_t(t.column)].dtype);
  cost.bytes = cost.rows * per_row;
  if (!worth(cost)) return std::nullopt;
  const TailIndex* tail = f.tail_index(size_t(plan->tail.column));
  TailHits hits = tail->hits(plan->tail.test, &plan->tail.constant, true);
  if (!hits.covered()) return std::nullopt;
  const size_t n = hits.rows.size();
  std::vector<uint8_t> keep(n, 1), pass(n);
  std::unique_ptr<uint64_t[]> values(new uint64_t[std::max<size_t>(n, 1)]);  // aligned for every dtype
  for (const CoverPlan::Test& t : plan->tests) {
    hits.gather(uint32_t(t.column), 0, n, values.get());
    dispatch_dtype(f.schema()[size_t(t.column)].dtype, [&](auto zero) {
      using T = decltype(zero);
      compare_typed(reinterpret_cast<const T*>(values.get()), uint32_t(n), to_native<T>(t.kind, t.c), pass.data());
    });
    for (size_t i = 0; i < n; ++i) keep[i] &= pass[i];
  }
  auto sub = std::make_shared<TailHits>();
  sub->tail = hits.tail, sub->begin = hits.begin, sub->end = hits.end;
  for (size_t i = 0; i < n; ++i)
    if (keep[i]) sub->rows.push_back(hits.rows[i]), sub->order.push_back(hits.order[i]);
  IndexedRows out{IndexedRows::Index::tail, {}, true};
  if (sub->rows.empty()) return out;  // nothing passes: no rows, no cover to read
  out.cover = std::move(sub);
  return out;
}

bool covered_by_tail(const ParticleFile& f, const Expr& predicate) {
  if (predicate.kind == K::and_) return false;
  const std::optional<Candidate> c = answer(f, predicate);
  return c && c->index == IndexedRows::Index::tail && c->covered;
}

std::optional<IndexedCount> indexed_count(const ParticleFile& f, const Expr& predicate) {
  if (predicate.kind == K::and_) return std::nullopt;
  const std::optional<Candidate> c = answer(f, predicate);
  if (!c) return std::nullopt;
  if (c->none) return IndexedCount{c->index, 0};
  if (c->index == IndexedRows::Index::tail) {
    const auto [begin, end] = f.tail_index(size_t(c->column))->passing(c->test, &c->constant);
    return IndexedCount{c->index, end - begin};
  }
  return IndexedCount{c->index, indexed_rows(f, predicate, UINT64_MAX)->rows.size()};
}

std::optional<IndexedRows> indexed_rows(const ParticleFile& f, const Expr& predicate, uint64_t limit) {
  std::vector<const Expr*> parts;
  conjuncts(predicate, parts);
  std::optional<Candidate> best;
  for (const Expr* e : parts)
    if (std::optional<Candidate> c = answer(f, *e); c && (!best || c->count < best->count)) best = c;
  if (!best || best->count > limit) return std::nullopt;
  IndexedRows out{best->index, {}, parts.size() == 1};
  if (best->none) return out;
  if (best->index == IndexedRows::Index::tail) {
    TailHits hits = f.tail_index(size_t(best->column))->hits(best->test, &best->constant, out.exact);
    if (hits.covered()) {
      out.cover = std::make_shared<const TailHits>(std::move(hits));
    } else {
      out.rows = std::move(hits.rows);
    }
    return out;
  }
  // The listed ids the column's type can hold, as the index's keys.
  const DType dtype = f.schema()[size_t(best->column)].dtype;
  std::vector<uint64_t> keys;
  dispatch_dtype(dtype, [&](auto zero) {
    using T = decltype(zero);
    if constexpr (std::is_integral_v<T> && sizeof(T) >= 4) {
      for (T v : native_list<T>(*best->e->list)) keys.push_back(id_key(dtype, &v));
    }
  });
  std::sort(keys.begin(), keys.end());  // signed keys reorder nothing, but be sure
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  out.rows = f.id_index()->positions(keys.data(), keys.size());
  return out;
}

}  // namespace motes
