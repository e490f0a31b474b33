// The collective read (parallel.hpp): the part files are shared out to read aggregators
// spread over the ranks; each serves the rows of its parts that other ranks ask for,
// by box or as even shares of the matching particles.
#include "motes/parallel/parallel.hpp"

#include <algorithm>

#include "motes/parallel/agree.hpp"
#include "motes/parallel/comm.hpp"
#include "motes/parallel/wire.hpp"

namespace motes {

using namespace mpi;

namespace {

bool overlaps(const Box& a, const Box& b) {
  for (int k = 0; k < 3; ++k)
    if (a.hi[k] < b.lo[k] || b.hi[k] < a.lo[k]) return false;
  return true;
}

// One collective read, in the order run() takes its phases: the request agreed on and the
// file opened on every rank; the rows of each part file served by its reader (the rank
// reader(k)) to the ranks that want them, by box or as even shares; the rows received, in
// the order the servers sent them.
class PartitionRead {
 public:
  PartitionRead(MPI_Comm comm, const std::string& path, const PartitionRequest& request)
      : c_(comm), path_(path), request_(request) {}
  LocalParticles run();

 private:
  // A selection a server sends to one client.
  struct Served {
    int dest;
    Selection selection;
    uint64_t count;
  };
  void agree_on_request();
  void open();
  void serve_boxes();
  std::vector<Served> select_boxes(const std::vector<Box>& boxes);
  void serve_shares();
  void receive();
  // The rank that serves part k.
  int reader(size_t k) const { return int(uint64_t(k) * uint64_t(c_.size) / parts_); }
  Box part_bounds(size_t k) const { return coll_->index() ? coll_->index()->parts()[k].bounds : coll_->bounds(); }
  Selection part_query(size_t k, const QuerySpec& q) const {
    Query query(Collection::of(coll_->part(k)), q);
    return Selection(query);
  }
  void send_rows(const Selection& s, uint64_t a, uint64_t b, int dest);

