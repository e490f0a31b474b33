// The planner's value-index paths: the rows of one part file found through an index on
// values rather than through the tree: the id index for `id in (...)`, a column's tail
// index for a threshold in its tail (`energy > t`, `v <= t`, `v == t`). Chosen from counts
// known before any value is read (the in-list's length; the tail's block fences).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "motes/particles/reader.hpp"
#include "motes/expr/expr.hpp"

namespace motes {

struct IndexedRows {
  enum class Index { id, tail } index;
  std::vector<uint64_t> rows;  // file positions, ascending, distinct (empty with a cover: its rows)
  // The predicate is the indexed test itself, so the rows need no test; otherwise they are
  // candidates for the whole predicate (a conjunct of which the index answered).
  bool exact = false;
  // An exact tail answer whose rows the tail's cover holds (particles/tail_cover.hpp): the
  // columns it covers are read from beside the index rather than gathered at the rows.
  std::shared_ptr<const TailHits> cover;
  const std::vector<uint64_t>& positions() const { return cover ? cover->rows : rows; }
};

// Whether `predicate` is one test that a tail index of `file` answers from its cover (from
// the fences: no read): its rows and every covered column then cost a few contiguous runs,
// which no traversal of the tree beats.
bool covered_by_tail(const ParticleFile& file, const Expr& predicate);

// When `predicate` is one test that an index of `file` answers exactly (a tail threshold, an
// id list): how many rows pass it, found without reading or sorting their positions where
// the index allows (a tail: the passing entries' bounds). Nothing otherwise.
struct IndexedCount {
  IndexedRows::Index index;
  uint64_t count;
};
std::optional<IndexedCount> indexed_count(const ParticleFile& file, const Expr& predicate);

// A conjunction answered from a tail's cover: one conjunct a tail index of `file` answers
// from its cover (energy > t), every other a comparison of a column with a constant
// (a box: x >= a and x < b ...) whose column that cover holds. The tail's rows are tested
// on the cover's values (a few contiguous runs; no read of the file's columns, no tree),
// and those passing are the exact answer, as covered hits. Nothing when the predicate is
// not of that form, or when `worth` says the cover's cost is too high (priced before any
// row or value of the cover is read).
struct CoveredConjunction {
  uint64_t rows = 0;   // the tail's rows, before the other tests (from its fences: no read)
  uint64_t bytes = 0;  // bytes of the cover read: the rows and each tested column at them
};
std::optional<IndexedRows> covered_conjunction(const ParticleFile& file, const Expr& predicate,
                                               const std::function<bool(const CoveredConjunction&)>& worth);

// Of the top-level conjuncts of `predicate` that an index of `file` answers, the one with
// the fewest candidate rows, when those are at most `limit`: its rows. Nothing otherwise.
std::optional<IndexedRows> indexed_rows(const ParticleFile& file, const Expr& predicate, uint64_t limit);

}  // namespace motes
