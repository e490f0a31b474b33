// The collective write of grid fields from every rank's blocks (field_write.hpp), field by
// field in phases: the blocks checked and placed; the parts planned and each rank's samples
// routed to them; the exchange; each aggregator's part written; the parts' checksums
// collected on rank 0. Every phase's failures are agreed on (agree.hpp).
#include "motes/parallel/field_write.hpp"

#include <cstring>

#include "motes/dataset/manifest.hpp"
#include "motes/fields/partition.hpp"
#include "motes/parallel/agree.hpp"

namespace motes {

using namespace mpi;

namespace {

// What a rank reports of the part it wrote: (part, header checksum, file bytes).
struct PartWritten {
  uint64_t part = 0, checksum = 0, file_bytes = 0;
};

// 1. Every rank gives the same field, and a block that fits it.
void check_block(const Comm& c, const FieldBlockInput& in, const std::string& name) {
  const fields::FieldSpec& spec = in.spec;
  auto f = attempt([&] {
    spec.check();
    if (in.values.size() != spec.component_count())
      throw UsageError(name + ": " + std::to_string(in.values.size()) + " arrays for " + std::to_string(spec.component_count()) +
                       " components");
    const bool empty = in.count[0] * in.count[1] * in.count[2] == 0;
    for (size_t a = 0; a < 3 && !empty; ++a)
      if (in.array_dims[a] < in.count[a]) throw UsageError(name + ": the block's array is smaller than its count");
    for (const void* v : in.values)
      if (!v && !empty) throw UsageError(name + ": a component has no data pointer");
  });
  agree(c, f, "checking the block of " + name);
  check_ranks_agree(c, fields::spec_json(spec).dump() + "|" + dtype_name(spec.dtype), "the spec of " + name,
                    [](const std::string& ref, const std::string& other) {
                      return ": " + other.substr(0, 200) + " (rank 0: " + ref.substr(0, 200) + ")";
                    });
}

// 2. The blocks cover the grid once. Returns every rank's block.
std::vector<fields::GridBox> place_blocks(const Comm& c, const FieldBlockInput& in, const std::string& name) {
  std::vector<uint64_t> mine{in.offset[0], in.offset[1], in.offset[2], in.count[0], in.count[1], in.count[2]};
  if (mine[3] * mine[4] * mine[5] == 0) mine = {0, 0, 0, 0, 0, 0};
  std::vector<uint64_t> all(6 * size_t(c.size));
  MPI_Allgather(mine.data(), 6, MPI_UINT64_T, all.data(), 6, MPI_UINT64_T, c.comm);
  std::vector<fields::GridBox> boxes(size_t(c.size));
  for (size_t r = 0; r < boxes.size(); ++r)
    for (size_t a = 0; a < 3; ++a) boxes[r].offset[a] = all[6 * r + a], boxes[r].count[a] = all[6 * r + 3 + a];
  auto f = attempt([&] { fields::check_cover(in.spec.name, in.spec.dims, boxes); });
  agree(c, f, "placing the blocks of " + name);
  return boxes;
}

// One field written in parts from every rank's block, once the blocks are checked and
// placed (1, 2): the parts planned and this rank's samples routed to them (3), sent to
// the parts' aggregators (4), which place them and write their part (5); the parts'
// checksums collected on rank 0 (6).
class FieldPartsWrite {
 public:
  FieldPartsWrite(const Comm& c, const FieldBlockInput& in, const std::string& name, const fields::GridBox& box,
                  const ParallelWriteOptions& options);
  void route();
  void exchange();
  void write_part(const std::string& dir, int64_t index);
  FieldEntry collect(int64_t index, ParallelWriteReport::Field& reported);

 private:
  void prepare_sends();
  void post_and_wait();
  // The samples of this rank's block that fall in part k, component `comp`, into dst in
  // the routing's order (typed: no memcpy call per sample).
  void gather_values(uint32_t k, size_t comp, unsigned char* dst) const;
  // Samples of `src` (n of them) to their offsets in the part (typed: no call per sample).
  void scatter_values(const uint32_t* off, uint64_t n, const unsigned char* src, unsigned char* part) const;

