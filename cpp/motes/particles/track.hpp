// Finding particles by id in a particle file or a species' part files: through the file's
// id index (particles/id_index.hpp) when it has one on the column, else by reading the id
// column whole (files written before format 2.1, or without an index), with the same answers.
// Used by Dataset.track (Python) and motes_track (the C API).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "motes/particles/collection.hpp"
#include "motes/particles/reader.hpp"

namespace motes {

// For each of n keys (id_key of the ids, any order, repeats allowed), its file position in
// `f`, or -1. FormatError naming the id when the file holds it twice.
std::vector<int64_t> find_rows(const ParticleFile& f, size_t column, const uint64_t* keys, size_t n);

// In-situ tracking of one column: for each of n ids (int64: the value, or a uint64 id's bits)
// in the species' parts, the value of `column` as a double in out[i] and found[i] = 1, or
// found[i] = 0 and out[i] = NaN. `id_column` empty: the parts' id index column, else "id".
// FormatError when an id is held twice (in one part or two).
void track_column(const Collection& c, const std::string& id_column, const int64_t* ids, size_t n,
                  const std::string& column, double* out, uint8_t* found);

}  // namespace motes
