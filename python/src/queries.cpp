// Queries over a collection: expressions, Selection (gathered into numpy on demand), the
// plan of a query's reads and the estimates of the tree, and the analyses computed while a
// query traverses (count, stats, histograms) with their defaults. Each takes a QuerySpec
// (None: everything).
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/unique_ptr.h>
#include <nanobind/stl/vector.h>

#include <memory>
#include <tuple>
#include <utility>

#include "common.hpp"
#include "motes/analysis/analysis.hpp"
#include "motes/core/threads.hpp"
#include "motes/particles/layout/tree.hpp"
#include "motes/query/engine.hpp"
#include "motes/query/estimate.hpp"
#include "motes/query/read_plan.hpp"
#include "motes/query/selection.hpp"

namespace motes_py {

namespace {

// A query's selection (bound to its collection), gathered into numpy on demand.
struct PySelection {
  motes::Selection selection;
  unsigned threads;
};

using Source = std::shared_ptr<motes::Collection>;
using Spec = std::optional<motes::QuerySpec>;

motes::QuerySpec spec_of(const Spec& spec) { return spec.value_or(motes::QuerySpec{}); }

// A writable, contiguous byte buffer (a numpy uint8 array, ...).
using Buffer = nb::ndarray<uint8_t, nb::ndim<1>, nb::c_contig, nb::device::cpu>;

// Rows [begin, end) of a selection, clamped to it.
std::pair<uint64_t, uint64_t> rows_of(const PySelection& s, uint64_t begin, uint64_t end) {
  if (end > s.selection.size()) end = s.selection.size();
  if (begin > end) begin = end;
  return {begin, end};
}

nb::object gather(const PySelection& s, const std::string& column, uint64_t begin, uint64_t end) {
  std::tie(begin, end) = rows_of(s, begin, end);
  size_t c = s.selection.collection().column(column);
  auto [arr, data] = new_array(s.selection.collection().schema()[c].dtype, end - begin);
  {
    nb::gil_scoped_release release;
    s.selection.gather(c, begin, end, data, s.threads);
  }
  return arr;
}

nb::list gather_columns(const PySelection& s, const std::vector<std::string>& columns, uint64_t begin, uint64_t end) {
  std::tie(begin, end) = rows_of(s, begin, end);
  std::vector<size_t> index;
  std::vector<void*> dest;
  nb::list out;
  for (const std::string& name : columns) {
    index.push_back(s.selection.collection().column(name));
    auto [arr, data] = new_array(s.selection.collection().schema()[index.back()].dtype, end - begin);
    out.append(arr);
    dest.push_back(data);
  }
  {
    nb::gil_scoped_release release;
    // Every column's blocks asked for at once (a cold read waits for overlapping reads,
    // not column after column); then columns go to different threads, and a column's
    // rows are shared only when few columns are asked for. Rows a covering tail holds cost
    // a permuted copy each: under 16k of them per column, less than a round of the pool.
    s.selection.prefetch(index, begin, end);
    const uint64_t rows = end - begin;
    uint64_t cheap = 0;
    for (size_t c : index) cheap += std::min(rows, s.selection.covered_rows(c));
    const uint64_t costly = rows * index.size() - cheap;
    const unsigned across = rows >= 1024 && (costly >= 1024 || cheap >= (uint64_t(16) << 10) * index.size()) ? s.threads : 1;
    const unsigned within = index.size() >= s.threads ? 1 : s.threads;
    motes::parallel_for(index.size(), across, [&](uint64_t k) {
      s.selection.gather(index[k], begin, end, dest[k], within, false);
    });
  }
  return out;
}

uint64_t gather_into(const PySelection& s, const std::string& column, uint64_t begin, uint64_t end, Buffer buffer,
                     uint64_t byte_offset, const std::string& dtype, double subtract) {
  std::tie(begin, end) = rows_of(s, begin, end);
  const size_t c = s.selection.collection().column(column);
  const bool f32 = dtype == "f32";
  if (!f32 && dtype != "native")
    throw motes::UsageError("dtype must be 'native' (the column's) or 'f32', got '" + dtype + "'");
  if (!f32 && subtract != 0.0)
    throw motes::UsageError("subtract needs dtype='f32' (values are copied as they are otherwise)");
  const uint64_t size = f32 ? 4 : motes::dtype_size(s.selection.collection().schema()[c].dtype);
  const uint64_t bytes = (end - begin) * size;
  if (byte_offset > buffer.size() || bytes > buffer.size() - byte_offset)
    throw motes::UsageError("gather_into: " + std::to_string(end - begin) + " rows of '" + column + "' (" +
                            std::to_string(bytes) + " bytes) at byte " + std::to_string(byte_offset) +
                            " do not fit a buffer of " + std::to_string(buffer.size()) + " bytes");
  uint8_t* dest = buffer.data() + byte_offset;
  if (reinterpret_cast<uintptr_t>(dest) % size)
    throw motes::UsageError("gather_into: byte " + std::to_string(byte_offset) +
                            " of the buffer is not aligned to the " + std::to_string(size) + "-byte values");
  {
    nb::gil_scoped_release release;
    if (f32) s.selection.gather_f32(c, begin, end, reinterpret_cast<float*>(dest), subtract, s.threads);
    else s.selection.gather(c, begin, end, dest, s.threads);
  }
  return bytes;
}

nb::object positions(const PySelection& s, uint64_t begin, uint64_t end) {
  std::tie(begin, end) = rows_of(s, begin, end);
  auto [arr, data] = new_array(motes::DType::u64, end - begin);
  s.selection.positions(begin, end, static_cast<uint64_t*>(data));
  return arr;
}

std::unique_ptr<PySelection> select(Source f, const Spec& spec) {
  const motes::QuerySpec s = spec_of(spec);
  auto out = std::make_unique<PySelection>();
  {
    nb::gil_scoped_release release;
    motes::Query q(f, s);
    out->selection = motes::Selection(q);
    out->threads = q.threads();
  }
  return out;
}

// Expressions: their parser (and the grid fields they sample: fields.cpp).
void bind_expressions(nb::module_& m) {
  m.def("parse_expression", [](const std::string& text) { return motes::parse_expression(text)->to_string(); },
        "text"_a, "Parses a query expression; returns its fully parenthesised form or raises UsageError.");
}

// Selection and select: a query's particles, gathered on demand.
void bind_selection(nb::module_& m) {
  nb::class_<PySelection>(m, "Selection", "The particles a query selected, in file order; columns are gathered on demand.")
      .def_prop_ro("size", [](const PySelection& s) { return s.selection.size(); })
      .def_prop_ro("counters", [](const PySelection& s) { return plain(nb::cast(s.selection.counters(), nb::rv_policy::copy)); },
                   "How much the indexes pruned and the reads planned so far (gathers included), as a dict "
                   "(QueryCounters.to_dict()).")
      .def_prop_ro("query_counters", [](const PySelection& s) { return s.selection.counters(); }, "The QueryCounters.")
      .def("gather", &gather, "column"_a, "begin"_a, "end"_a)
      .def("gather_columns", &gather_columns, "columns"_a, "begin"_a, "end"_a,
           "Gathers several columns at once (one call, GIL released once).")
      .def("gather_into", &gather_into, "column"_a, "begin"_a, "end"_a, "buffer"_a.noconvert(), "byte_offset"_a = 0,
           "dtype"_a = "native", "subtract"_a = 0.0,
           "Writes rows [begin, end) of a column into a writable byte buffer (a numpy uint8 array) at byte_offset, "
           "as stored (dtype='native') or as float32 minus `subtract` (dtype='f32'), with the GIL released; "
           "returns the bytes written.")
      .def("positions", &positions, "begin"_a, "end"_a);
  m.def("select", &select, "source"_a, "spec"_a = nb::none(), "The Selection of a QuerySpec's particles (nothing gathered yet).");
}

motes::ReadPlan plan_reads(Source f, const Spec& spec, bool levels) {
  const motes::QuerySpec s = spec_of(spec);
  nb::gil_scoped_release release;
  return motes::plan_reads(f, s, levels);
}

nb::list level_counts(Source f, nb::handle box) {
  const std::optional<motes::Box> b = box_of(box);
  std::vector<std::vector<double>> counts;
  {
    nb::gil_scoped_release release;
    counts = motes::level_counts(*f, b);
  }
  nb::list out;
  for (const auto& c : counts) out.append(float_array(c, c.size(), 0));
  return out;
}

// What a query reads, from the indexes alone: plan_reads (PartRead, ReadPlan), level_counts.
void bind_read_estimates(nb::module_& m) {
  Record<motes::PartRead>(m, "PartRead", "One part file a query reads (query/read_plan.hpp).")
      .ro("part", &motes::PartRead::part, "its number in the collection")
      .ro("count", &motes::PartRead::count, "particles in the part file")
      .ro("rows", &motes::PartRead::rows,
          "the rows the query reads from it, estimated: inside the box, at its quality or fraction")
      .computed("levels", [](const motes::PartRead& p) { return float_array(p.levels, p.levels.size(), 0); },
                "with level estimates: per level of detail, the estimated particles inside the box (else empty)")
      .done();
  Record<motes::ReadPlan>(m, "ReadPlan", "The parts a query reads (query/read_plan.hpp).")
      .ro("parts", &motes::ReadPlan::parts, "PartRead per part read, in part order")
      .ro("pruned", &motes::ReadPlan::pruned, "the parts left out")
      .done();
  m.def("plan_reads", &plan_reads, "source"_a, "spec"_a = nb::none(), "levels"_a = false,
        "The parts the query reads and their estimated rows, from the indexes alone (a ReadPlan); levels: "
        "each part's estimated particles per level inside the box too.");
  m.def("level_counts", &level_counts, "source"_a, "box"_a = nb::none(),
        "Per part, the estimated number of particles of each level inside box (inclusive; None: all, exactly), "
        "from the tree alone (no value is read): one float64 array per part, empty for a part the step index "
        "places outside the box.");
  m.def("levels_for_quality", &motes::levels_for_quality, "quality"_a, "level_count"_a,
        "The number of levels a read at this quality takes from a file of level_count levels: ceil(q * levels).");
}

motes::ColumnStats stats(Source f, const std::string& values, const Spec& spec) {
  const motes::QuerySpec s = spec_of(spec);
  const motes::Values v = motes::values_of(*f, values, s.fields);
  nb::gil_scoped_release release;
  motes::Query q(f, s);
  return motes::stats(q, v);
}

// The stats of the union of disjoint selections, from their to_dict() forms (what MPI ranks
// and Dask tasks send back), merged in the order given by ColumnStats::add.
motes::ColumnStats merge_stats(const std::vector<nb::dict>& parts) {
  motes::ColumnStats out;
  for (const nb::dict& d : parts) {
    motes::ColumnStats s;
    s.count = nb::cast<uint64_t>(d["count"]);
    s.valid = nb::cast<uint64_t>(d["valid"]);
    s.sum = nb::cast<double>(d["sum"]);
    if (s.valid) s.min = nb::cast<double>(d["min"]), s.max = nb::cast<double>(d["max"]);
    out.add(s);
  }
  return out;
}

nb::object histogram(Source f, const std::string& x, uint32_t xbins, double xlo, double xhi,
                     std::optional<std::string> y, uint32_t ybins, double ylo, double yhi,
                     std::optional<std::string> weight, const Spec& spec) {
  const motes::QuerySpec s = spec_of(spec);
  const motes::Axis ax{motes::values_of(*f, x, s.fields), xbins, xlo, xhi};
  std::optional<motes::Values> w;
  if (weight) w = motes::values_of(*f, *weight, s.fields);
  std::vector<double> h;
  if (y) {
    const motes::Axis ay{motes::values_of(*f, *y, s.fields), ybins, ylo, yhi};
    {
      nb::gil_scoped_release release;
      motes::Query q(f, s);
      h = motes::histogram2d(q, ax, ay, w);
    }
    return float_array(h, xbins, ybins);
  }
  {
    nb::gil_scoped_release release;
    motes::Query q(f, s);
    h = motes::histogram(q, ax, w);
  }
  return float_array(h, xbins, 0);
}

nb::tuple histogram_range(std::optional<std::pair<double, double>> given, std::optional<double> min,
                          std::optional<double> max) {
  std::optional<motes::Range> g, found;
  if (given) g = motes::Range{given->first, given->second};
  if (min && max) found = motes::Range{*min, *max};
  const motes::Range r = motes::histogram_range(g, found);
  return nb::make_tuple(r.lo, r.hi);
}

// The analyses computed while a query traverses (count, stats, histogram) and the defaults
// of histograms.
void bind_analyses(nb::module_& m) {
  m.def(
      "count",
      [](Source f, const Spec& spec) {
        const motes::QuerySpec s = spec_of(spec);
        nb::gil_scoped_release release;
        motes::Query q(f, s);
        return motes::count(q);
      },
      "source"_a, "spec"_a = nb::none());
  m.def("stats", &stats, "source"_a, "column"_a, "spec"_a = nb::none(),
        "ColumnStats of a column (or of a numeric expression over the columns and the spec's fields, as a "
        "histogram's axis) over the query's particles.");
  m.def("check_query_spec", &motes::check_query_spec, "spec"_a,
        "UsageError unless the spec's quality range and fraction are well defined (the check every query makes).");
  m.def("merge_stats", &merge_stats, "parts"_a,
        "ColumnStats of the union of disjoint selections, from each one's ColumnStats.to_dict() (the parts of a "
        "step over MPI ranks or Dask tasks), merged in the order given.");
  m.def("histogram", &histogram, "source"_a, "x"_a, "xbins"_a, "xlo"_a, "xhi"_a, "y"_a = nb::none(), "ybins"_a = 0,
        "ylo"_a = 0.0, "yhi"_a = 0.0, "weight"_a = nb::none(), "spec"_a = nb::none(),
        "1-D histogram of x (xbins over [xlo, xhi]), or 2-D with y; sums of weight when given. x, y and weight "
        "are columns or numeric expressions over the columns and the spec's fields (field('Bz')).");
  m.attr("histogram_bins") = motes::kHistogramBins;
  m.attr("histogram_bins_2d") = motes::kHistogramBins2d;
  m.def("histogram_range", &histogram_range, "given"_a = nb::none(), "min"_a = nb::none(), "max"_a = nb::none(),
        "The range of a histogram axis: `given` (lo, hi), else [min, max] of the values to bin (None: [0, 1]); a "
        "range of one value v is (v - 0.5, v + 0.5), as numpy.histogram.");
}

}  // namespace

void bind_queries(nb::module_& m) {
  bind_expressions(m);
  bind_selection(m);
  bind_read_estimates(m);
  bind_analyses(m);
}

}  // namespace motes_py