  Comm c_;
  const std::string& path_;
  const PartitionRequest& request_;
  std::shared_ptr<const Collection> coll_;
  std::vector<size_t> columns_;  // the columns read, in the file's schema
  std::vector<size_t> sizes_;    // their value sizes
  size_t parts_ = 0;
  QuerySpec spec_;
  LocalParticles out_;
  // Every buffer a send reads from lives until wait_all(sends_) at the end.
  std::vector<std::vector<unsigned char>> buffers_;
  std::vector<MPI_Request> sends_, recvs_;
  std::vector<std::pair<int, uint64_t>> expect_;  // (source, rows) in arrival order
};

LocalParticles PartitionRead::run() {
  agree_on_request();
  open();
  const int has_box = request_.box.has_value(), all_box = allreduce(c_, has_box, MPI_MIN),
            any_box = allreduce(c_, has_box, MPI_MAX);
  if (all_box != any_box) throw UsageError("read_partition: either every rank passes a box or none does");
  parts_ = coll_->part_count();
  spec_.where = request_.where;
  spec_.quality_to = request_.quality;
  spec_.fraction = request_.fraction;
  spec_.threads = threads_per_rank(c_, request_.threads);
  for (size_t k : columns_) sizes_.push_back(dtype_size(coll_->schema()[k].dtype));
  if (all_box) serve_boxes();
  else serve_shares();
  receive();
  return std::move(out_);
}

// Ranks that disagree on what to read would disagree on every message size below.
void PartitionRead::agree_on_request() {
  wire::ReadRequest mine{path_, request_.where, request_.quality, request_.fraction, request_.columns};
  check_ranks_agree(c_, wire::encode(mine), "what to read", [](const std::string&, const std::string&) {
    return std::string(" asks for another file, filter, quality or column list than rank 0");
  });
}

void PartitionRead::open() {
  auto f = attempt([&] {
    coll_ = Collection::open(path_);
    if (request_.columns.empty())
      for (size_t k = 0; k < coll_->schema().size(); ++k) columns_.push_back(k);
    for (const std::string& name : request_.columns) columns_.push_back(coll_->column(name));
    for (size_t k : columns_) out_.schema.push_back(coll_->schema()[k]);
    if (request_.box)
      for (int a = 0; a < 3; ++a)
        if (!(request_.box->lo[a] <= request_.box->hi[a])) throw UsageError("this rank's box is empty or invalid");
  });
  agree(c_, f, "opening '" + path_ + "' for a parallel read");
}

// Sends of one selection's rows [a, b) to rank `dest`: one message set per column.
void PartitionRead::send_rows(const Selection& s, uint64_t a, uint64_t b, int dest) {
  for (size_t j = 0; j < columns_.size(); ++j) {
    buffers_.emplace_back((b - a) * sizes_[j]);
    s.gather(columns_[j], a, b, buffers_.back().data(), spec_.threads);
    isend_bytes(buffers_.back().data(), buffers_.back().size(), dest, kTagData, c_.comm, sends_);
  }
}

// By box: counts first, agreed on before any row is sent (a count message from each
// server to each client, for each part of the server that meets the client's box), then
// the rows.
void PartitionRead::serve_boxes() {
  std::vector<double> mine(6), all(6 * size_t(c_.size));
  for (int a = 0; a < 3; ++a) mine[size_t(a)] = request_.box->lo[a], mine[3 + size_t(a)] = request_.box->hi[a];
  MPI_Allgather(mine.data(), 6, MPI_DOUBLE, all.data(), 6, MPI_DOUBLE, c_.comm);
  std::vector<Box> boxes(size_t(c_.size));
  for (size_t r = 0; r < boxes.size(); ++r)
    for (size_t a = 0; a < 3; ++a) boxes[r].lo[a] = all[6 * r + a], boxes[r].hi[a] = all[6 * r + 3 + a];
  std::vector<Served> served = select_boxes(boxes);
  std::vector<std::string> counts_out;
  for (const Served& s : served) counts_out.push_back(wire::encode_count(s.count));
  for (size_t i = 0; i < served.size(); ++i)
    isend_bytes(counts_out[i].data(), counts_out[i].size(), served[i].dest, kTagCount, c_.comm, sends_);
  std::vector<std::string> counts_in(parts_);
  std::vector<size_t> from_parts;
  for (size_t k = 0; k < parts_; ++k) {
    if (!overlaps(part_bounds(k), *request_.box)) continue;
    from_parts.push_back(k);
    counts_in[k].resize(wire::kCountBytes);
    irecv_bytes(counts_in[k].data(), wire::kCountBytes, reader(k), kTagCount, c_.comm, recvs_);
  }
  wait_all(recvs_);
  wait_all(sends_);
  std::vector<uint64_t> rows(parts_, 0);
  auto f = attempt([&] {
    for (size_t k : from_parts) rows[k] = wire::decode_count(counts_in[k]);
  });
  agree(c_, f, "counting the rows of a parallel read of '" + path_ + "'");
  for (const Served& s : served)
    if (s.count) send_rows(s.selection, 0, s.count, s.dest);
  for (size_t k : from_parts)
    if (rows[k]) expect_.emplace_back(reader(k), rows[k]);
}

// Servers: for each own part and each rank whose box meets it, the selection (agreed on:
// every server succeeded).
std::vector<PartitionRead::Served> PartitionRead::select_boxes(const std::vector<Box>& boxes) {
  std::vector<Served> served;
  auto f = attempt([&] {
    for (size_t k = 0; k < parts_; ++k) {
      if (reader(k) != c_.rank) continue;
      for (int r = 0; r < c_.size; ++r) {
        if (!overlaps(part_bounds(k), boxes[size_t(r)])) continue;
        QuerySpec q = spec_;
        q.box = boxes[size_t(r)];
        Selection s = part_query(k, q);
        served.push_back({r, std::move(s), 0});
        served.back().count = served.back().selection.size();
      }
    }
  });
  agree(c_, f, "serving a parallel read of '" + path_ + "'");
  return served;
}

// Even shares of the matching particles in part order: counts first, known to all.
void PartitionRead::serve_shares() {
  std::vector<Selection> selections(parts_);
  std::vector<uint64_t> counts(parts_, 0), total_counts(parts_, 0);
  auto f = attempt([&] {
    for (size_t k = 0; k < parts_; ++k)
      if (reader(k) == c_.rank) selections[k] = part_query(k, spec_), counts[k] = selections[k].size();
  });
  agree(c_, f, "serving a parallel read of '" + path_ + "'");
  allreduce(c_, counts.data(), total_counts.data(), parts_, MPI_SUM);
  std::vector<uint64_t> offset(parts_ + 1, 0);
  for (size_t k = 0; k < parts_; ++k) offset[k + 1] = offset[k] + total_counts[k];
  const uint64_t total = offset[parts_];
  auto share_begin = [&](int r) { return uint64_t((unsigned __int128)total * uint64_t(r) / uint64_t(c_.size)); };
  for (size_t k = 0; k < parts_; ++k) {
    for (int r = 0; r < c_.size; ++r) {
      uint64_t a = std::max(offset[k], share_begin(r)), b = std::min(offset[k + 1], share_begin(r + 1));
      if (a >= b) continue;
      if (reader(k) == c_.rank) send_rows(selections[k], a - offset[k], b - offset[k], r);
      if (r == c_.rank) expect_.emplace_back(reader(k), b - a);
    }
  }
}

// Receive the rows, in the order the servers sent them.
void PartitionRead::receive() {
  for (const auto& e : expect_) out_.count += e.second;
  out_.columns.resize(columns_.size());
  for (size_t j = 0; j < columns_.size(); ++j) out_.columns[j].resize(out_.count * sizes_[j]);
  uint64_t at = 0;
  for (const auto& [source, rows] : expect_) {
    for (size_t j = 0; j < columns_.size(); ++j)
      irecv_bytes(out_.columns[j].data() + at * sizes_[j], rows * sizes_[j], source, kTagData, c_.comm, recvs_);
    at += rows;
  }
  wait_all(recvs_);
  wait_all(sends_);
}

}  // namespace

LocalParticles read_partition(MPI_Comm comm, const std::string& path, const PartitionRequest& request) {
  return PartitionRead(comm, path, request).run();
}

}  // namespace motes