  const Comm& c_;
  const FieldBlockInput& in_;
  const fields::FieldSpec& spec_;
  const std::string& name_;
  const fields::GridBox& box_;
  const fields::FieldWriteOptions fo_;
  const fields::FieldPartition plan_;
  const fields::HzOrder order_;
  const size_t size_, nc_;
  int my_part_ = -1;  // the part this rank aggregates, or -1
  fields::BoxRouting routing_;
  std::vector<uint64_t> recv_counts_;                // samples from each rank (an aggregator)
  std::vector<std::vector<unsigned char>> part_values_;  // the aggregator's part, in HZ order
  std::vector<uint8_t> inside_;
  std::vector<std::vector<unsigned char>> sending_;
  std::vector<std::vector<uint32_t>> in_offsets_;                 // per rank
  std::vector<std::vector<std::vector<unsigned char>>> in_values_;  // per rank, per component
  std::vector<PartWritten> written_;
};

// 3. The parts and where this rank's samples go.
FieldPartsWrite::FieldPartsWrite(const Comm& c, const FieldBlockInput& in, const std::string& name,
                                 const fields::GridBox& box, const ParallelWriteOptions& options)
    : c_(c),
      in_(in),
      spec_(in.spec),
      name_(name),
      box_(box),
      fo_{options.write.compression, options.write.zstd_level, fields::kDefaultBlockBits, options.write.sync,
          threads_per_rank(c, options.write.layout.threads)},
      plan_(fields::plan_field_parts(
          spec_, fo_.block_bits,
          options.aggregation.target_bytes
              ? options.aggregation.target_bytes
              : automatic_target_bytes(spec_.sample_count() * dtype_size(spec_.dtype) * spec_.component_count(), size_t(c.size)),
          c.size)),
      order_(fields::Bitmask::guess(spec_.dims, spec_.ndim)),
      size_(dtype_size(spec_.dtype)),
      nc_(spec_.component_count()),
      recv_counts_(size_t(c.size), 0),
      part_values_(nc_),
      in_offsets_(size_t(c.size)),
      in_values_(size_t(c.size)) {
  for (uint32_t k = 0; k < plan_.parts; ++k)
    if (plan_.aggregator[k] == c.rank) my_part_ = int(k);
}

void FieldPartsWrite::route() {
  auto f = attempt([&] {
    // The block's interior starts at sample 0 of the rank's values (values point at it), in
    // an array of array_dims samples: the offsets are taken relative to that first sample.
    routing_ = fields::route_box_blocks(order_, plan_, box_, fo_.threads, in_.array_dims, {0, 0, 0});
    if (my_part_ >= 0) {
      const uint64_t n = plan_.samples(uint32_t(my_part_));
      for (auto& v : part_values_) v.assign(n * size_, 0);
      inside_.assign(n, 0);
    }
  });
  agree(c_, f, "routing the block of " + name_);
  // How many samples each aggregator gets from each rank.
  std::vector<uint64_t> send_counts(size_t(c_.size), 0);
  for (uint32_t k = 0; k < plan_.parts; ++k)
    send_counts[size_t(plan_.aggregator[k])] = routing_.counts.empty() ? 0 : routing_.counts[k];
  MPI_Alltoall(send_counts.data(), 1, MPI_UINT64_T, recv_counts_.data(), 1, MPI_UINT64_T, c_.comm);
}

void FieldPartsWrite::gather_values(uint32_t k, size_t comp, unsigned char* dst) const {
  const uint64_t* idx = routing_.index_in_array.data() + routing_.start[k];
  const unsigned char* src = static_cast<const unsigned char*>(in_.values[comp]);
  const uint64_t n = routing_.counts[k];
  dispatch_dtype(spec_.dtype, [&](auto tag) {
    using T = decltype(tag);
    const T* s = reinterpret_cast<const T*>(src);
    T* d = reinterpret_cast<T*>(dst);
    for (uint64_t j = 0; j < n; ++j) d[j] = s[idx[j]];
  });
}

void FieldPartsWrite::scatter_values(const uint32_t* off, uint64_t n, const unsigned char* src, unsigned char* part) const {
  dispatch_dtype(spec_.dtype, [&](auto tag) {
    using T = decltype(tag);
    const T* s = reinterpret_cast<const T*>(src);
    T* d = reinterpret_cast<T*>(part);
    for (uint64_t j = 0; j < n; ++j) d[off[j]] = s[j];
  });
}

// 4. Exchange: per part, the offsets (u32) then each component's samples, in one order.
void FieldPartsWrite::exchange() {
  prepare_sends();
  post_and_wait();
}

// The samples of this rank's own part placed without a message; those of the others
// gathered into send buffers (all allocated before any message: a failure is agreed on).
void FieldPartsWrite::prepare_sends() {
  auto f = attempt([&] {
    if (box_.size() == 0) return;
    for (uint32_t k = 0; k < plan_.parts; ++k) {
      const uint64_t n = routing_.counts[k];
      if (n == 0) continue;
      if (plan_.aggregator[k] == c_.rank) {  // this rank's own part: placed without a message
        const uint32_t* off = routing_.offset_in_part.data() + routing_.start[k];
        std::vector<unsigned char> tmp(n * size_);
        for (size_t comp = 0; comp < nc_; ++comp) {
          gather_values(k, comp, tmp.data());
          scatter_values(off, n, tmp.data(), part_values_[comp].data());
        }
        for (uint64_t j = 0; j < n; ++j) inside_[off[j]] = 1;
        continue;
      }
      for (size_t comp = 0; comp < nc_; ++comp) {
        sending_.emplace_back(n * size_);
        gather_values(k, comp, sending_.back().data());
      }
    }
  });
  agree(c_, f, "preparing the transfer of " + name_);
}

void FieldPartsWrite::post_and_wait() {
  std::vector<MPI_Request> sends, recvs;
  size_t s = 0;
  for (uint32_t k = 0; k < plan_.parts && box_.size(); ++k) {
    const uint64_t n = routing_.counts[k];
    if (n == 0 || plan_.aggregator[k] == c_.rank) continue;
    const int dest = plan_.aggregator[k];
    isend_bytes(routing_.offset_in_part.data() + routing_.start[k], n * 4, dest, kTagData, c_.comm, sends);
    for (size_t comp = 0; comp < nc_; ++comp, ++s) isend_bytes(sending_[s].data(), n * size_, dest, kTagData, c_.comm, sends);
  }
  if (my_part_ >= 0)
    for (int r = 0; r < c_.size; ++r) {
      const uint64_t n = recv_counts_[size_t(r)];
      if (n == 0 || r == c_.rank) continue;
      in_offsets_[size_t(r)].resize(n);
      irecv_bytes(in_offsets_[size_t(r)].data(), n * 4, r, kTagData, c_.comm, recvs);
      in_values_[size_t(r)].resize(nc_);
      for (size_t comp = 0; comp < nc_; ++comp) {
        in_values_[size_t(r)][comp].resize(n * size_);
        irecv_bytes(in_values_[size_t(r)][comp].data(), n * size_, r, kTagData, c_.comm, recvs);
      }
    }
  wait_all(recvs);  // every rank posted its sends first, so this cannot deadlock
  wait_all(sends);
  sending_.clear();
  routing_ = {};
}

// 5. The aggregator places what it received and writes its part.
void FieldPartsWrite::write_part(const std::string& dir, int64_t index) {
  auto f = attempt([&] {
    if (my_part_ < 0) return;
    const uint64_t n_part = plan_.samples(uint32_t(my_part_));
    for (int r = 0; r < c_.size; ++r) {
      const auto& off = in_offsets_[size_t(r)];
      for (uint64_t j = 0; j < off.size(); ++j) {
        if (off[j] >= n_part || inside_[off[j]])
          throw InternalError(name_ + ": rank " + std::to_string(r) + " sent sample " + std::to_string(off[j]) + " of part " +
                              std::to_string(my_part_) + " out of place or twice");
        inside_[off[j]] = 1;
      }
      if (!off.empty())  // (nothing came from this rank, itself included)
        for (size_t comp = 0; comp < nc_; ++comp)
          scatter_values(off.data(), off.size(), in_values_[size_t(r)][comp].data(), part_values_[comp].data());
      std::vector<uint32_t>().swap(in_offsets_[size_t(r)]);
      in_values_[size_t(r)].clear();
    }
    const std::string file = field_file_name(index, spec_.name);
    const std::string path = dir + "/" + (plan_.parts == 1 ? file : field_part_name(file, size_t(my_part_)));
    std::vector<const void*> ptrs;
    for (const auto& v : part_values_) ptrs.push_back(v.data());
    const fields::PartInfo part{uint32_t(my_part_), plan_.parts, plan_.first_block[size_t(my_part_)],
                                plan_.first_block[size_t(my_part_) + 1] - plan_.first_block[size_t(my_part_)]};
    const fields::FieldSummary s = fields::write_field_part(path, spec_, ptrs, inside_.data(), part, fo_);
    written_.push_back({uint64_t(my_part_), s.header_checksum, s.file_bytes});
  });
  agree(c_, f, "writing the part files of " + name_);
}

// 6. The parts' checksums to rank 0: the manifest entry.
FieldEntry FieldPartsWrite::collect(int64_t index, ParallelWriteReport::Field& reported) {
  std::string msg(reinterpret_cast<const char*>(written_.data()), written_.size() * sizeof(PartWritten));
  std::vector<std::string> reports = gather_strings(c_, msg);
  FieldEntry e;
  e.name = spec_.name;
  e.file = field_file_name(index, spec_.name);
  e.dtype = spec_.dtype;
  e.ndim = spec_.ndim;
  e.dims = spec_.dims;
  e.components = spec_.components;
  e.geometry = spec_.geometry;
  reported = {spec_.name, plan_.parts, 0};
  auto f = attempt([&] {
    if (c_.rank != 0) return;
    std::vector<PartWritten> parts(plan_.parts);
    std::vector<bool> seen(plan_.parts, false);
    for (const std::string& m : reports)
      for (size_t at = 0; at + sizeof(PartWritten) <= m.size(); at += sizeof(PartWritten)) {
        PartWritten p;
        std::memcpy(&p, m.data() + at, sizeof p);
        if (p.part >= plan_.parts || seen[p.part]) throw InternalError(name_ + ": part " + std::to_string(p.part) + " reported twice");
        seen[p.part] = true;
        parts[p.part] = p;
      }
    for (uint32_t k = 0; k < plan_.parts; ++k) {
      if (!seen[k]) throw InternalError(name_ + ": part " + std::to_string(k) + " was not reported");
      reported.file_bytes += parts[k].file_bytes;
      if (plan_.parts == 1) e.checksum = parts[k].checksum;
      else e.part_checksums.push_back(parts[k].checksum);
    }
  });
  agree(c_, f, "collecting the parts of " + name_);
  broadcast(c_, &reported.file_bytes, 1);
  return e;
}

// One field of write_field_blocks: its phases in order.
FieldEntry write_field_from_blocks(const Comm& c, const std::string& dir, int64_t index, const FieldBlockInput& in,
                                   const ParallelWriteOptions& options, ParallelWriteReport::Field& reported) {
  const std::string name = "field '" + in.spec.name + "'";
  check_block(c, in, name);
  const std::vector<fields::GridBox> boxes = place_blocks(c, in, name);
  FieldPartsWrite w(c, in, name, boxes[size_t(c.rank)], options);
  w.route();
  w.exchange();
  w.write_part(dir, index);
  return w.collect(index, reported);
}

}  // namespace

std::vector<FieldEntry> write_field_blocks(const Comm& c, const std::string& dir, int64_t index,
                                           const std::vector<FieldBlockInput>& blocks, const ParallelWriteOptions& options,
                                           ParallelWriteReport& report) {
  std::string names;
  for (const FieldBlockInput& b : blocks) names += b.spec.name + "\n";
  check_ranks_agree(c, names, "the fields given as blocks", [](const std::string& ref, const std::string& other) {
    return " names " + other.substr(0, 200) + " (rank 0: " + ref.substr(0, 200) + ")";
  });
  std::vector<FieldEntry> out;
  for (const FieldBlockInput& b : blocks) {
    ParallelWriteReport::Field r;
    out.push_back(write_field_from_blocks(c, dir, index, b, options, r));
    report.file_bytes += r.file_bytes;
    report.fields.push_back(r);
  }
  return out;
}

}  // namespace motes
