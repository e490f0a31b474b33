// Particle files: write_file, File (one particle file), Collection (a file or the part
// files of a step index), and the cache of decoded blocks.
#include <nanobind/stl/function.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <cstring>
#include <functional>

#include "common.hpp"
#include "motes/container/block_stream.hpp"
#include "motes/particles/collection.hpp"
#include "motes/particles/kept.hpp"
#include "motes/particles/id_index.hpp"
#include "motes/particles/track.hpp"
#include "motes/particles/reader.hpp"
#include "motes/particles/writer.hpp"

namespace motes_py {

namespace {
using IdArray = nb::ndarray<const int64_t, nb::ndim<1>, nb::device::cpu>;
using RowArray = nb::ndarray<const int64_t, nb::ndim<1>, nb::c_contig, nb::device::cpu>;
}  // namespace


// The columns of a particle file as dicts (File.columns, File.column_info).
static nb::list column_info(const motes::ParticleFile& f, bool storage) {
  nb::list out;
  for (size_t i = 0; i < f.schema().size(); ++i) {
    const motes::ColumnIndex& c = f.index(i);
    nb::dict d;
    d["name"] = c.spec.name;
    d["dtype"] = motes::dtype_name(c.spec.dtype);
    d["index"] = index_kind_name(c.index);
    d["unit"] = c.spec.unit;
    d["error_bound"] = c.spec.error_bound;
    d["min"] = c.global_min;
    d["max"] = c.global_max;
    d["nan_count"] = c.nan_count;
    d["bitmap_dictionary"] = c.dictionary_size;
    if (storage) {
      const motes::BlockStream& v = f.values(i);
      d["codec"] = v.pipelines();
      d["stored_bytes"] = v.stored_bytes();
      d["raw_bytes"] = v.count() * motes::dtype_size(c.spec.dtype);
      if (const motes::BlockStream* codes = f.codes(i)) {
        d["codes_codec"] = codes->pipelines();
        d["codes_stored_bytes"] = codes->stored_bytes();
      }
    }
    out.append(d);
  }
  return out;
}

namespace {

nb::dict sizes(const motes::ParticleFile& f) {
  auto s = f.stats();
  nb::dict d;
  d["file_bytes"] = s.file_bytes;
  d["data_bytes"] = s.data_bytes;
  d["raw_data_bytes"] = s.raw_data_bytes;
  d["index_bytes"] = s.index_bytes;
  d["padding_bytes"] = s.padding_bytes;
  d["quantile_index_bytes"] = s.quantile_bytes;
  d["tail_index_bytes"] = s.tail_bytes;
  return d;
}

nb::object read_column(const motes::ParticleFile& f, const std::string& name, uint64_t begin, std::optional<uint64_t> end) {
  const size_t c = f.column(name);
  const uint64_t n = f.particle_count();
  const uint64_t e = std::min(end.value_or(n), n), b = std::min(begin, e);
  auto [arr, data] = new_array(f.schema()[c].dtype, e - b);
  nb::gil_scoped_release release;
  f.values(c).read(b, e - b, data);
  return arr;
}

// A tail index's counts, bytes and cover (format 2.3) as a dict.
nb::dict tail_dict(const motes::ParticleFile& f, const motes::TailIndex& t) {
  nb::dict e;
  e["low_count"] = t.low_count();
  e["high_count"] = t.high_count();
  e["stored_bytes"] = t.stored_bytes();
  if (!t.cover_streams().empty()) {
    nb::dict cover;
    cover["low"] = t.low_covered();
    cover["high"] = t.high_covered();
    nb::list columns;
    for (const auto& [c, s] : t.cover_streams()) columns.append(f.schema()[c].name);
    cover["columns"] = columns;
    e["cover"] = cover;
  }
  return e;
}

nb::dict tail_indexes(const motes::ParticleFile& f) {
  nb::dict d;
  for (size_t i = 0; i < f.schema().size(); ++i)
    if (const motes::TailIndex* t = f.tail_index(i)) d[f.schema()[i].name.c_str()] = tail_dict(f, *t);
  return d;
}

// Derived quantities (format 2.4): name -> expression, statistics and tail index (or None).
nb::dict derived_quantities(const motes::ParticleFile& f) {
  nb::dict d;
  for (size_t q = 0; q < f.derived().size(); ++q) {
    const motes::DerivedQuantity& dq = f.derived()[q];
    nb::dict e;
    e["expression"] = dq.expression;
    e["nan_count"] = dq.nan_count;
    e["min"] = dq.min;
    e["max"] = dq.max;
    const motes::TailIndex* t = f.tail_index(f.schema().size() + q);
    e["tail"] = t ? nb::object(tail_dict(f, *t)) : nb::none();
    d[dq.name.c_str()] = e;
  }
  return d;
}

nb::object find_ids(const motes::ParticleFile& f, const std::string& column, IdArray ids) {
  const size_t c = f.column(column);
  const motes::DType dt = f.schema()[c].dtype;  // find_rows refuses a column that is not an id column
  const size_t n = ids.shape(0);
  std::vector<uint64_t> keys(n);
  for (size_t i = 0; i < n; ++i) keys[i] = motes::id_key_of_int64(dt, ids(i));
  auto [arr, data] = new_array(motes::DType::i64, n);
  int64_t* rows = static_cast<int64_t*>(data);
  nb::gil_scoped_release release;
  const std::vector<int64_t> found = motes::find_rows(f, c, keys.data(), n);
  std::copy(found.begin(), found.end(), rows);
  return arr;
}

nb::object read_rows(const motes::ParticleFile& f, const std::string& name, RowArray rows) {
  const size_t c = f.column(name);
  const size_t n = rows.shape(0);
  auto [arr, data] = new_array(f.schema()[c].dtype, n);
  std::memset(data, 0, n * motes::dtype_size(f.schema()[c].dtype));
  const int64_t* r = rows.data();
  nb::gil_scoped_release release;
  motes::gather_rows(f.values(c), r, n, data);
  return arr;
}

void verify_data(const motes::ParticleFile& f, nb::object progress) {
  std::function<void(uint64_t, uint64_t)> cb;
  if (!progress.is_none())
    cb = [progress](uint64_t d, uint64_t t) {
      nb::gil_scoped_acquire gil;
      progress(d, t);
    };
  nb::gil_scoped_release release;
  f.verify_data(cb);  // derived quantities computed again too
}

motes::WriteSummary write_file(const std::string& path, const std::vector<ColumnTuple>& cols,
                               std::optional<motes::WriteOptions> options, nb::object progress) {
  auto views = views_of(cols);
  motes::WriteOptions o = options.value_or(motes::WriteOptions{});
  o.progress = progress_of(progress);
  nb::gil_scoped_release release;
  return motes::write_particle_file(path, views, o);
}

// The cache of decoded blocks, and write_file.
void bind_cache_and_writer(nb::module_& m) {
  m.def("block_cache_bytes", []() { return motes::block_cache_bytes(); },
        "Bytes the cache of decoded blocks may hold (MOTES_CACHE_MB at start; default 1 GiB, at most an eighth of the memory).");
  m.def("set_block_cache_bytes", [](uint64_t bytes) { motes::set_block_cache_bytes(bytes); }, "bytes"_a);
  m.def("clear_block_cache", []() {
    motes::clear_block_cache();
    motes::kept_clear();
  }, "Drops every decoded block, and the trees and column indexes kept across opens (cold measurements).");
  m.def("block_cache_used", []() { return motes::block_cache_used(); }, "Bytes the cache of decoded blocks holds now.");
  m.def("blocks_decoded", []() { return motes::blocks_decoded(); },
        "Coded blocks this process has decoded so far, checks included (what the cache saves).");
  m.def("write_file", &write_file, "path"_a, "columns"_a, "options"_a = nb::none(), "progress"_a = nb::none(),
        "Writes one particle file of (name, array, index kind, unit, error bound) columns; "
        "options: WriteOptions (None: the core's defaults); progress(stage, done, total).");
}

// File: one particle file, its header and index, and reads of its columns.
void bind_particle_file(nb::module_& m) {
  nb::class_<motes::ParticleFile>(m, "File")
      .def_static(
          "open",
          [](const std::string& path, bool verify) {
            nb::gil_scoped_release release;
            return motes::ParticleFile::open(path, verify);
          },
          "path"_a, "verify"_a = false)
      .def_prop_ro("path", &motes::ParticleFile::path)
      .def_prop_ro("count", &motes::ParticleFile::particle_count)
      .def_prop_ro("node_count", &motes::ParticleFile::node_count)
      .def_prop_ro("level_count", &motes::ParticleFile::level_count)
      .def_prop_ro("level_starts", [](const motes::ParticleFile& f) { return f.levels().level_start; })
      .def_prop_ro("lod_count", &motes::ParticleFile::lod_count)
      .def_prop_ro("detail_level", &motes::ParticleFile::detail_level)
      .def_prop_ro("region_depth", &motes::ParticleFile::region_depth)
      .def("level_positions", [](const motes::ParticleFile& f, uint32_t b, uint32_t e) {
        std::vector<std::pair<uint64_t, uint64_t>> out;
        for (const motes::PosRange& r : f.levels().positions(b, e)) out.emplace_back(r.begin, r.end);
        return out;
      }, "The file positions [begin, end) of levels [b, e), in file order.")
      .def_prop_ro("leaf_size", &motes::ParticleFile::leaf_size)
      .def_prop_ro("version", [](const motes::ParticleFile& f) { return nb::make_tuple(f.version_major(), f.version_minor()); })
      .def_prop_ro("block_values", &motes::ParticleFile::block_values)
      .def_prop_ro("required_features", &motes::ParticleFile::required_features)
      .def_prop_ro("bounds", [](const motes::ParticleFile& f) { return box_tuple(f.bounds()); })
      .def("section_sizes",
           [](const motes::ParticleFile& f) {
             nb::list out;
             for (const motes::ParticleFile::SectionSize& s : f.section_sizes()) out.append(nb::make_tuple(s.role, s.column, s.kind, s.bytes));
             return out;
           },
           "Where the file's bytes go: (role, column, kind, bytes) per section (block tables and checksums with "
           "the section they describe), then the header, table and padding.")
      .def("column_info", &column_info, "storage"_a = true,
           "Per column: name, dtype, index, unit, error_bound, min, max, nan_count, bitmap_dictionary; "
           "with storage, also codec, stored_bytes, raw_bytes (and codes_codec, codes_stored_bytes): "
           "these read the header of every block of the column.")
      .def_prop_ro("columns", [](const motes::ParticleFile& f) { return column_info(f, true); })
      .def_prop_ro("sizes", &sizes)
      .def("read_column", &read_column, "name"_a, "begin"_a = 0, "end"_a = nb::none(),
           "Values [begin, end) of a column in file order (decoded, one thread).")
      .def_prop_ro("id_column",
                   [](const motes::ParticleFile& f) -> nb::object {
                     if (!f.id_index()) return nb::none();
                     return nb::str(f.schema()[f.id_index()->column()].name.c_str());
                   },
                   "The column the file's id index is built on, or None (no index).")
      .def_prop_ro("tail_indexes", &tail_indexes,
                   "Per column with a tail index (format 2.2): its entries below the low limit and above the "
                   "high limit, its stored bytes, and with a cover (format 2.3) a dict 'cover': the outermost entries "
                   "covered per side ('low', 'high') and the columns stored beside them ('columns').")
      .def_prop_ro("derived", &derived_quantities,
                   "Per derived quantity (format 2.4): its 'expression' (as the query language prints it), "
                   "'nan_count', 'min' and 'max' over the other values, and its 'tail' index (as tail_indexes "
                   "gives one), or None. A query testing the same expression against a constant in its tail is "
                   "answered through that index.")
      .def("find_ids", &find_ids, "column"_a, "ids"_a,
           "File positions of particles by id (int64 ids, cast like the column; -1 where absent): through the id "
           "index when the file has one on this column, else by reading the column. FormatError for an id held twice.")
      .def("read_rows", &read_rows, "name"_a, "rows"_a,
           "Values of a column at file positions (int64; -1 gives 0: mask it), each block decoded once.")
      .def("verify_data", &verify_data, "progress"_a = nb::none());
}

// Collection: one species of one step (a file, or the part files of a step index).
void bind_collection(nb::module_& m) {
  nb::class_<motes::Collection>(m, "Collection",
                                "One species of one step: a particle file or the part files of a step index.")
      .def_static(
          "open",
          [](const std::string& path) {
            nb::gil_scoped_release release;
            return std::const_pointer_cast<motes::Collection>(motes::Collection::open(path));
          },
          "path"_a)
      .def_prop_ro("path", &motes::Collection::path)
      .def_prop_ro("count", &motes::Collection::particle_count)
      .def_prop_ro("part_count", &motes::Collection::part_count)
      .def_prop_ro("bounds", [](const motes::Collection& c) { return box_tuple(c.bounds()); })
      .def_prop_ro("part_counts",
                   [](const motes::Collection& c) {
                     std::vector<uint64_t> out;
                     for (size_t k = 0; k < c.part_count(); ++k) out.push_back(c.part_particle_count(k));
                     return out;
                   })
      .def_prop_ro("part_bounds",
                   [](const motes::Collection& c) {
                     nb::list out;
                     if (c.index())
                       for (const auto& p : c.index()->parts()) out.append(box_tuple(p.bounds));
                     else
                       out.append(box_tuple(c.bounds()));
                     return out;
                   })
      .def(
          "part",
          [](const motes::Collection& c, size_t k) {
            nb::gil_scoped_release release;
            return std::const_pointer_cast<motes::ParticleFile>(c.part(k));
          },
          "k"_a, "Part k's particle file (opened on first use).");
}

}  // namespace

void bind_files(nb::module_& m) {
  bind_cache_and_writer(m);
  bind_particle_file(m);
  bind_collection(m);
}

}  // namespace motes_py
