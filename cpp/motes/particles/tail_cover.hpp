// Covering tail indexes (format 2.3, docs/format.md §4.17): beside a column's tail index,
// the values of other columns at the rows of the tail's outermost entries, in entry order,
// so that a tail query reads each column it returns as one contiguous run of the cover
// instead of gathering it at rows scattered over the file. The writer builds the cover
// (cover_tail); the reader opens it from its head section (decode_tail_cover) and the tail
// index serves it (TailIndex::covering, TailHits::gather).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "motes/core/types.hpp"
#include "motes/particles/tail_index.hpp"

namespace motes {

// Covers tail `t` (entries and their rows from TailCollector::finish): the outermost
// ceil(fraction * particle_count) entries of each side (at most the side), with the values of
// `columns[c]` for each c in `covered` (not the tail's own column), read at the input row
// order[position] of each entry's position and coded in blocks of kIdBlockValues. Nothing
// when fraction is 0 or `covered` holds no other column.
void cover_tail(TailIndexSections& t, const std::vector<ColumnView>& columns, const std::vector<int>& covered,
                const uint64_t* order, uint64_t particle_count, double fraction, int zstd_level, unsigned threads);

// The cover section (kind 17) of a tail: its counts and the table indexes of its kind-16 sections.
struct TailCoverHead {
  uint64_t low = 0, high = 0;         // entries covered on each side
  std::vector<uint32_t> sections;     // table indexes of the covered columns' sections
};
std::string encode_tail_cover(const TailCoverHead& head);
// The head's fields, or what is wrong with its bytes (then `problem` is not empty).
TailCoverHead decode_tail_cover(const std::string& bytes, std::string& problem);

}  // namespace motes
