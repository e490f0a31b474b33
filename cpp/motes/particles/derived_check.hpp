// The check of a file's derived quantities (format 2.4, particles/derived.hpp): each one
// computed again from the stored columns with the writer's arithmetic (expr/derive.hpp) and
// compared with its statistics and its tail index. Part of ParticleFile::verify_data.
#pragma once

#include "motes/particles/reader.hpp"

namespace motes {

// Recomputes every derived quantity of `file` from its columns and checks its statistics and
// its tail index (entries bit for bit, counts, covers); FormatError naming what is wrong.
void verify_derived(const ParticleFile& file);

}  // namespace motes
