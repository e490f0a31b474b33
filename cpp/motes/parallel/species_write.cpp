// One species' part of a collective write (species_write.hpp), in phases: summaries to rank
// 0, the plan, the exchange of the columns, the parts written by the aggregators, the part
// summaries back to rank 0. Every phase's failures are agreed on (agree.hpp).
#include "motes/parallel/species_write.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>

#include "motes/core/memory.hpp"
#include "motes/parallel/agree.hpp"
#include "motes/parallel/wire.hpp"

namespace motes {

using namespace mpi;

namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// One species' parts of a collective write, in the order run() takes its phases: every
// rank summarises its particles for rank 0 (1), which plans the parts (2); the columns
// travel to the aggregators (3), which write the parts while they arrive (4); the part
// summaries go back to rank 0 (5). Each phase's failures are agreed on before the next.
class SpeciesWrite {
 public:
  SpeciesWrite(const Comm& c, const std::string& dir, int64_t index, const std::string& name,
               const std::vector<ColumnView>& cols, const ParallelWriteOptions& options, SpeciesPlan& plan,
               ParallelWriteReport& report)
      : c_(c), dir_(dir), index_(index), name_(name), cols_(cols), options_(options), plan_(plan), report_(report) {}
  // Writes the species' parts. Returns, on rank 0, the part summaries in part order.
  std::vector<PartSummary> run();

 private:
  struct Outgoing {
    uint32_t part;
    std::vector<BigVector<unsigned char>> columns;
  };
  struct Incoming {
    uint32_t part;
    uint64_t count = 0;
    std::vector<std::pair<int, uint64_t>> from;  // (rank, particles), ascending ranks
    std::vector<BigVector<unsigned char>> columns;  // filled whole (own rows, messages): not zeroed first
    std::vector<MPI_Request> messages;  // the receives of the other ranks' particles
  };
  // This rank's particles grouped by the part they go to.
  struct ByPart {
    std::vector<uint32_t> parts;  // ascending
    std::vector<uint64_t> start;  // the rows of parts[k]: rows[start[k] .. start[k + 1])
    BigVector<uint64_t> rows;
  };

  void summarize();
  void plan_parts();
  std::vector<std::string> plan_on_rank0();
  void prepare_transfer();
  void allocate_receives(wire::RankPlan& plan);
  ByPart group_by_part(const std::vector<uint32_t>& part_of_cell);
  std::vector<unsigned char*> own_slots(uint32_t part);
  void copy_part(uint32_t part, const uint64_t* rows, uint64_t count);
  void post_messages();
  void write_parts();
  std::vector<PartSummary> collect_part_summaries();
  const ColumnView& position(const char* axis) const;

