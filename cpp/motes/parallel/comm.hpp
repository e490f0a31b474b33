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

// Every rank's byte string, on every rank.
std::vector<std::string> allgather_strings(const Comm& c, const std::string& mine);
// Every rank's byte string on rank 0 (empty elsewhere).
std::vector<std::string> gather_strings(const Comm& c, const std::string& mine);
// Rank 0's per-rank byte strings, one to each rank (per_rank is read on rank 0 only).
std::string scatter_strings(const Comm& c, const std::vector<std::string>& per_rank);

// Every rank's array of T on rank 0 (empty elsewhere), concatenated, with per-rank offsets.
template <class T>
std::vector<T> gather_to_root(const Comm& c, const std::vector<T>& mine, std::vector<int>* offsets_out = nullptr) {
  int bytes = int(mine.size() * sizeof(T));
  std::vector<int> lens(size_t(c.size)), offs(size_t(c.size) + 1, 0);
  MPI_Gather(&bytes, 1, MPI_INT, lens.data(), 1, MPI_INT, 0, c.comm);
  if (c.rank == 0)
    for (int r = 0; r < c.size; ++r) offs[size_t(r) + 1] = offs[size_t(r)] + lens[size_t(r)];
  std::vector<T> all(c.rank == 0 ? size_t(offs.back()) / sizeof(T) : 0);
  MPI_Gatherv(mine.data(), bytes, MPI_BYTE, all.data(), lens.data(), offs.data(), MPI_BYTE, 0, c.comm);
  if (offsets_out) {
    offsets_out->resize(size_t(c.size) + 1);
    for (size_t r = 0; r <= size_t(c.size); ++r) (*offsets_out)[r] = offs[r] / int(sizeof(T));
  }
  return all;
}

// Rank 0's per-rank arrays of T, one to each rank.
template <class T>
std::vector<T> scatter_from_root(const Comm& c, const std::vector<std::vector<T>>& per_rank) {
  std::vector<int> lens(size_t(c.size)), offs(size_t(c.size) + 1, 0);
  std::vector<T> flat;
  if (c.rank == 0) {
    for (int r = 0; r < c.size; ++r) {
      lens[size_t(r)] = int(per_rank[size_t(r)].size() * sizeof(T));
      offs[size_t(r) + 1] = offs[size_t(r)] + lens[size_t(r)];
      flat.insert(flat.end(), per_rank[size_t(r)].begin(), per_rank[size_t(r)].end());
    }
  }
  int mine = 0;
  MPI_Scatter(lens.data(), 1, MPI_INT, &mine, 1, MPI_INT, 0, c.comm);
  std::vector<T> out(size_t(mine) / sizeof(T));
  MPI_Scatterv(flat.data(), lens.data(), offs.data(), MPI_BYTE, out.data(), mine, MPI_BYTE, 0, c.comm);
  return out;
}

// Ranks of the communicator that share this rank's node.
unsigned ranks_on_this_node(const Comm& c);
// Threads per rank: `requested`, or 0 for the node's cores shared by its ranks.
unsigned threads_per_rank(const Comm& c, unsigned requested);

}  // namespace motes::mpi
