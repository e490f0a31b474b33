// The collective write (parallel.hpp): ranks agree on the step and schema, summarise
// their particles for rank 0, which plans the aggregation; columns travel to the
// aggregators, which write the part files; rank 0 writes the step index and publishes
// the step in the manifest. Every stage's failures are agreed on (agree.hpp).
#include "motes/parallel/parallel.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>

#include "motes/parallel/agree.hpp"
#include "motes/parallel/comm.hpp"
#include "motes/parallel/field_write.hpp"
#include "motes/parallel/wire.hpp"
#include "motes/particles/step_index.hpp"

namespace fs = std::filesystem;

namespace motes {

using namespace mpi;

namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// Collective: UsageError on every rank unless all ranks pass the same species and columns.
void check_same_schema(const Comm& c, const std::vector<SpeciesColumns>& species) {
  wire::Schema mine;
  for (const auto& [name, cols] : species) {
    mine.push_back({name, {}});
    for (const ColumnView& v : cols) mine.back().columns.push_back({v.spec.name, v.spec.dtype});
  }
  check_ranks_agree(c, wire::encode(mine), "the schema of the step", [](const std::string& ref, const std::string& other) {
    return ": " + wire::schema_difference(wire::decode_schema(ref), wire::decode_schema(other));
  });
}

// Collective: UsageError on every rank unless all ranks write the same step index,
// time and attributes (a rank one step behind would otherwise write into another step).
void check_same_step(const Comm& c, int64_t index, double time, const nlohmann::json& attributes) {
  check_ranks_agree(c, wire::encode(wire::Step{index, time, attributes.dump()}), "the step being written",
                    [](const std::string& ref, const std::string& other) {
                      const int64_t a = wire::decode_step(ref).index, b = wire::decode_step(other).index;
                      return a != b ? " writes step " + std::to_string(b) + " (rank 0: step " + std::to_string(a) + ")"
                                    : std::string(" writes a different time or attributes");
                    });
}

struct SpeciesPlan {
  uint64_t total = 0;
  uint64_t target_bytes = 0;
  uint32_t parts = 0;
  std::vector<uint32_t> aggregator;  // per part
  Balance balance;
  uint64_t moved = 0;
};

// Writes one species' parts. Returns, on rank 0, the part summaries in part order.
std::vector<PartSummary> write_species(const Comm& c, const std::string& dir,
                                       int64_t index, const std::string& name, const std::vector<ColumnView>& cols,
                                       const ParallelWriteOptions& options, SpeciesPlan& plan,
                                       ParallelWriteReport& report) {
  auto t0 = Clock::now();
  const uint64_t n = cols.empty() ? 0 : cols[0].count;
  uint64_t bpp = 0;
  for (const ColumnView& v : cols) bpp += dtype_size(v.spec.dtype);
  plan.total = allreduce(c, n, MPI_SUM);
  if (plan.total == 0) return {};

  AggregationOptions ao = options.aggregation;
  ao.bytes_per_particle = bpp;
  ao.target_bytes = ao.target_bytes ? ao.target_bytes : automatic_target_bytes(plan.total * bpp, size_t(c.size));
  plan.target_bytes = ao.target_bytes;

  // 1. Summaries (cells of at most a tenth of a file) to rank 0.
  auto find = [&](const char* axis) -> const ColumnView& {
    for (const ColumnView& v : cols)
      if (v.spec.name == axis) return v;
    throw UsageError(std::string("position column '") + axis + "' is missing");
  };
  std::vector<uint32_t> cell_of;
  RankSummary mine;
  auto f = attempt([&] { mine = summarize_rank(find("x"), find("y"), find("z"), cell_cap(ao.target_bytes, bpp), &cell_of); });
  agree(c, f, "summarising positions of species '" + name + "'");
  mine.node = node_of_this_rank(c);
  std::vector<std::string> summaries = gather_strings(c, wire::encode(mine));

  // 2. Rank 0 plans; each rank learns the part of each of its cells, each aggregator
  // the parts it writes and the ranks that feed them (a wire::RankPlan per rank).
  std::vector<std::string> plans;
  f = attempt([&] {
    if (c.rank != 0) return;
    std::vector<RankSummary> ranks;
    for (const std::string& m : summaries) ranks.push_back(wire::decode_rank_summary(m));
    summaries.clear();
    AggregationPlan p = options.method == AggregationMethod::aug ? plan_aug(ranks, ao) : plan_adaptive(ranks, ao);
    plan.parts = uint32_t(p.leaves.size());
    plan.balance = balance(p, bpp);
    plan.moved = particles_moved(p);
    plan.aggregator.clear();
    for (const AggregationLeaf& l : p.leaves) plan.aggregator.push_back(l.aggregator);
    std::vector<wire::RankPlan> per_rank(size_t(c.size));
    for (int r = 0; r < c.size; ++r) per_rank[size_t(r)].part_of_cell.assign(ranks[size_t(r)].cells.size(), 0);
    for (uint32_t k = 0; k < p.leaves.size(); ++k) {
      for (uint32_t a : p.leaves[k].atoms) per_rank[p.atoms[a].rank].part_of_cell[p.atoms[a].cell] = k;
      wire::IncomingPart in{k, {}};
      for (auto [r, cnt] : leaf_holders(p, p.leaves[k])) in.from.emplace_back(int(r), cnt);
      per_rank[p.leaves[k].aggregator].incoming.push_back(std::move(in));
    }
    for (const wire::RankPlan& rp : per_rank) plans.push_back(wire::encode(rp));
  });
  agree(c, f, "planning the aggregation of species '" + name + "'");
  broadcast(c, &plan.parts, 1);
  plan.aggregator.resize(plan.parts);
  broadcast(c, plan.aggregator.data(), plan.parts);
  const std::string my_plan_message = scatter_strings(c, plans);
  plans.clear();
  report.plan_seconds = std::max(report.plan_seconds, seconds_since(t0));

  // 3. Exchange: per destination part (ascending), per column, one message set. Buffers
  // are all allocated before the first message, so a failure (memory) is agreed on
  // while no message is in flight.
  auto t1 = Clock::now();
  const size_t ncells = mine.cells.size();
  struct Outgoing {
    uint32_t part;
    std::vector<std::vector<unsigned char>> columns;
  };
  struct Incoming {
    uint32_t part;
    uint64_t count = 0;
    std::vector<std::pair<int, uint64_t>> from;  // (rank, particles), ascending ranks
    std::vector<std::vector<unsigned char>> columns;
    std::vector<MPI_Request> messages;  // the receives of the other ranks' particles
  };
  std::vector<Outgoing> sending;
  std::vector<Incoming> receiving;
  f = attempt([&] {
    wire::RankPlan my_plan = wire::decode_rank_plan(my_plan_message);
    if (my_plan.part_of_cell.size() != ncells)
      throw InternalError("the plan of species '" + name + "' has " + std::to_string(my_plan.part_of_cell.size()) +
                          " cells for this rank, which summarised " + std::to_string(ncells));
    const std::vector<uint32_t>& part_of_cell = my_plan.part_of_cell;
    for (wire::IncomingPart& part : my_plan.incoming) {
      Incoming in;
      in.part = part.part;
      in.from = std::move(part.from);
      for (const auto& fr : in.from) in.count += fr.second;
      for (const ColumnView& v : cols) in.columns.emplace_back(in.count * dtype_size(v.spec.dtype));
      receiving.push_back(std::move(in));
    }
    // Local particles grouped by destination part: a counting sort over the parts this rank feeds.
    std::vector<uint32_t> fed(part_of_cell);
    std::sort(fed.begin(), fed.end());
    fed.erase(std::unique(fed.begin(), fed.end()), fed.end());
    std::vector<uint32_t> slot_of_cell(ncells);
    for (size_t cell = 0; cell < ncells; ++cell)
      slot_of_cell[cell] = uint32_t(std::lower_bound(fed.begin(), fed.end(), part_of_cell[cell]) - fed.begin());
    std::vector<uint64_t> start(fed.size() + 1, 0);
    for (uint64_t i = 0; i < n; ++i) ++start[slot_of_cell[cell_of[i]] + 1];
    for (size_t k = 0; k < fed.size(); ++k) start[k + 1] += start[k];
    std::vector<uint64_t> order(n), fill(start.begin(), start.end() - 1);
    for (uint64_t i = 0; i < n; ++i) order[fill[slot_of_cell[cell_of[i]]]++] = i;
    std::vector<uint32_t>().swap(cell_of);
    for (size_t k = 0; k < fed.size(); ++k) {
      const uint64_t* idx = order.data() + start[k];
      const uint64_t count = start[k + 1] - start[k];
      // A part this rank aggregates itself is filled in place, without a message.
      std::vector<unsigned char*> self(cols.size(), nullptr);
      if (int(plan.aggregator[fed[k]]) == c.rank) {
        for (Incoming& in : receiving) {
          if (in.part != fed[k]) continue;
          uint64_t at = 0;
          for (const auto& [r, cnt] : in.from) {
            if (r == c.rank) break;
            at += cnt;
          }
          for (size_t col = 0; col < cols.size(); ++col)
            self[col] = in.columns[col].data() + at * dtype_size(cols[col].spec.dtype);
        }
      }
      Outgoing o{fed[k], {}};
      for (size_t col = 0; col < cols.size(); ++col) {
        const ColumnView& v = cols[col];
        unsigned char* dest = self[col];
        if (!dest) {
          o.columns.emplace_back(count * dtype_size(v.spec.dtype));
          dest = o.columns.back().data();
        }
        dispatch_dtype(v.spec.dtype, [&](auto tag) {
          using T = decltype(tag);
          const int64_t stride = v.stride();
          const unsigned char* src = static_cast<const unsigned char*>(v.data);
          T* out = reinterpret_cast<T*>(dest);
          for (uint64_t j = 0; j < count; ++j) std::memcpy(out + j, src + int64_t(idx[j]) * stride, sizeof(T));
        });
      }
      if (!o.columns.empty()) sending.push_back(std::move(o));
    }
  });
  agree(c, f, "preparing the transfer of species '" + name + "'");
  std::vector<MPI_Request> sends;
  for (const Outgoing& o : sending)
    for (const auto& buf : o.columns) isend_bytes(buf.data(), buf.size(), int(plan.aggregator[o.part]), kTagData, c.comm, sends);
  for (Incoming& in : receiving) {
    uint64_t at = 0;
    for (const auto& [r, cnt] : in.from) {
      if (r != c.rank)
        for (size_t col = 0; col < cols.size(); ++col) {
          const size_t size = dtype_size(cols[col].spec.dtype);
          irecv_bytes(in.columns[col].data() + at * size, cnt * size, r, kTagData, c.comm, in.messages);
        }
      at += cnt;
    }
  }
  report.exchange_seconds = std::max(report.exchange_seconds, seconds_since(t1));

  // 4. Aggregators write their parts while the messages travel: first the parts of this
  // rank's own particles alone, then the others, each once its messages are in (both in
  // part order, so that the codecs the first part chooses do not depend on timing).
  // Every rank posted its sends before waiting, so the waits cannot deadlock.
  auto t2 = Clock::now();
  std::stable_sort(receiving.begin(), receiving.end(),
                   [](const Incoming& a, const Incoming& b) { return a.messages.empty() && !b.messages.empty(); });
  const std::string index_path = dir + "/" + species_index_name(index, name);
  std::vector<wire::PartReport> written;
  f = attempt([&] {
    WriteOptions wo = options.write;
    wo.layout.threads = threads_per_rank(c, wo.layout.threads);
    wo.progress = nullptr;
    CodecMemo memo;  // codecs chosen once for this aggregator's parts of the species
    for (Incoming& in : receiving) {
      wait_all(in.messages);
      std::vector<ColumnView> views;
      for (size_t col = 0; col < cols.size(); ++col) {
        ColumnView v;
        v.spec = cols[col].spec;
        v.data = in.columns[col].data();
        v.count = in.count;
        views.push_back(v);
      }
      WriteSummary w = write_particle_file(StepIndex::part_path(index_path, in.part), views, wo, &memo);
      written.push_back({in.part, PartSummary{w.particle_count, w.file_bytes, w.bounds, w.columns, w.header_checksum}});
      in.columns.clear();
      if (!sending.empty() && all_done(sends)) sending.clear();  // the send buffers back as soon as they are sent
    }
  });
  for (Incoming& in : receiving) wait_all(in.messages);  // after a failure too: no message left in flight
  wait_all(sends);
  sending.clear();
  receiving.clear();
  agree(c, f, "writing the part files of species '" + name + "'");
  report.write_seconds = std::max(report.write_seconds, seconds_since(t2));

  // 5. Part summaries to rank 0, in part order.
  std::vector<std::string> reports = gather_strings(c, wire::encode(written));
  std::vector<PartSummary> parts;
  f = attempt([&] {
    if (c.rank != 0) return;
    parts.resize(plan.parts);
    std::vector<bool> seen(plan.parts, false);
    for (const std::string& m : reports)
      for (wire::PartReport& r : wire::decode_part_reports(m)) {
        if (r.part >= plan.parts || seen[r.part])
          throw InternalError("part " + std::to_string(r.part) + " of species '" + name + "' is reported twice or out of range");
        seen[r.part] = true;
        parts[r.part] = std::move(r.summary);
      }
    for (uint32_t k = 0; k < plan.parts; ++k)
      if (!seen[k]) throw InternalError("part " + std::to_string(k) + " of species '" + name + "' was not reported");
  });
  agree(c, f, "collecting the part summaries of species '" + name + "'");
  return parts;
}

}  // namespace

