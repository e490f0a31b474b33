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

FieldEntry write_one(const Comm& c, const std::string& dir, int64_t index, const FieldBlockInput& in,
                     const ParallelWriteOptions& options, ParallelWriteReport::Field& reported) {
  const fields::FieldSpec& spec = in.spec;
  const std::string name = "field '" + spec.name + "'";
  // 1. Every rank gives the same field, and a block that fits it.
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
  // 2. The blocks cover the grid once.
  std::vector<uint64_t> mine{in.offset[0], in.offset[1], in.offset[2], in.count[0], in.count[1], in.count[2]};
  if (mine[3] * mine[4] * mine[5] == 0) mine = {0, 0, 0, 0, 0, 0};
  std::vector<uint64_t> all(6 * size_t(c.size));
  MPI_Allgather(mine.data(), 6, MPI_UINT64_T, all.data(), 6, MPI_UINT64_T, c.comm);
  std::vector<fields::GridBox> boxes(size_t(c.size));
  for (size_t r = 0; r < boxes.size(); ++r)
    for (size_t a = 0; a < 3; ++a) boxes[r].offset[a] = all[6 * r + a], boxes[r].count[a] = all[6 * r + 3 + a];
  f = attempt([&] { fields::check_cover(spec.name, spec.dims, boxes); });
  agree(c, f, "placing the blocks of " + name);

  // 3. The parts and where this rank's samples go.
  const fields::FieldWriteOptions fo{options.write.compression, options.write.zstd_level, fields::kDefaultBlockBits,
                                     options.write.sync, threads_per_rank(c, options.write.layout.threads)};
  const uint64_t target = options.aggregation.target_bytes
                              ? options.aggregation.target_bytes
                              : automatic_target_bytes(spec.sample_count() * dtype_size(spec.dtype) * spec.component_count(), size_t(c.size));
  const fields::FieldPartition plan = fields::plan_field_parts(spec, fo.block_bits, target, c.size);
  const fields::HzOrder order(fields::Bitmask::guess(spec.dims, spec.ndim));
  const size_t size = dtype_size(spec.dtype), nc = spec.component_count();
  const fields::GridBox& box = boxes[size_t(c.rank)];
  int my_part = -1;
  for (uint32_t k = 0; k < plan.parts; ++k)
    if (plan.aggregator[k] == c.rank) my_part = int(k);

  fields::BoxRouting routing;
  std::vector<uint64_t> recv_counts(size_t(c.size), 0);     // samples from each rank (an aggregator)
  std::vector<std::vector<unsigned char>> part_values(nc);  // the aggregator's part, in HZ order
  std::vector<uint8_t> inside;
  f = attempt([&] {
    // The block's interior starts at sample 0 of the rank's values (values point at it), in
    // an array of array_dims samples: the offsets are taken relative to that first sample.
    routing = fields::route_box_blocks(order, plan, box, fo.threads, in.array_dims, {0, 0, 0});
    if (my_part >= 0) {
      const uint64_t n = plan.samples(uint32_t(my_part));
      for (auto& v : part_values) v.assign(n * size, 0);
      inside.assign(n, 0);
    }
  });
  agree(c, f, "routing the block of " + name);
  // How many samples each aggregator gets from each rank.
  std::vector<uint64_t> send_counts(size_t(c.size), 0);
  for (uint32_t k = 0; k < plan.parts; ++k) send_counts[size_t(plan.aggregator[k])] = routing.counts.empty() ? 0 : routing.counts[k];
  MPI_Alltoall(send_counts.data(), 1, MPI_UINT64_T, recv_counts.data(), 1, MPI_UINT64_T, c.comm);

  // 4. Exchange: per part, the offsets (u32) then each component's samples, in one order.
  auto gather_values = [&](uint32_t k, size_t comp, unsigned char* dst) {
    const uint64_t* idx = routing.index_in_array.data() + routing.start[k];
    const unsigned char* src = static_cast<const unsigned char*>(in.values[comp]);
    const uint64_t n = routing.counts[k];
    dispatch_dtype(spec.dtype, [&](auto tag) {  // a typed gather: no memcpy call per sample
      using T = decltype(tag);
      const T* s = reinterpret_cast<const T*>(src);
      T* d = reinterpret_cast<T*>(dst);
      for (uint64_t j = 0; j < n; ++j) d[j] = s[idx[j]];
    });
  };
  // Samples of `src` (n of them) to their offsets in the part (typed: no call per sample).
  auto scatter_values = [&](const uint32_t* off, uint64_t n, const unsigned char* src, unsigned char* part) {
    dispatch_dtype(spec.dtype, [&](auto tag) {
      using T = decltype(tag);
      const T* s = reinterpret_cast<const T*>(src);
      T* d = reinterpret_cast<T*>(part);
      for (uint64_t j = 0; j < n; ++j) d[off[j]] = s[j];
    });
  };
  std::vector<std::vector<unsigned char>> sending;
  std::vector<MPI_Request> sends, recvs;
  f = attempt([&] {
    if (box.size() == 0) return;
    for (uint32_t k = 0; k < plan.parts; ++k) {
      const uint64_t n = routing.counts[k];
      if (n == 0) continue;
      if (plan.aggregator[k] == c.rank) {  // this rank's own part: placed without a message
        const uint32_t* off = routing.offset_in_part.data() + routing.start[k];
        std::vector<unsigned char> tmp(n * size);
        for (size_t comp = 0; comp < nc; ++comp) {
          gather_values(k, comp, tmp.data());
          scatter_values(off, n, tmp.data(), part_values[comp].data());
        }
        for (uint64_t j = 0; j < n; ++j) inside[off[j]] = 1;
        continue;
      }
      for (size_t comp = 0; comp < nc; ++comp) {
        sending.emplace_back(n * size);
        gather_values(k, comp, sending.back().data());
      }
    }
  });
  agree(c, f, "preparing the transfer of " + name);
  {
    size_t s = 0;
    for (uint32_t k = 0; k < plan.parts && box.size(); ++k) {
      const uint64_t n = routing.counts[k];
      if (n == 0 || plan.aggregator[k] == c.rank) continue;
      const int dest = plan.aggregator[k];
      isend_bytes(routing.offset_in_part.data() + routing.start[k], n * 4, dest, kTagData, c.comm, sends);
      for (size_t comp = 0; comp < nc; ++comp, ++s) isend_bytes(sending[s].data(), n * size, dest, kTagData, c.comm, sends);
    }
  }
  std::vector<std::vector<uint32_t>> in_offsets(size_t(c.size));
  std::vector<std::vector<std::vector<unsigned char>>> in_values(size_t(c.size));
  if (my_part >= 0)
    for (int r = 0; r < c.size; ++r) {
      const uint64_t n = recv_counts[size_t(r)];
      if (n == 0 || r == c.rank) continue;
      in_offsets[size_t(r)].resize(n);
      irecv_bytes(in_offsets[size_t(r)].data(), n * 4, r, kTagData, c.comm, recvs);
      in_values[size_t(r)].resize(nc);
      for (size_t comp = 0; comp < nc; ++comp) {
        in_values[size_t(r)][comp].resize(n * size);
        irecv_bytes(in_values[size_t(r)][comp].data(), n * size, r, kTagData, c.comm, recvs);
      }
    }
  wait_all(recvs);  // every rank posted its sends first, so this cannot deadlock
  wait_all(sends);
  sending.clear();
  routing = {};

  // 5. The aggregator places what it received and writes its part.
  std::vector<PartWritten> written;
  f = attempt([&] {
    if (my_part < 0) return;
    const uint64_t n_part = plan.samples(uint32_t(my_part));
    for (int r = 0; r < c.size; ++r) {
      const auto& off = in_offsets[size_t(r)];
      for (uint64_t j = 0; j < off.size(); ++j) {
        if (off[j] >= n_part || inside[off[j]])
          throw InternalError(name + ": rank " + std::to_string(r) + " sent sample " + std::to_string(off[j]) + " of part " +
                              std::to_string(my_part) + " out of place or twice");
        inside[off[j]] = 1;
      }
      if (!off.empty())  // (nothing came from this rank, itself included)
        for (size_t comp = 0; comp < nc; ++comp)
          scatter_values(off.data(), off.size(), in_values[size_t(r)][comp].data(), part_values[comp].data());
      std::vector<uint32_t>().swap(in_offsets[size_t(r)]);
      in_values[size_t(r)].clear();
    }
    const std::string file = field_file_name(index, spec.name);
    const std::string path = dir + "/" + (plan.parts == 1 ? file : field_part_name(file, size_t(my_part)));
    std::vector<const void*> ptrs;
    for (const auto& v : part_values) ptrs.push_back(v.data());
    const fields::PartInfo part{uint32_t(my_part), plan.parts, plan.first_block[size_t(my_part)],
                                plan.first_block[size_t(my_part) + 1] - plan.first_block[size_t(my_part)]};
    const fields::FieldSummary s = fields::write_field_part(path, spec, ptrs, inside.data(), part, fo);
    written.push_back({uint64_t(my_part), s.header_checksum, s.file_bytes});
  });
  agree(c, f, "writing the part files of " + name);

  // 6. The parts' checksums to rank 0: the manifest entry.
  std::string msg(reinterpret_cast<const char*>(written.data()), written.size() * sizeof(PartWritten));
  std::vector<std::string> reports = gather_strings(c, msg);
  FieldEntry e;
  e.name = spec.name;
  e.file = field_file_name(index, spec.name);
  e.dtype = spec.dtype;
  e.ndim = spec.ndim;
  e.dims = spec.dims;
  e.components = spec.components;
  e.geometry = spec.geometry;
  reported = {spec.name, plan.parts, 0};
  f = attempt([&] {
    if (c.rank != 0) return;
    std::vector<PartWritten> parts(plan.parts);
    std::vector<bool> seen(plan.parts, false);
    for (const std::string& m : reports)
      for (size_t at = 0; at + sizeof(PartWritten) <= m.size(); at += sizeof(PartWritten)) {
        PartWritten p;
        std::memcpy(&p, m.data() + at, sizeof p);
        if (p.part >= plan.parts || seen[p.part]) throw InternalError(name + ": part " + std::to_string(p.part) + " reported twice");
        seen[p.part] = true;
        parts[p.part] = p;
      }
    for (uint32_t k = 0; k < plan.parts; ++k) {
      if (!seen[k]) throw InternalError(name + ": part " + std::to_string(k) + " was not reported");
      reported.file_bytes += parts[k].file_bytes;
      if (plan.parts == 1) e.checksum = parts[k].checksum;
      else e.part_checksums.push_back(parts[k].checksum);
    }
  });
  agree(c, f, "collecting the parts of " + name);
  broadcast(c, &reported.file_bytes, 1);
  return e;
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
    out.push_back(write_one(c, dir, index, b, options, r));
    report.file_bytes += r.file_bytes;
    report.fields.push_back(r);
  }
  return out;
}

}  // namespace motes
