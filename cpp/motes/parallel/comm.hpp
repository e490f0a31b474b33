// Communicator helpers of the parallel layer: a checked handle on the caller's
// communicator, motes' private duplicate of it, typed MPI datatypes, messages of any
// size, and byte strings gathered, scattered and shared between ranks. Every function
// taking a Comm is collective over it unless it says otherwise.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace motes::mpi {

// Tags of the point-to-point messages: column data, and per-selection counts.
inline constexpr int kTagData = 4711, kTagCount = 4712;

// Bytes per message: MPI counts are int, so larger transfers go in pieces of 1 GiB.
// MOTES_MPI_MAX_MESSAGE lowers it (tests use it to exercise the splitting on small data).
uint64_t max_message();

// The communicator of one collective call, with this rank and the number of ranks.
// UsageError when MPI is not initialised or the communicator is MPI_COMM_NULL.
struct Comm {
  MPI_Comm comm;
  int rank = 0, size = 1;
  explicit Comm(MPI_Comm c);
};

// motes' own duplicate of a caller's communicator (collective), so that motes' messages
// never mix with the caller's: freed when the last holder lets go, unless MPI is
// finalised by then. UsageError when MPI is not initialised or `comm` is MPI_COMM_NULL
// (`who` names the caller in the message).
std::shared_ptr<MPI_Comm> duplicate(MPI_Comm comm, const char* who);

// The MPI datatype of a C++ arithmetic type.
template <class T>
MPI_Datatype datatype();
template <> inline MPI_Datatype datatype<int>() { return MPI_INT; }
template <> inline MPI_Datatype datatype<uint8_t>() { return MPI_UINT8_T; }
template <> inline MPI_Datatype datatype<uint32_t>() { return MPI_UINT32_T; }
template <> inline MPI_Datatype datatype<uint64_t>() { return MPI_UINT64_T; }
template <> inline MPI_Datatype datatype<double>() { return MPI_DOUBLE; }

// n values of rank 0 to every rank.
template <class T>
void broadcast(const Comm& c, T* values, size_t n) {
  MPI_Bcast(values, int(n), datatype<T>(), 0, c.comm);
}
// Element-wise reduction of n values over every rank, the result on every rank.
template <class T>
void allreduce(const Comm& c, const T* in, T* out, size_t n, MPI_Op op) {
  MPI_Allreduce(in, out, int(n), datatype<T>(), op, c.comm);
}
template <class T>
T allreduce(const Comm& c, T value, MPI_Op op) {
  T out{};
  allreduce(c, &value, &out, 1, op);
  return out;
}

// Messages of any size: split into pieces of at most max_message() bytes. Sender and
// receiver split the same way, and MPI keeps messages between two ranks with one
// tag in order, so the pieces match up. Not collective: the requests go to `out`.
void isend_bytes(const void* data, uint64_t n, int dest, int tag, MPI_Comm comm, std::vector<MPI_Request>& out);
void irecv_bytes(void* data, uint64_t n, int source, int tag, MPI_Comm comm, std::vector<MPI_Request>& out);
void wait_all(std::vector<MPI_Request>& requests);
// Waits for one request without holding a core meanwhile: tests it, a while back to back,
// then with sleeps growing to kIdleSleepMicros between tests. For the waits of ranks done
// before their peers (a rank that wrote its part first, the ranks waiting while rank 0
// writes the step index and the manifest): a blocking MPI call polls, and with more ranks
// than cores the polling takes the cores from the ranks still at work (MPI's yield only
// gives them back between polls). Not for the data messages (MPI moves them on in its polls).
inline constexpr long kIdleSleepMicros = 500;
void wait_idle(MPI_Request& request);
// Whether every request has completed (those that have are freed); never blocks.
bool all_done(std::vector<MPI_Request>& requests);

// Every rank's byte string, on every rank.
std::vector<std::string> allgather_strings(const Comm& c, const std::string& mine);
// Every rank's byte string on rank 0 (empty elsewhere).
std::vector<std::string> gather_strings(const Comm& c, const std::string& mine);
// Rank 0's per-rank byte strings, one to each rank (per_rank is read on rank 0 only).
std::string scatter_strings(const Comm& c, const std::vector<std::string>& per_rank);

// Ranks of the communicator that share this rank's node.
unsigned ranks_on_this_node(const Comm& c);
// The lowest rank of the communicator on this rank's node: the same number for all ranks of a node.
uint32_t node_of_this_rank(const Comm& c);
// Threads per rank: `requested`, or 0 for the node's cores shared by its ranks.
unsigned threads_per_rank(const Comm& c, unsigned requested);

}  // namespace motes::mpi