void open_dataset_parallel(MPI_Comm comm, const std::string& dir) {
  Comm c(comm);
  auto f = attempt([&] {
    if (c.rank == 0) Dataset::create(dir, default_lock_timeout());
  });
  agree(c, f, "opening dataset '" + dir + "'");
}

ParallelWriteReport write_step_parallel(MPI_Comm comm, const std::string& dir, int64_t index, double time,
                                        const nlohmann::json& attributes, const std::vector<SpeciesColumns>& species,
                                        const ParallelWriteOptions& options, const std::vector<FieldInput>& fields,
                                        const std::vector<FieldBlockInput>& field_blocks) {
  Comm c(comm);
  auto t0 = Clock::now();
  ParallelWriteReport report;
  // Local checks first, then agreement on the schema, then the dataset (rank 0 only).
  auto f = attempt([&] {
    for (const auto& [name, cols] : species) validate_columns(cols);
    check_layout_options(options.write.layout);
  });
  agree(c, f, "checking the columns of step " + std::to_string(index));
  check_same_step(c, index, time, attributes);
  check_same_schema(c, species);
  // Rank 0 holds the dataset's lock from here to the manifest update (one writer at a time).
  std::optional<Dataset> dataset;
  std::optional<Dataset::Writing> writing;
  f = attempt([&] {
    if (c.rank != 0) return;
    dataset = Dataset::create(dir, options.lock_timeout);
    std::vector<std::string> names, field_names;
    for (const auto& sp : species) names.push_back(sp.first);
    for (const FieldInput& fi : fields) {
      fi.spec.check();
      field_names.push_back(fi.spec.name);
    }
    for (const FieldBlockInput& fb : field_blocks) field_names.push_back(fb.spec.name);
    dataset->check_new_step(index, time, attributes, names, field_names);
    writing.emplace(dataset->begin_writing("write step " + std::to_string(index) + " of '" + dir + "'"));
    dataset->check_new_step(index, time, attributes, names, field_names);  // against the manifest on disk
    dataset->make_step_directory(*writing, index, options.write.sync);
  });
  agree(c, f, "opening dataset '" + dir + "' for step " + std::to_string(index));

  // From here on a failure leaves the step invisible; rank 0 removes what it created.
  auto cleanup = [&] {
    if (c.rank == 0 && writing) dataset->remove_step_directory(*writing, index);
  };
  // The index kinds of the series (rank 0 knows the manifest), the same on every rank, so
  // every part of this step gets them (Dataset::apply_series_index_kinds).
  std::vector<SpeciesColumns> series_species = species;
  {
    std::vector<uint8_t> kinds;
    if (c.rank == 0)
      for (auto& [name, cols] : series_species) {
        dataset->apply_series_index_kinds(index, name, cols);
        for (const ColumnView& v : cols) kinds.push_back(uint8_t(v.spec.index));
      }
    kinds.resize([&] {
      size_t n = 0;
      for (const auto& sp : species) n += sp.second.size();
      return n;
    }());
    broadcast(c, kinds.data(), kinds.size());
    size_t k = 0;
    for (auto& [name, cols] : series_species)
      for (ColumnView& v : cols) v.spec.index = IndexKind(kinds[k++]);
  }
  try {
    StepEntry entry;
    entry.index = index;
    entry.time = time;
    entry.attributes = attributes;
    for (const auto& [name, cols] : series_species) {
      SpeciesPlan plan;
      std::vector<PartSummary> parts =
          write_species(c, dir, index, name, cols, options, plan, report);
      ParallelWriteReport::Species rs{name, plan.total, plan.parts, plan.target_bytes, plan.balance, plan.moved};
      auto t3 = Clock::now();
      f = attempt([&] {
        if (c.rank != 0) return;
        std::vector<ColumnSpec> schema;
        for (const ColumnView& v : cols) schema.push_back(ColumnSpec{v.spec.name, v.spec.dtype, IndexKind::none, v.spec.unit, v.spec.error_bound});
        SpeciesEntry e = dataset->finish_species(*writing, index, name, std::move(schema), parts, options.write);
        if (parts.empty()) report.file_bytes += fs::file_size(dataset->path_of(e));
        for (const PartSummary& p : parts) report.file_bytes += p.file_bytes;
        entry.species.push_back(std::move(e));
      });
      agree(c, f, "writing the step index of species '" + name + "'");
      report.commit_seconds = std::max(report.commit_seconds, seconds_since(t3));
      broadcast(c, &rs.parts, 1);
      broadcast(c, &rs.balance.files, 1);
      broadcast(c, &rs.moved, 1);
      double b[3] = {rs.balance.mean, rs.balance.sd, rs.balance.max};
      broadcast(c, b, 3);
      rs.balance.mean = b[0], rs.balance.sd = b[1], rs.balance.max = b[2];
      report.species.push_back(rs);
    }
    f = attempt([&] {
      if (c.rank != 0) return;
      for (const FieldInput& fi : fields) entry.fields.push_back(dataset->write_field(*writing, index, fi, options.write));
    });
    agree(c, f, "writing the fields of step " + std::to_string(index));
    for (FieldEntry& e : write_field_blocks(c, dir, index, field_blocks, options, report)) entry.fields.push_back(std::move(e));
    auto t4 = Clock::now();
    f = attempt([&] {
      if (c.rank == 0) dataset->commit_step(*writing, std::move(entry), options.write.sync);
    });
    agree(c, f, "publishing step " + std::to_string(index) + " in the manifest");
    report.commit_seconds = std::max(report.commit_seconds, seconds_since(t4));
  } catch (...) {
    cleanup();
    throw;
  }
  broadcast(c, &report.file_bytes, 1);
  report.total_seconds = seconds_since(t0);
  double local[5] = {report.plan_seconds, report.exchange_seconds, report.write_seconds, report.commit_seconds,
                     report.total_seconds};
  double slowest[5];
  allreduce(c, local, slowest, 5, MPI_MAX);
  report.plan_seconds = slowest[0], report.exchange_seconds = slowest[1], report.write_seconds = slowest[2];
  report.commit_seconds = slowest[3], report.total_seconds = slowest[4];
  return report;
}

}  // namespace motes
