// The messages ranks exchange in a parallel write or read, as byte buffers. No MPI
// here: comm.hpp moves the bytes, this module encodes and decodes them, so every
// message is tested without MPI (tests/cpp/parallel/test_wire.cpp).
//
// A message is [tag: 1 byte][payload length: u32][payload][XXH3-64 of all bytes before: u64];
// numbers are little-endian, strings and arrays are prefixed by their u32 length.
// Decoding checks the tag, the length, the checksum, every count against the bytes
// left, every code (dtype, index kind, error kind) and that nothing is left over, and
// throws InternalError naming the message otherwise: the ranks of one job run the
// same code, so a bad message is a bug or corrupted memory, never user input.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "motes/core/types.hpp"
#include "motes/parallel/aggregation.hpp"
#include "motes/particles/step_index.hpp"

namespace motes::wire {

// A failure on one rank, carried to all of them (parallel/agree.hpp): its kind, errno
// and message (core/errors.hpp).
std::string encode(const ErrorReport& f);
ErrorReport decode_failure(std::string_view bytes);

// The step a rank writes: ranks must agree on all of it before anything is written.
struct Step {
  int64_t index = 0;
  double time = 0;         // compared by its bits
  std::string attributes;  // JSON text
  bool operator==(const Step&) const = default;
};
std::string encode(const Step& s);
Step decode_step(std::string_view bytes);

// The species and columns a rank writes, in its order.
struct SchemaColumn {
  std::string name;
  DType dtype = DType::f32;
  bool operator==(const SchemaColumn&) const = default;
};
struct SpeciesSchema {
  std::string name;
  std::vector<SchemaColumn> columns;
  bool operator==(const SpeciesSchema&) const = default;
};
using Schema = std::vector<SpeciesSchema>;
std::string encode(const Schema& s);
Schema decode_schema(std::string_view bytes);
// How `other` differs from `reference` (rank 0's), for a message: "column 'e.w' is f32
// (rank 0: f64), species 'ions' is missing, ..."; "columns are in a different order"
// when only the order differs.
std::string schema_difference(const Schema& reference, const Schema& other);

// What a rank asks a parallel read for: ranks must agree on all of it.
struct ReadRequest {
  std::string path;
  std::string where;
  double quality = 1.0;
  std::optional<double> fraction;
  std::vector<std::string> columns;
  bool operator==(const ReadRequest&) const = default;
};
std::string encode(const ReadRequest& r);
ReadRequest decode_read_request(std::string_view bytes);

// A rank's particles in brief (aggregation.hpp), to rank 0 for the plan.
std::string encode(const RankSummary& s);
RankSummary decode_rank_summary(std::string_view bytes);

// Rank 0's plan, for one rank: the part of each of its cells (the cell -> part map), and
// the parts it aggregates with the ranks that feed them.
struct IncomingPart {
  uint32_t part = 0;
  std::vector<std::pair<int, uint64_t>> from;  // (rank, particles), ascending ranks
  bool operator==(const IncomingPart&) const = default;
};
struct RankPlan {
  std::vector<uint32_t> part_of_cell;  // one per cell of the rank's summary
  std::vector<IncomingPart> incoming;  // ascending parts
  bool operator==(const RankPlan&) const = default;
};
std::string encode(const RankPlan& p);
RankPlan decode_rank_plan(std::string_view bytes);

// What an aggregator wrote, to rank 0 for the step index: one summary per part.
struct PartReport {
  uint32_t part = 0;
  PartSummary summary;
};
std::string encode(const std::vector<PartReport>& parts);
std::vector<PartReport> decode_part_reports(std::string_view bytes);

// The number of rows one rank sends another (a parallel read); every count message
// has kCountBytes bytes, so a receiver can post its receive before it arrives.
inline constexpr size_t kCountBytes = 1 + 4 + 8 + 8;
std::string encode_count(uint64_t count);
uint64_t decode_count(std::string_view bytes);

}  // namespace motes::wire
