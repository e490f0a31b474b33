// Collective agreement: every failure in a parallel call is agreed on by all ranks, so
// that no rank waits for a peer that gave up. Each rank runs its local part under
// attempt(); agree() then returns on every rank, or throws the same error on every
// rank: the class of the lowest failed rank's kind (core/errors.hpp), its errno, and a
// message naming every failed rank with its own message.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "motes/core/errors.hpp"
#include "motes/parallel/comm.hpp"

namespace motes::mpi {

// Runs f on this rank alone; what it threw, by the error table, or nothing.
template <class F>
std::optional<ErrorReport> attempt(F&& f) {
  try {
    f();
    return std::nullopt;
  } catch (...) {
    return describe_exception(std::current_exception());
  }
}

// Collective: when any rank failed, every rank throws one error, "<stage> failed on
// N of M ranks (rank r: message; ...)", of the kind of the lowest failed rank.
void agree(const Comm& c, const std::optional<ErrorReport>& mine, const std::string& stage);

// Collective: UsageError on every rank unless every rank's `mine` (a wire message)
// equals rank 0's: "ranks disagree on <what> (rank r<describe(rank 0's, rank r's)>; ...)",
// listing up to 6 differing ranks.
void check_ranks_agree(const Comm& c, const std::string& mine, const std::string& what,
                       const std::function<std::string(const std::string&, const std::string&)>& describe);

}  // namespace motes::mpi
