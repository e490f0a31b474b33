// The core's option and result structs as Python classes, field by field: the defaults
// Python shows and uses are these structs' (a default-constructed _core.WriteOptions()
// holds the core's leaf size, ...), never copies. Also the enums they hold and the dtype
// table (_core.dtypes).
#include <nanobind/stl/array.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <utility>

#include "common.hpp"
#include "motes/fields/file.hpp"
#include "motes/analysis/analysis.hpp"
#include "motes/parallel/aggregation.hpp"
#include "motes/parallel/options.hpp"
#include "motes/particles/layout/builder.hpp"
#include "motes/particles/writer.hpp"
#include "motes/query/engine.hpp"

namespace motes_py {

namespace {

nb::tuple triple(const double (&v)[3]) { return nb::make_tuple(v[0], v[1], v[2]); }


// The enums the structs hold: DType (the file format's codes), IndexKind, Compression, AggregationMethod.
void bind_enums(nb::module_& m) {
  nb::enum_<motes::DType> dtype(m, "DType", "A stored dtype (core/types.hpp); the values are the file format's codes.");
  for (const motes::DTypeInfo& d : motes::dtype_table) dtype.value(d.name, d.dtype, d.numpy_name);

  nb::enum_<motes::IndexKind>(m, "IndexKind", "How a column is indexed beyond per-node ranges and bitmaps.")
      .value("none", motes::IndexKind::none, "32 equal-width bins per node only")
      .value("quantile", motes::IndexKind::quantile, "plus a quantile code per particle")
      .value("automatic", motes::IndexKind::automatic, "chosen by the writer from the data (never stored)");

  nb::enum_<motes::Compression>(m, "Compression", "How values are stored.")
      .value("lossless", motes::Compression::lossless, "coded when that pays: predictor, byte planes, zstd or lz4")
      .value("none", motes::Compression::none, "as they are (read in place)");

  nb::enum_<motes::AggregationMethod>(m, "AggregationMethod", "How a parallel write groups particles into files.")
      .value("adaptive", motes::AggregationMethod::adaptive, "adaptive k-d tree: files of near-equal size")
      .value("aug", motes::AggregationMethod::aug, "the adjustable uniform grid (Kumar et al., ICPP 2019): the baseline");
}

// The core's dtype table: DTypeInfo rows (Python's dtype tables derive from it).
void bind_dtype_table(nb::module_& m) {
  Record<motes::DTypeInfo>(m, "DTypeInfo", "One row of the core's dtype table.")
      .ro("dtype", &motes::DTypeInfo::dtype, "the DType (its value is the on-disk code)")
      .ro("name", &motes::DTypeInfo::name, "as stored and shown: 'f32'")
      .ro("numpy_name", &motes::DTypeInfo::numpy_name, "numpy's name: 'float32'")
      .ro("size", &motes::DTypeInfo::size, "bytes per value")
      .computed("kind", [](const motes::DTypeInfo& d) { return std::string(1, d.kind); },
                "numpy's dtype.kind: 'f', 'i' or 'u'")
      .done();
  // A function, not a module attribute: instances held by the module would outlive
  // nanobind's shutdown checks (reported as leaks).
  m.def("dtypes", []() { return std::vector<motes::DTypeInfo>(std::begin(motes::dtype_table), std::end(motes::dtype_table)); },
        "The core's dtype table (DTypeInfo rows, in code order): Python's dtype tables derive from it.");
}

// Box: an axis-aligned box, bounds inclusive.
void bind_box(nb::module_& m) {
  nb::class_<motes::Box>(m, "Box", "An axis-aligned box, bounds inclusive.")
      .def("__init__",
           [](motes::Box* b, std::array<double, 3> lo, std::array<double, 3> hi) {
             new (b) motes::Box{{lo[0], lo[1], lo[2]}, {hi[0], hi[1], hi[2]}};
           },
           "lo"_a, "hi"_a)
      .def_prop_rw("lo", [](const motes::Box& b) { return triple(b.lo); },
                   [](motes::Box& b, std::array<double, 3> v) { std::copy(v.begin(), v.end(), b.lo); })
      .def_prop_rw("hi", [](const motes::Box& b) { return triple(b.hi); },
                   [](motes::Box& b, std::array<double, 3> v) { std::copy(v.begin(), v.end(), b.hi); })
      .def("to_tuple", &box_tuple, "((xmin, ymin, zmin), (xmax, ymax, zmax))")
      .def("__eq__", [](const motes::Box& a, const motes::Box& b) {
        return std::equal(a.lo, a.lo + 3, b.lo) && std::equal(a.hi, a.hi + 3, b.hi);
      })
      .def("__repr__", [](const motes::Box& b) { return "Box" + nb::cast<std::string>(nb::repr(box_tuple(b))); });
}

// How files are written: LayoutOptions, WriteOptions, FieldWriteOptions.
void bind_write_options(nb::module_& m) {
  Record<motes::LayoutOptions>(m, "LayoutOptions", "How a particle file's tree is built (particles/layout/builder.hpp).")
      .constructible()
      .rw("leaf_size", &motes::LayoutOptions::leaf_size, "particles per leaf of the spatial tree, at most")
      .rw("lod_count", &motes::LayoutOptions::lod_count, "sample (level-of-detail) particles kept by each inner node")
      .rw("treelet_size", &motes::LayoutOptions::treelet_size, "the shallow tree stops splitting below this many particles")
      .rw("prefix_share", &motes::LayoutOptions::prefix_share,
          "the share of the particles stored level by level in the coarse prefix; the finer levels are stored region by region (1: all level by level)")
      .rw("region_points", &motes::LayoutOptions::region_points,
          "particles per region of the finer levels, about (the subtrees at the depth that gives them)")
      .rw("threads", &motes::LayoutOptions::threads, "worker threads, 0 for all cores")
      .rw("pieces_in_order", &motes::LayoutOptions::pieces_in_order,
          "each piece of a leaf in space-filling order: positions code smaller by differences, but are then "
          "no longer read one by one (tracking decodes their blocks); False: every prefix of a leaf an evenly "
          "spread sample")
      .done();

  Record<motes::WriteOptions>(m, "WriteOptions", "How a particle file is written (particles/writer.hpp).")
      .constructible()
      .rw("layout", &motes::WriteOptions::layout, "the tree (LayoutOptions)")
      .rw("compression", &motes::WriteOptions::compression,
          "how values are stored (Compression): 'lossless' (coded when that pays) or 'none' (as they are)")
      .rw("block_values", &motes::WriteOptions::block_values, "values per coded and checksummed block")
      .rw("zstd_level", &motes::WriteOptions::zstd_level, "zstd level of coded blocks")
      .rw("sync", &motes::WriteOptions::sync, "fdatasync files and directories before returning")
      .rw("window_rows", &motes::WriteOptions::window_rows,
          "rows per window of the column passes: coded blocks are placed window by window")
      .rw("stage_rows", &motes::WriteOptions::stage_rows,
          "copy large columns side by side when their rows are far from spatial order (faster "
          "gathers, one more copy of the step in memory)")
      .rw("stage_min_bytes", &motes::WriteOptions::stage_min_bytes,
          "the least bytes of columns that stage_rows copies (0: any size)")
      .rw("id_column", &motes::WriteOptions::id_column,
          "the id index's column: 'auto' (an integer column named id), '' (none) or a column name")
      .rw("ids_by_index", &motes::WriteOptions::ids_by_index,
          "store the id column only as its id index (format 2.7): readers derive its values from the index")
      .rw("tail_fraction", &motes::WriteOptions::tail_fraction,
          "share of each tail-indexed column's values beyond each of its tail index's limits (0: no tail indexes)")
      .rw("tail_columns", &motes::WriteOptions::tail_columns,
          "the columns with a tail index; None: every column but x, y, z and the id column")
      .rw("tail_cover", &motes::WriteOptions::tail_cover,
          "share of each tail's values, per side, whose rows carry the other columns beside the index (0: none)")
      .rw("tail_cover_columns", &motes::WriteOptions::tail_cover_columns,
          "the columns a tail's cover holds; None: every column stored exactly")
      .rw("index_budget", &motes::WriteOptions::index_budget,
          "the share of the columns' raw bytes all indexes but the id index may take (0: no budget, as before it)")
      .rw_prop(
          "derived",
          [](const motes::WriteOptions& o) {
            std::vector<std::pair<std::string, std::string>> out;
            for (const motes::DerivedSpec& d : o.derived) out.emplace_back(d.name, d.expression);
            return out;
          },
          [](motes::WriteOptions& o, const std::vector<std::pair<std::string, std::string>>& given) {
            o.derived.clear();
            for (const auto& [name, expression] : given) o.derived.push_back({name, expression});
          },
          "derived quantities, (name, expression) pairs: each gets a tail index and statistics, its values not stored")
      .done();

  Record<motes::fields::FieldWriteOptions>(m, "FieldWriteOptions", "How a field file is written (fields/file.hpp).")
      .constructible()
      .rw("compression", &motes::fields::FieldWriteOptions::compression,
          "how samples are stored (Compression): 'lossless' (coded when that pays) or 'none' (as they are)")
      .rw("zstd_level", &motes::fields::FieldWriteOptions::zstd_level, "zstd level of coded blocks")
      .rw("block_bits", &motes::fields::FieldWriteOptions::block_bits, "log2 of the samples per block (6..17)")
      .rw("sync", &motes::fields::FieldWriteOptions::sync, "fdatasync the file and its directory before returning")
      .rw("threads", &motes::fields::FieldWriteOptions::threads, "worker threads, 0 for all cores")
      .done();
}

// What a query selects: QuerySpec, and the CancelToken that stops it.
void bind_query_spec(nb::module_& m) {
  nb::class_<motes::CancelToken>(m, "CancelToken",
                                 "Stops the queries whose QuerySpec.cancel it is (CancelledError), from any thread: "
                                 "checked between chunks of work (core/cancel.hpp).")
      .def(nb::init<>())
      .def("cancel", &motes::CancelToken::cancel, "Stops the queries at their next check; cannot be undone.")
      .def_prop_ro("cancelled", &motes::CancelToken::cancelled)
      .def("__repr__", [](const motes::CancelToken& t) {
        return std::string("CancelToken(cancelled=") + (t.cancelled() ? "True" : "False") + ")";
      });

  Record<motes::QuerySpec>(m, "QuerySpec", "Which particles a query selects (query/engine.hpp).")
      .constructible()
      .rw("where", &motes::QuerySpec::where, "a boolean expression over columns; empty selects everything")
      .rw_prop("box", [](const motes::QuerySpec& s) { return s.box; },
               [](motes::QuerySpec& s, nb::handle v) { s.box = box_of(v); },
               "None, a Box or 6 numbers (xmin, ymin, zmin, xmax, ymax, zmax); inclusive")
      .rw("quality_from", &motes::QuerySpec::quality_from, "levels of detail from this quality ...")
      .rw("quality_to", &motes::QuerySpec::quality_to, "... to this one (1: every particle)")
      .rw("fraction", &motes::QuerySpec::fraction, "instead of qualities: a share of the particles (None: unused)")
      .rw("threads", &motes::QuerySpec::threads, "worker threads, 0 for all cores")
      .rw("prefetch", &motes::QuerySpec::prefetch, "tell the sources what will be read before reading it")
      .rw_prop("cancel",
               [](const motes::QuerySpec& s) { return std::const_pointer_cast<motes::CancelToken>(s.cancel); },
               [](motes::QuerySpec& s, std::shared_ptr<motes::CancelToken> t) { s.cancel = std::move(t); },
               "a CancelToken that stops the query once cancelled (None: never)")
      .rw_prop("deadline", [](const motes::QuerySpec& s) { return deadline_seconds(s.deadline); },
               [](motes::QuerySpec& s, std::optional<double> t) { s.deadline = deadline_of(t); },
               "stop the query at this time.monotonic() (None: no limit)")
      .done();
}

// Collective writes and reads: AggregationOptions, ParallelWriteOptions, PartitionRequest.
void bind_parallel_options(nb::module_& m) {
  Record<motes::AggregationOptions>(m, "AggregationOptions", "How a parallel write sizes its files (parallel/aggregation.hpp).")
      .constructible()
      .rw("bytes_per_particle", &motes::AggregationOptions::bytes_per_particle, "bytes a particle takes in a file")
      .rw("target_bytes", &motes::AggregationOptions::target_bytes, "bytes per file; 0 = automatic")
      .rw("overfull", &motes::AggregationOptions::overfull, "a node this close to the target is not split further")
      .rw("best_axis", &motes::AggregationOptions::best_axis, "try all three axes instead of the longest one")
      .rw("local", &motes::AggregationOptions::local,
          "a file is written by the rank holding most of its particles, within a cap per rank and per node "
          "(False: aggregators spread evenly over the ranks)")
      .done();

  Record<motes::ParallelWriteOptions>(m, "ParallelWriteOptions", "A collective write (parallel/options.hpp).")
      .constructible()
      .rw("write", &motes::ParallelWriteOptions::write, "every part file's WriteOptions")
      .rw("aggregation", &motes::ParallelWriteOptions::aggregation, "AggregationOptions (bytes_per_particle: from the schema)")
      .rw("method", &motes::ParallelWriteOptions::method,
          "how the ranks' particles are grouped into part files (AggregationMethod): 'adaptive' (files of "
          "near-equal size) or 'aug' (a uniform grid, the baseline)")
      .rw("lock_timeout", &motes::ParallelWriteOptions::lock_timeout,
          "seconds rank 0 waits for another writer's lock (default: MOTES_LOCK_TIMEOUT, else 0)")
      .done();

  Record<motes::PartitionRequest>(m, "PartitionRequest", "A collective read (parallel/options.hpp).")
      .constructible()
      .rw_prop("box", [](const motes::PartitionRequest& r) { return r.box; },
               [](motes::PartitionRequest& r, nb::handle v) { r.box = box_of(v); },
               "this rank's region (None: an even share of the particles)")
      .rw("where", &motes::PartitionRequest::where, "a filter expression")
      .rw("quality", &motes::PartitionRequest::quality, "level of detail in [0, 1]")
      .rw("fraction", &motes::PartitionRequest::fraction, "or a share of the particles")
      .rw("columns", &motes::PartitionRequest::columns, "columns to read; empty: all")
      .rw("threads", &motes::PartitionRequest::threads, "worker threads, 0 for cores / ranks on the node")
      .done();
}

// What a write did: ColumnSummary, WriteSummary.
void bind_write_results(nb::module_& m) {
  Record<motes::ColumnSummary>(m, "ColumnSummary", "One column of a file written.")
      .ro("name", &motes::ColumnSummary::name, "")
      .ro("dtype", &motes::ColumnSummary::dtype, "DType")
      .ro("index", &motes::ColumnSummary::index, "IndexKind: the extra index built")
      .ro("min", &motes::ColumnSummary::min, "over non-NaN values (0 when there are none)")
      .ro("max", &motes::ColumnSummary::max, "")
      .ro("nan_count", &motes::ColumnSummary::nan_count, "")
      .ro("root_bits", &motes::ColumnSummary::root_bits, "the root node's 32-bin bitmap", false)
      .done();

  Record<motes::WriteSummary>(m, "WriteSummary", "What writing one particle file did.")
      .ro("particle_count", &motes::WriteSummary::particle_count, "")
      .ro("file_bytes", &motes::WriteSummary::file_bytes, "")
      .ro("data_bytes", &motes::WriteSummary::data_bytes, "the columns' raw bytes")
      .ro("stored_bytes", &motes::WriteSummary::stored_bytes, "the columns' values as stored")
      .ro("node_count", &motes::WriteSummary::node_count, "")
      .ro("level_count", &motes::WriteSummary::level_count, "")
      .ro("layout_seconds", &motes::WriteSummary::layout_seconds, "")
      .ro("write_seconds", &motes::WriteSummary::write_seconds, "")
      .computed("phases",
                [](const motes::WriteSummary& s) {
                  nb::dict d;
                  for (const auto& [name, t] : s.phases.seconds) d[nb::str(name.c_str())] = t;
                  return d;
                },
                "wall seconds of each phase, in the order they ran (layout steps prefixed 'layout ')")
      .ro("columns", &motes::WriteSummary::columns, "ColumnSummary per column")
      .ro("bounds", &motes::WriteSummary::bounds, "Box of the positions", false)
      .ro("header_checksum", &motes::WriteSummary::header_checksum, "pins the whole file", false)
      .done();
}

// What a query found: ColumnStats, QueryCounters.
void bind_query_results(nb::module_& m) {
  Record<motes::ColumnStats>(m, "ColumnStats", "Statistics of a column over a query's particles.")
      .ro("count", &motes::ColumnStats::count, "selected particles")
      .ro("valid", &motes::ColumnStats::valid, "of which not NaN")
      .computed("min", [](const motes::ColumnStats& s) { return s.valid ? std::optional(s.min) : std::nullopt; },
                "None when no value is valid")
      .computed("max", [](const motes::ColumnStats& s) { return s.valid ? std::optional(s.max) : std::nullopt; }, "")
      .ro("sum", &motes::ColumnStats::sum, "")
      .computed("mean", [](const motes::ColumnStats& s) { return s.valid ? std::optional(s.mean()) : std::nullopt; }, "")
      .done();

  // The dict keys are the public API's (Table.counters): nodes_whole is the core's nodes_all.
  Record<motes::QueryCounters>(m, "QueryCounters", "How much a query's indexes pruned.")
      .ro("nodes_visited", &motes::QueryCounters::nodes_visited, "")
      .ro("nodes_pruned", &motes::QueryCounters::nodes_pruned, "")
      .ro("nodes_whole", &motes::QueryCounters::nodes_all, "nodes taken whole, untested")
      .ro("points_tested", &motes::QueryCounters::points_tested, "")
      .ro("points_taken_whole", &motes::QueryCounters::points_taken_whole, "")
      .ro("scanned", &motes::QueryCounters::scanned, "the selected levels were scanned in order (in some part)")
      .ro("parts_read", &motes::QueryCounters::parts_read, "part files opened")
      .ro("parts_pruned", &motes::QueryCounters::parts_pruned, "part files skipped through the step index")
      .ro("id_index_parts", &motes::QueryCounters::id_index_parts, "part files planned through the id index (id in (...))")
      .ro("tail_index_parts", &motes::QueryCounters::tail_index_parts, "part files planned through a tail index")
      .ro("covered_parts", &motes::QueryCounters::covered_parts,
          "part files whose selected rows a covering tail index holds (columns read beside it)")
      .ro("index_rows", &motes::QueryCounters::index_rows, "rows those value indexes named")
      .ro("read_requests", &motes::QueryCounters::read_requests,
          "byte ranges of values and codes asked of the sources at once, coalesced (blocks decoded already left out)")
      .ro("read_bytes", &motes::QueryCounters::read_bytes, "their bytes")
      .done();
}

// What a collective write did: Balance, SpeciesWriteReport, FieldWriteReport, ParallelWriteReport.
void bind_parallel_results(nb::module_& m) {
  Record<motes::Balance>(m, "Balance", "File sizes of an aggregation plan (bytes).")
      .ro("files", &motes::Balance::files, "")
      .ro("mean_bytes", &motes::Balance::mean, "")
      .computed("sd_over_mean", &motes::Balance::sd_over_mean, "")
      .computed("max_over_mean", &motes::Balance::max_over_mean, "")
      .ro("sd_bytes", &motes::Balance::sd, "standard deviation", false)
      .ro("max_bytes", &motes::Balance::max, "", false)
      .done();

  Record<motes::ParallelWriteReport::Species>(m, "SpeciesWriteReport", "One species of a collective write.")
      .ro("name", &motes::ParallelWriteReport::Species::name, "")
      .ro("count", &motes::ParallelWriteReport::Species::count, "particles over all ranks")
      .ro("parts", &motes::ParallelWriteReport::Species::parts, "part files")
      .ro("target_bytes", &motes::ParallelWriteReport::Species::target_bytes, "")
      .ro("balance", &motes::ParallelWriteReport::Species::balance, "Balance of the part files")
      .ro("moved", &motes::ParallelWriteReport::Species::moved, "particles sent to another rank's part file")
      .done();

  Record<motes::ParallelWriteReport::Field>(m, "FieldWriteReport", "One field of a collective write (from the ranks' blocks).")
      .ro("name", &motes::ParallelWriteReport::Field::name, "")
      .ro("parts", &motes::ParallelWriteReport::Field::parts, "part files (1: one file)")
      .ro("file_bytes", &motes::ParallelWriteReport::Field::file_bytes, "")
      .done();

  Record<motes::ParallelWriteReport>(m, "ParallelWriteReport", "What a collective write did; the same on every rank.")
      .ro("species", &motes::ParallelWriteReport::species, "SpeciesWriteReport per species")
      .ro("fields", &motes::ParallelWriteReport::fields, "FieldWriteReport per field written from blocks")
      .ro("file_bytes", &motes::ParallelWriteReport::file_bytes, "all part files")
      .ro("plan_seconds", &motes::ParallelWriteReport::plan_seconds, "slowest rank per phase")
      .ro("exchange_seconds", &motes::ParallelWriteReport::exchange_seconds,
          "grouping the particles by part file and posting the messages")
      .ro("write_seconds", &motes::ParallelWriteReport::write_seconds,
          "writing the part files (the messages arrive meanwhile)")
      .ro("commit_seconds", &motes::ParallelWriteReport::commit_seconds, "")
      .ro("total_seconds", &motes::ParallelWriteReport::total_seconds, "")
      .done();
}

}  // namespace

void bind_options(nb::module_& m) {
  bind_enums(m);
  bind_dtype_table(m);
  bind_box(m);
  bind_write_options(m);
  bind_query_spec(m);
  bind_parallel_options(m);
  bind_write_results(m);
  bind_query_results(m);
  bind_parallel_results(m);
}

}  // namespace motes_py
