#include "motes/parallel/comm.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <thread>

#include "motes/core/threads.hpp"
#include "motes/core/types.hpp"

namespace motes::mpi {

uint64_t max_message() {
  static const uint64_t v = [] {
    const char* e = std::getenv("MOTES_MPI_MAX_MESSAGE");
    uint64_t limit = uint64_t(1) << 30;
    if (e && *e) {
      char* end = nullptr;
      unsigned long long parsed = std::strtoull(e, &end, 10);
      if (end && *end == '\0' && parsed > 0) limit = std::min<uint64_t>(limit, parsed);
    }
    return limit;
  }();
  return v;
}

Comm::Comm(MPI_Comm c) : comm(c) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) throw UsageError("MPI is not initialised: call MPI_Init before a parallel motes call");
  if (c == MPI_COMM_NULL) throw UsageError("the communicator is MPI_COMM_NULL");
  MPI_Comm_rank(c, &rank);
  MPI_Comm_size(c, &size);
}

std::shared_ptr<MPI_Comm> duplicate(MPI_Comm comm, const char* who) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) throw UsageError(std::string(who) + ": call MPI_Init first");
  if (comm == MPI_COMM_NULL) throw UsageError(std::string(who) + ": the communicator is MPI_COMM_NULL");
  MPI_Comm own;
  MPI_Comm_dup(comm, &own);
  return std::shared_ptr<MPI_Comm>(new MPI_Comm(own), [](MPI_Comm* c) {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Comm_free(c);
    delete c;
  });
}

void isend_bytes(const void* data, uint64_t n, int dest, int tag, MPI_Comm comm, std::vector<MPI_Request>& out) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    int len = int(std::min(n, max_message()));
    out.emplace_back();
    MPI_Isend(p, len, MPI_BYTE, dest, tag, comm, &out.back());
    p += len, n -= uint64_t(len);
  }
}

void irecv_bytes(void* data, uint64_t n, int source, int tag, MPI_Comm comm, std::vector<MPI_Request>& out) {
  char* p = static_cast<char*>(data);
  while (n > 0) {
    int len = int(std::min(n, max_message()));
    out.emplace_back();
    MPI_Irecv(p, len, MPI_BYTE, source, tag, comm, &out.back());
    p += len, n -= uint64_t(len);
  }
}

void wait_all(std::vector<MPI_Request>& r) {
  if (!r.empty()) MPI_Waitall(int(r.size()), r.data(), MPI_STATUSES_IGNORE);
  r.clear();
}

void wait_idle(MPI_Request& request) {
  int done = 0;
  for (int i = 0; i < 64 && !done; ++i) MPI_Test(&request, &done, MPI_STATUS_IGNORE);
  for (long sleep = 10; !done; sleep = std::min(2 * sleep, kIdleSleepMicros)) {
    std::this_thread::sleep_for(std::chrono::microseconds(sleep));
    MPI_Test(&request, &done, MPI_STATUS_IGNORE);
  }
}

bool all_done(std::vector<MPI_Request>& r) {
  int done = 1;
  if (!r.empty()) MPI_Testall(int(r.size()), r.data(), &done, MPI_STATUSES_IGNORE);
  if (done) r.clear();
  return done != 0;
}

std::vector<std::string> allgather_strings(const Comm& c, const std::string& mine) {
  int len = int(mine.size());
  std::vector<int> lens(size_t(c.size)), offs(size_t(c.size) + 1, 0);
  MPI_Allgather(&len, 1, MPI_INT, lens.data(), 1, MPI_INT, c.comm);
  for (int r = 0; r < c.size; ++r) offs[size_t(r) + 1] = offs[size_t(r)] + lens[size_t(r)];
  std::string all(size_t(offs.back()), '\0');
  MPI_Allgatherv(mine.data(), len, MPI_BYTE, all.data(), lens.data(), offs.data(), MPI_BYTE, c.comm);
  std::vector<std::string> out(size_t(c.size));
  for (int r = 0; r < c.size; ++r) out[size_t(r)] = all.substr(size_t(offs[size_t(r)]), size_t(lens[size_t(r)]));
  return out;
}

std::vector<std::string> gather_strings(const Comm& c, const std::string& mine) {
  int len = int(mine.size());
  std::vector<int> lens(size_t(c.size)), offs(size_t(c.size) + 1, 0);
  MPI_Gather(&len, 1, MPI_INT, lens.data(), 1, MPI_INT, 0, c.comm);
  if (c.rank == 0)
    for (int r = 0; r < c.size; ++r) offs[size_t(r) + 1] = offs[size_t(r)] + lens[size_t(r)];
  std::string all(c.rank == 0 ? size_t(offs.back()) : 0, '\0');
  MPI_Gatherv(mine.data(), len, MPI_BYTE, all.data(), lens.data(), offs.data(), MPI_BYTE, 0, c.comm);
  std::vector<std::string> out;
  if (c.rank == 0)
    for (int r = 0; r < c.size; ++r) out.push_back(all.substr(size_t(offs[size_t(r)]), size_t(lens[size_t(r)])));
  return out;
}

std::string scatter_strings(const Comm& c, const std::vector<std::string>& per_rank) {
  std::vector<int> lens(size_t(c.size)), offs(size_t(c.size) + 1, 0);
  std::string flat;
  if (c.rank == 0)
    for (int r = 0; r < c.size; ++r) {
      lens[size_t(r)] = int(per_rank[size_t(r)].size());
      offs[size_t(r) + 1] = offs[size_t(r)] + lens[size_t(r)];
      flat += per_rank[size_t(r)];
    }
  int len = 0;
  MPI_Scatter(lens.data(), 1, MPI_INT, &len, 1, MPI_INT, 0, c.comm);
  std::string out(size_t(len), '\0');
  MPI_Scatterv(flat.data(), lens.data(), offs.data(), MPI_BYTE, out.data(), len, MPI_BYTE, 0, c.comm);
  return out;
}

unsigned ranks_on_this_node(const Comm& c) {
  MPI_Comm node;
  MPI_Comm_split_type(c.comm, MPI_COMM_TYPE_SHARED, c.rank, MPI_INFO_NULL, &node);
  int n = 1;
  MPI_Comm_size(node, &n);
  MPI_Comm_free(&node);
  return unsigned(std::max(1, n));
}

uint32_t node_of_this_rank(const Comm& c) {
  MPI_Comm node;
  MPI_Comm_split_type(c.comm, MPI_COMM_TYPE_SHARED, c.rank, MPI_INFO_NULL, &node);
  int lowest = c.rank;  // the node's rank 0 has the lowest key, this communicator's rank
  MPI_Bcast(&lowest, 1, MPI_INT, 0, node);
  MPI_Comm_free(&node);
  return uint32_t(lowest);
}

unsigned threads_per_rank(const Comm& c, unsigned requested) {
  if (requested) return requested;
  return std::max(1u, default_threads() / ranks_on_this_node(c));
}

}  // namespace motes::mpi
