#include "motes/parallel/agree.hpp"

#include <vector>

#include "motes/parallel/wire.hpp"
#include "motes/particles/spec.hpp"

namespace motes::mpi {

void agree(const Comm& c, const std::optional<ErrorReport>& mine, const std::string& stage) {
  // Whether any rank failed: the ranks done first wait without polling (wait_idle).
  int failed = int(mine.has_value()), any = 0;
  MPI_Request request;
  MPI_Iallreduce(&failed, &any, 1, MPI_INT, MPI_MAX, c.comm, &request);
  wait_idle(request);
  if (!any) return;
  std::vector<std::string> all = allgather_strings(c, mine ? wire::encode(*mine) : std::string());
  std::string text;
  std::optional<ErrorReport> first;
  int listed = 0, failures = 0;
  for (int r = 0; r < c.size; ++r) {
    if (all[size_t(r)].empty()) continue;
    ErrorReport f = wire::decode_failure(all[size_t(r)]);
    ++failures;
    if (listed < 8) text += (listed ? "; " : "") + std::string("rank ") + std::to_string(r) + ": " + f.message, ++listed;
    if (!first) first = std::move(f);
  }
  if (failures > listed) text += "; and " + std::to_string(failures - listed) + " more ranks";
  std::string message = stage + " failed on " + std::to_string(failures) + " of " + std::to_string(c.size) +
                        " ranks (" + text + ")";
  throw_error(first->kind, message, first->error_number);
}

void check_ranks_agree(const Comm& c, const std::string& mine, const std::string& what,
                       const std::function<std::string(const std::string&, const std::string&)>& describe) {
  uint64_t h = spec::checksum(mine.data(), mine.size());
  const uint64_t lo = allreduce(c, h, MPI_MIN), hi = allreduce(c, h, MPI_MAX);
  if (lo == hi) return;
  std::vector<std::string> all = allgather_strings(c, mine);
  std::string text;
  int listed = 0, differing = 0;
  for (int r = 1; r < c.size; ++r) {
    if (all[size_t(r)] == all[0]) continue;
    ++differing;
    if (listed < 6)
      text += std::string(listed ? "; " : "") + "rank " + std::to_string(r) + describe(all[0], all[size_t(r)]), ++listed;
  }
  if (differing > listed) text += "; and " + std::to_string(differing - listed) + " more ranks";
  throw UsageError("ranks disagree on " + what + " (" + text + ")");
}

}  // namespace motes::mpi