  const Comm& c_;
  const std::string& dir_;
  const int64_t index_;
  const std::string& name_;
  const std::vector<ColumnView>& cols_;
  const ParallelWriteOptions& options_;
  SpeciesPlan& plan_;
  ParallelWriteReport& report_;
  uint64_t n_ = 0;    // this rank's particles
  uint64_t bpp_ = 0;  // bytes per particle
  AggregationOptions ao_;
  std::vector<uint32_t> cell_of_;  // per particle, its cell in mine_
  RankSummary mine_;
  std::vector<std::string> summaries_;  // rank 0: every rank's
  std::string my_plan_message_;
  std::vector<Outgoing> sending_;
  std::vector<Incoming> receiving_;
  std::vector<MPI_Request> sends_;
  std::vector<wire::PartReport> written_;
};

std::vector<PartSummary> SpeciesWrite::run() {
  const auto t0 = Clock::now();
  n_ = cols_.empty() ? 0 : cols_[0].count;
  for (const ColumnView& v : cols_) bpp_ += dtype_size(v.spec.dtype);
  plan_.total = allreduce(c_, n_, MPI_SUM);
  if (plan_.total == 0) return {};
  ao_ = options_.aggregation;
  ao_.bytes_per_particle = bpp_;
  ao_.target_bytes = ao_.target_bytes ? ao_.target_bytes : automatic_target_bytes(plan_.total * bpp_, size_t(c_.size));
  plan_.target_bytes = ao_.target_bytes;
  summarize();
  plan_parts();
  report_.plan_seconds = std::max(report_.plan_seconds, seconds_since(t0));
  const auto t1 = Clock::now();
  prepare_transfer();
  post_messages();
  report_.exchange_seconds = std::max(report_.exchange_seconds, seconds_since(t1));
  const auto t2 = Clock::now();
  write_parts();
  report_.write_seconds = std::max(report_.write_seconds, seconds_since(t2));
  return collect_part_summaries();
}

const ColumnView& SpeciesWrite::position(const char* axis) const {
  for (const ColumnView& v : cols_)
    if (v.spec.name == axis) return v;
  throw UsageError(std::string("position column '") + axis + "' is missing");
}

// 1. Summaries (cells of at most a tenth of a file) to rank 0.
void SpeciesWrite::summarize() {
  auto f = attempt([&] {
    mine_ = summarize_rank(position("x"), position("y"), position("z"), cell_cap(ao_.target_bytes, bpp_), &cell_of_);
  });
  agree(c_, f, "summarising positions of species '" + name_ + "'");
  mine_.node = node_of_this_rank(c_);
  summaries_ = gather_strings(c_, wire::encode(mine_));
}

// 2. Rank 0 plans; each rank learns the part of each of its cells, each aggregator
// the parts it writes and the ranks that feed them (a wire::RankPlan per rank).
void SpeciesWrite::plan_parts() {
  std::vector<std::string> plans;
  auto f = attempt([&] {
    if (c_.rank == 0) plans = plan_on_rank0();
  });
  agree(c_, f, "planning the aggregation of species '" + name_ + "'");
  broadcast(c_, &plan_.parts, 1);
  plan_.aggregator.resize(plan_.parts);
  broadcast(c_, plan_.aggregator.data(), plan_.parts);
  my_plan_message_ = scatter_strings(c_, plans);
}

// Rank 0: the aggregation plan from every rank's summary, into plan_; returns each rank's
// wire::RankPlan, encoded.
std::vector<std::string> SpeciesWrite::plan_on_rank0() {
  std::vector<RankSummary> ranks;
  for (const std::string& m : summaries_) ranks.push_back(wire::decode_rank_summary(m));
  summaries_.clear();
  AggregationPlan p = options_.method == AggregationMethod::aug ? plan_aug(ranks, ao_) : plan_adaptive(ranks, ao_);
  plan_.parts = uint32_t(p.leaves.size());
  plan_.balance = balance(p, bpp_);
  plan_.moved = particles_moved(p);
  plan_.aggregator.clear();
  for (const AggregationLeaf& l : p.leaves) plan_.aggregator.push_back(l.aggregator);
  std::vector<wire::RankPlan> per_rank(size_t(c_.size));
  for (int r = 0; r < c_.size; ++r) per_rank[size_t(r)].part_of_cell.assign(ranks[size_t(r)].cells.size(), 0);
  for (uint32_t k = 0; k < p.leaves.size(); ++k) {
    for (uint32_t a : p.leaves[k].atoms) per_rank[p.atoms[a].rank].part_of_cell[p.atoms[a].cell] = k;
    wire::IncomingPart in{k, {}};
    for (auto [r, cnt] : leaf_holders(p, p.leaves[k])) in.from.emplace_back(int(r), cnt);
    per_rank[p.leaves[k].aggregator].incoming.push_back(std::move(in));
  }
  std::vector<std::string> plans;
  for (const wire::RankPlan& rp : per_rank) plans.push_back(wire::encode(rp));
  return plans;
}

// 3. Exchange: per destination part (ascending), per column, one message set. Buffers
// are all allocated before the first message, so a failure (memory) is agreed on
// while no message is in flight.
void SpeciesWrite::prepare_transfer() {
  auto f = attempt([&] {
    wire::RankPlan my_plan = wire::decode_rank_plan(my_plan_message_);
    if (my_plan.part_of_cell.size() != mine_.cells.size())
      throw InternalError("the plan of species '" + name_ + "' has " + std::to_string(my_plan.part_of_cell.size()) +
                          " cells for this rank, which summarised " + std::to_string(mine_.cells.size()));
    allocate_receives(my_plan);
    const ByPart by = group_by_part(my_plan.part_of_cell);
    for (size_t k = 0; k < by.parts.size(); ++k)
      copy_part(by.parts[k], by.rows.data() + by.start[k], by.start[k + 1] - by.start[k]);
  });
  agree(c_, f, "preparing the transfer of species '" + name_ + "'");
}

// The buffers of the parts this rank aggregates, for every rank's particles of them.
void SpeciesWrite::allocate_receives(wire::RankPlan& plan) {
  for (wire::IncomingPart& part : plan.incoming) {
    Incoming in;
    in.part = part.part;
    in.from = std::move(part.from);
    for (const auto& fr : in.from) in.count += fr.second;
    for (const ColumnView& v : cols_) in.columns.emplace_back(in.count * dtype_size(v.spec.dtype));
    receiving_.push_back(std::move(in));
  }
}

// Local particles grouped by destination part: a counting sort over the parts this rank feeds.
SpeciesWrite::ByPart SpeciesWrite::group_by_part(const std::vector<uint32_t>& part_of_cell) {
  const size_t ncells = part_of_cell.size();
  ByPart by;
  std::vector<uint32_t>& fed = by.parts;
  fed = part_of_cell;
  std::sort(fed.begin(), fed.end());
  fed.erase(std::unique(fed.begin(), fed.end()), fed.end());
  std::vector<uint32_t> slot_of_cell(ncells);
  for (size_t cell = 0; cell < ncells; ++cell)
    slot_of_cell[cell] = uint32_t(std::lower_bound(fed.begin(), fed.end(), part_of_cell[cell]) - fed.begin());
  by.start.assign(fed.size() + 1, 0);
  for (uint64_t i = 0; i < n_; ++i) ++by.start[slot_of_cell[cell_of_[i]] + 1];
  for (size_t k = 0; k < fed.size(); ++k) by.start[k + 1] += by.start[k];
  by.rows.resize(n_);
  std::vector<uint64_t> fill(by.start.begin(), by.start.end() - 1);
  for (uint64_t i = 0; i < n_; ++i) by.rows[fill[slot_of_cell[cell_of_[i]]]++] = i;
  std::vector<uint32_t>().swap(cell_of_);
  return by;
}

// Where this rank's particles of `part` go, per column, when it aggregates the part
// itself: its slice of the receive buffers (filled in place, without a message); else null.
std::vector<unsigned char*> SpeciesWrite::own_slots(uint32_t part) {
  std::vector<unsigned char*> self(cols_.size(), nullptr);
  if (int(plan_.aggregator[part]) != c_.rank) return self;
  for (Incoming& in : receiving_) {
    if (in.part != part) continue;
    uint64_t at = 0;
    for (const auto& [r, cnt] : in.from) {
      if (r == c_.rank) break;
      at += cnt;
    }
    for (size_t col = 0; col < cols_.size(); ++col) self[col] = in.columns[col].data() + at * dtype_size(cols_[col].spec.dtype);
  }
  return self;
}

// Copies this rank's particles of `part` (rows[0..count)), column by column, to their
// place in the receive buffers or to buffers to send.
void SpeciesWrite::copy_part(uint32_t part, const uint64_t* rows, uint64_t count) {
  const std::vector<unsigned char*> self = own_slots(part);
  Outgoing o{part, {}};
  for (size_t col = 0; col < cols_.size(); ++col) {
    const ColumnView& v = cols_[col];
    unsigned char* dest = self[col];
    if (!dest) {
      o.columns.emplace_back(count * dtype_size(v.spec.dtype));
      dest = o.columns.back().data();
    }
    const int64_t stride = v.stride(), size = int64_t(dtype_size(v.spec.dtype));
    const unsigned char* src = static_cast<const unsigned char*>(v.data);
    // Rows ascend: the last one count - 1 past the first means a run (a rank feeding one part).
    if (count > 0 && stride == size && rows[count - 1] - rows[0] == count - 1) {
      std::memcpy(dest, src + int64_t(rows[0]) * stride, count * uint64_t(size));
      continue;
    }
    dispatch_dtype(v.spec.dtype, [&](auto tag) {
      using T = decltype(tag);
      T* out = reinterpret_cast<T*>(dest);
      for (uint64_t j = 0; j < count; ++j) std::memcpy(out + j, src + int64_t(rows[j]) * stride, sizeof(T));
    });
  }
  if (!o.columns.empty()) sending_.push_back(std::move(o));
}

void SpeciesWrite::post_messages() {
  for (const Outgoing& o : sending_)
    for (const auto& buf : o.columns) isend_bytes(buf.data(), buf.size(), int(plan_.aggregator[o.part]), kTagData, c_.comm, sends_);
  for (Incoming& in : receiving_) {
    uint64_t at = 0;
    for (const auto& [r, cnt] : in.from) {
      if (r != c_.rank)
        for (size_t col = 0; col < cols_.size(); ++col) {
          const size_t size = dtype_size(cols_[col].spec.dtype);
          irecv_bytes(in.columns[col].data() + at * size, cnt * size, r, kTagData, c_.comm, in.messages);
        }
      at += cnt;
    }
  }
}

// 4. Aggregators write their parts while the messages travel: first the parts of this
// rank's own particles alone, then the others, each once its messages are in (both in
// part order, so that the codecs the first part chooses do not depend on timing).
// Every rank posted its sends before waiting, so the waits cannot deadlock.
void SpeciesWrite::write_parts() {
  std::stable_sort(receiving_.begin(), receiving_.end(),
                   [](const Incoming& a, const Incoming& b) { return a.messages.empty() && !b.messages.empty(); });
  const std::string index_path = dir_ + "/" + species_index_name(index_, name_);
  auto f = attempt([&] {
    WriteOptions wo = options_.write;
    wo.layout.threads = threads_per_rank(c_, wo.layout.threads);
    wo.progress = nullptr;
    CodecMemo memo;  // codecs chosen once for this aggregator's parts of the species
    for (Incoming& in : receiving_) {
      wait_all(in.messages);
      std::vector<ColumnView> views;
      for (size_t col = 0; col < cols_.size(); ++col) {
        ColumnView v;
        v.spec = cols_[col].spec;
        v.data = in.columns[col].data();
        v.count = in.count;
        views.push_back(v);
      }
      WriteSummary w = write_particle_file(StepIndex::part_path(index_path, in.part), views, wo, &memo);
      written_.push_back({in.part, PartSummary{w.particle_count, w.file_bytes, w.bounds, w.columns, w.header_checksum}});
      in.columns.clear();
      if (!sending_.empty() && all_done(sends_)) sending_.clear();  // the send buffers back as soon as they are sent
    }
  });
  for (Incoming& in : receiving_) wait_all(in.messages);  // after a failure too: no message left in flight
  wait_all(sends_);
  sending_.clear();
  receiving_.clear();
  agree(c_, f, "writing the part files of species '" + name_ + "'");
}

// 5. Part summaries to rank 0, in part order.
std::vector<PartSummary> SpeciesWrite::collect_part_summaries() {
  std::vector<std::string> reports = gather_strings(c_, wire::encode(written_));
  std::vector<PartSummary> parts;
  auto f = attempt([&] {
    if (c_.rank != 0) return;
    parts.resize(plan_.parts);
    std::vector<bool> seen(plan_.parts, false);
    for (const std::string& m : reports)
      for (wire::PartReport& r : wire::decode_part_reports(m)) {
        if (r.part >= plan_.parts || seen[r.part])
          throw InternalError("part " + std::to_string(r.part) + " of species '" + name_ + "' is reported twice or out of range");
        seen[r.part] = true;
        parts[r.part] = std::move(r.summary);
      }
    for (uint32_t k = 0; k < plan_.parts; ++k)
      if (!seen[k]) throw InternalError("part " + std::to_string(k) + " of species '" + name_ + "' was not reported");
  });
  agree(c_, f, "collecting the part summaries of species '" + name_ + "'");
  return parts;
}

}  // namespace

std::vector<PartSummary> write_species(const Comm& c, const std::string& dir, int64_t index, const std::string& name,
                                       const std::vector<ColumnView>& cols, const ParallelWriteOptions& options,
                                       SpeciesPlan& plan, ParallelWriteReport& report) {
  return SpeciesWrite(c, dir, index, name, cols, options, plan, report).run();
}

}  // namespace motes
