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

}  // namespace

LocalParticles read_partition(MPI_Comm comm, const std::string& path, const PartitionRequest& request) {
  Comm c(comm);
  {
    // Ranks that disagree on what to read would disagree on every message size below.
    wire::ReadRequest mine{path, request.where, request.quality, request.fraction, request.columns};
    check_ranks_agree(c, wire::encode(mine), "what to read", [](const std::string&, const std::string&) {
      return std::string(" asks for another file, filter, quality or column list than rank 0");
    });
  }
  std::shared_ptr<const Collection> coll;
  std::vector<size_t> columns;
  LocalParticles out;
  auto f = attempt([&] {
    coll = Collection::open(path);
    if (request.columns.empty())
      for (size_t k = 0; k < coll->schema().size(); ++k) columns.push_back(k);
    for (const std::string& name : request.columns) columns.push_back(coll->column(name));
    for (size_t k : columns) out.schema.push_back(coll->schema()[k]);
    if (request.box)
      for (int a = 0; a < 3; ++a)
        if (!(request.box->lo[a] <= request.box->hi[a])) throw UsageError("this rank's box is empty or invalid");
  });
  agree(c, f, "opening '" + path + "' for a parallel read");
  const int has_box = request.box.has_value(), all_box = allreduce(c, has_box, MPI_MIN),
            any_box = allreduce(c, has_box, MPI_MAX);
  if (all_box != any_box) throw UsageError("read_partition: either every rank passes a box or none does");

  const size_t parts = coll->part_count();
  auto reader = [&](size_t k) { return int(uint64_t(k) * uint64_t(c.size) / parts); };
  auto part_bounds = [&](size_t k) { return coll->index() ? coll->index()->parts()[k].bounds : coll->bounds(); };
  QuerySpec spec;
  spec.where = request.where;
  spec.quality_to = request.quality;
  spec.fraction = request.fraction;
  spec.threads = threads_per_rank(c, request.threads);
  std::vector<size_t> sizes;
  for (size_t k : columns) sizes.push_back(dtype_size(coll->schema()[k].dtype));

  // Sends of one selection's rows [a, b) to rank `dest`: one message set per column. Every
  // buffer a send reads from lives until wait_all(sends) at the end.
  std::vector<std::vector<unsigned char>> buffers;
  std::vector<MPI_Request> sends, recvs;
  auto send_rows = [&](const Selection& s, uint64_t a, uint64_t b, int dest) {
    for (size_t j = 0; j < columns.size(); ++j) {
      buffers.emplace_back((b - a) * sizes[j]);
      s.gather(columns[j], a, b, buffers.back().data(), spec.threads);
      isend_bytes(buffers.back().data(), buffers.back().size(), dest, kTagData, c.comm, sends);
    }
  };
  auto part_query = [&](size_t k, const QuerySpec& q) {
    Query query(Collection::of(coll->part(k)), q);
    return Selection(query);
  };
  std::vector<std::pair<int, uint64_t>> expect;  // (source, rows) in arrival order

  if (all_box) {
    std::vector<double> mine(6), boxes(6 * size_t(c.size));
    for (int a = 0; a < 3; ++a) mine[size_t(a)] = request.box->lo[a], mine[3 + size_t(a)] = request.box->hi[a];
    MPI_Allgather(mine.data(), 6, MPI_DOUBLE, boxes.data(), 6, MPI_DOUBLE, c.comm);
    auto box_of = [&](int r) {
      Box b;
      for (int a = 0; a < 3; ++a) b.lo[a] = boxes[6 * size_t(r) + size_t(a)], b.hi[a] = boxes[6 * size_t(r) + 3 + size_t(a)];
      return b;
    };
    // Servers: for each own part and each rank whose box meets it, the selection; then
    // (once every server succeeded) a count and the rows.
    struct Served {
      int dest;
      Selection selection;
      uint64_t count;
    };
    std::vector<Served> served;
    f = attempt([&] {
      for (size_t k = 0; k < parts; ++k) {
        if (reader(k) != c.rank) continue;
        for (int r = 0; r < c.size; ++r) {
          if (!overlaps(part_bounds(k), box_of(r))) continue;
          QuerySpec q = spec;
          q.box = box_of(r);
          Selection s = part_query(k, q);
          served.push_back({r, std::move(s), 0});
          served.back().count = served.back().selection.size();
        }
      }
    });
    agree(c, f, "serving a parallel read of '" + path + "'");
    // Counts first, agreed on before any row is sent: a count message from each
    // server to each client, for each part of the server that meets the client's box.
    std::vector<std::string> counts_out;
    for (const Served& s : served) counts_out.push_back(wire::encode_count(s.count));
    for (size_t i = 0; i < served.size(); ++i)
      isend_bytes(counts_out[i].data(), counts_out[i].size(), served[i].dest, kTagCount, c.comm, sends);
    std::vector<std::string> counts_in(parts);
    std::vector<size_t> from_parts;
    for (size_t k = 0; k < parts; ++k) {
      if (!overlaps(part_bounds(k), *request.box)) continue;
      from_parts.push_back(k);
      counts_in[k].resize(wire::kCountBytes);
      irecv_bytes(counts_in[k].data(), wire::kCountBytes, reader(k), kTagCount, c.comm, recvs);
    }
    wait_all(recvs);
    wait_all(sends);
    std::vector<uint64_t> rows(parts, 0);
    f = attempt([&] {
      for (size_t k : from_parts) rows[k] = wire::decode_count(counts_in[k]);
    });
    agree(c, f, "counting the rows of a parallel read of '" + path + "'");
    for (const Served& s : served)
      if (s.count) send_rows(s.selection, 0, s.count, s.dest);
    for (size_t k : from_parts)
      if (rows[k]) expect.emplace_back(reader(k), rows[k]);
  } else {
    // Even shares of the matching particles in part order: counts first, known to all.
    std::vector<Selection> selections(parts);
    std::vector<uint64_t> counts(parts, 0), total_counts(parts, 0);
    f = attempt([&] {
      for (size_t k = 0; k < parts; ++k)
        if (reader(k) == c.rank) selections[k] = part_query(k, spec), counts[k] = selections[k].size();
    });
    agree(c, f, "serving a parallel read of '" + path + "'");
    allreduce(c, counts.data(), total_counts.data(), parts, MPI_SUM);
    uint64_t total = 0;
    std::vector<uint64_t> offset(parts + 1, 0);
    for (size_t k = 0; k < parts; ++k) offset[k + 1] = offset[k] + total_counts[k];
    total = offset[parts];
    auto share_begin = [&](int r) { return uint64_t((unsigned __int128)total * uint64_t(r) / uint64_t(c.size)); };
    for (size_t k = 0; k < parts; ++k) {
      for (int r = 0; r < c.size; ++r) {
        uint64_t a = std::max(offset[k], share_begin(r)), b = std::min(offset[k + 1], share_begin(r + 1));
        if (a >= b) continue;
        if (reader(k) == c.rank) send_rows(selections[k], a - offset[k], b - offset[k], r);
        if (r == c.rank) expect.emplace_back(reader(k), b - a);
      }
    }
  }
  // Receive the rows, in the order the servers sent them.
  for (const auto& e : expect) out.count += e.second;
  out.columns.resize(columns.size());
  for (size_t j = 0; j < columns.size(); ++j) out.columns[j].resize(out.count * sizes[j]);
  uint64_t at = 0;
  for (const auto& [source, rows] : expect) {
    for (size_t j = 0; j < columns.size(); ++j)
      irecv_bytes(out.columns[j].data() + at * sizes[j], rows * sizes[j], source, kTagData, c.comm, recvs);
    at += rows;
  }
  wait_all(recvs);
  wait_all(sends);
  return out;
}

}  // namespace motes
