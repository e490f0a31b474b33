// Thin nanobind layer over the C++ core: numpy in and out without copies where
// possible, the GIL released during heavy work, motes errors as Python exceptions.
#include <nanobind/eval.h>
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/unique_ptr.h>
#include <nanobind/stl/vector.h>

#include <array>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <string_view>

#include "motes/analysis/analysis.hpp"
#include "motes/container/block_stream.hpp"
#include "motes/dataset/dataset.hpp"
#include "motes/dataset/species.hpp"
#include "motes/particles/reader.hpp"
#include "motes/particles/writer.hpp"
#include "motes/parallel/aggregation.hpp"
#include "motes/query/engine.hpp"
#include "motes/query/selection.hpp"
#include "motes/core/parallel.hpp"
#include "motes/core/version.hpp"
#ifdef MOTES_HAVE_MPI
#include "motes/parallel/mpi_io.hpp"
#endif

namespace nb = nanobind;
using namespace nb::literals;

namespace {

using InputArray = nb::ndarray<nb::ro, nb::ndim<1>, nb::device::cpu>;

motes::DType dtype_of(const InputArray& a, const std::string& name) {
  auto d = a.dtype();
  using C = nb::dlpack::dtype_code;
  if (d.lanes == 1) {
    if (d.code == uint8_t(C::Float) && d.bits == 32) return motes::DType::f32;
    if (d.code == uint8_t(C::Float) && d.bits == 64) return motes::DType::f64;
    if (d.code == uint8_t(C::Int)) {
      if (d.bits == 8) return motes::DType::i8;
      if (d.bits == 16) return motes::DType::i16;
      if (d.bits == 32) return motes::DType::i32;
      if (d.bits == 64) return motes::DType::i64;
    }
    if (d.code == uint8_t(C::UInt)) {
      if (d.bits == 8) return motes::DType::u8;
      if (d.bits == 16) return motes::DType::u16;
      if (d.bits == 32) return motes::DType::u32;
      if (d.bits == 64) return motes::DType::u64;
    }
  }
  throw motes::UsageError("column '" + name + "' has an unsupported dtype (use float32/64, int8-64 or uint8-64)");
}

motes::FineIndex fine_of(const std::string& s, const std::string& name) {
  if (s == "auto") return motes::FineIndex::automatic;
  if (s == "none") return motes::FineIndex::none;
  if (s == "quantile") return motes::FineIndex::quantile;
  throw motes::UsageError("column '" + name + "': index must be 'auto', 'none' or 'quantile', got '" + s + "'");
}

const char* fine_name(motes::FineIndex f) { return f == motes::FineIndex::quantile ? "quantile" : "none"; }

// (name, array, index kind, unit, error bound) tuples from Python.
using ColumnTuple = std::tuple<std::string, InputArray, std::string, std::string, double>;

// A view of a numpy array by its real stride (0 for a broadcast value, negative for a
// reversed view). The Python layer copies what a stride in elements cannot describe.
motes::ColumnView view_of(const InputArray& arr, const std::string& name, motes::FineIndex fine = motes::FineIndex::none,
                          const std::string& unit = "") {
  motes::ColumnView v;
  v.spec = {name, dtype_of(arr, name), fine, unit};
  v.data = arr.data();
  v.count = arr.shape(0);
  v.stride_bytes = arr.stride(0) * int64_t(motes::dtype_size(v.spec.dtype));
  return v;
}

std::vector<motes::ColumnView> views_of(const std::vector<ColumnTuple>& cols) {
  std::vector<motes::ColumnView> out;
  for (const auto& [name, arr, fine, unit, bound] : cols) {
    out.push_back(view_of(arr, name, fine_of(fine, name), unit));
    out.back().spec.error_bound = bound;
  }
  return out;
}

motes::Compression compression_of(const std::string& s) {
  if (s == "lossless") return motes::Compression::lossless;
  if (s == "none") return motes::Compression::none;
  throw motes::UsageError("compression must be 'lossless' or 'none', got '" + s + "'");
}

motes::WriteOptions write_options(uint32_t leaf_size, uint32_t lod_count, uint32_t treelet_size, unsigned threads,
                                  bool sync, nb::object progress, const std::string& compression = "lossless") {
  motes::WriteOptions o;
  o.compression = compression_of(compression);
  o.layout.leaf_size = leaf_size;
  o.layout.lod_count = lod_count;
  o.layout.treelet_size = treelet_size;
  o.layout.threads = threads;
  o.sync = sync;
  if (!progress.is_none()) {
    o.progress = [progress](const std::string& stage, uint64_t done, uint64_t total) {
      nb::gil_scoped_acquire gil;
      progress(stage, done, total);
    };
  }
  return o;
}

nb::dict summary_dict(const motes::WriteSummary& s) {
  nb::dict d;
  d["particle_count"] = s.particle_count;
  d["file_bytes"] = s.file_bytes;
  d["data_bytes"] = s.data_bytes;
  d["stored_bytes"] = s.stored_bytes;
  d["node_count"] = s.node_count;
  d["level_count"] = s.level_count;
  d["layout_seconds"] = s.layout_seconds;
  d["write_seconds"] = s.write_seconds;
  nb::list cols;
  for (const auto& c : s.columns) {
    nb::dict cd;
    cd["name"] = c.name;
    cd["dtype"] = motes::dtype_name(c.dtype);
    cd["index"] = fine_name(c.fine);
    cd["min"] = c.min;
    cd["max"] = c.max;
    cd["nan_count"] = c.nan_count;
    cols.append(cd);
  }
  d["columns"] = cols;
  return d;
}

nb::tuple box_tuple(const motes::Box& b) {
  return nb::make_tuple(nb::make_tuple(b.lo[0], b.lo[1], b.lo[2]), nb::make_tuple(b.hi[0], b.hi[1], b.hi[2]));
}

std::optional<motes::Box> box_of(const std::optional<std::vector<double>>& b) {
  if (!b) return std::nullopt;
  if (b->size() != 6) throw motes::UsageError("box must have 6 numbers: xmin, ymin, zmin, xmax, ymax, zmax");
  motes::Box box{};
  for (int a = 0; a < 3; ++a) box.lo[a] = (*b)[size_t(a)], box.hi[a] = (*b)[size_t(a) + 3];
  return box;
}

motes::QuerySpec query_spec(const std::string& where, const std::optional<std::vector<double>>& box, double qfrom,
                            double qto, unsigned threads, std::optional<double> fraction = std::nullopt) {
  motes::QuerySpec s;
  s.where = where;
  s.box = box_of(box);
  s.quality_from = qfrom;
  s.quality_to = qto;
  s.threads = threads;
  s.fraction = fraction;
  return s;
}

// A new numpy array of dtype t and length n; returns it and its data pointer.
// numpy allocates it: large arrays get transparent huge pages, so filling them
// costs far fewer page faults than a plain new[].
std::pair<nb::object, void*> new_array(motes::DType t, uint64_t n) {
  static nb::object empty = nb::module_::import_("numpy").attr("empty");
  static const char* names[] = {"", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"};
  nb::object arr = empty(n, names[int(t)]);
  auto view = nb::cast<nb::ndarray<nb::numpy, nb::ndim<1>>>(arr);
  return {arr, view.data()};
}

nb::object float_array(const std::vector<double>& v, size_t rows, size_t cols) {
  double* data = new double[v.size() ? v.size() : 1];
  std::copy(v.begin(), v.end(), data);
  nb::capsule owner(data, [](void* p) noexcept { delete[] static_cast<double*>(p); });
  if (cols == 0) {
    size_t shape[1] = {rows};
    return nb::cast(nb::ndarray<nb::numpy, double, nb::ndim<1>>(data, 1, shape, owner));
  }
  size_t shape[2] = {rows, cols};
  return nb::cast(nb::ndarray<nb::numpy, double, nb::ndim<2>>(data, 2, shape, owner));
}

// A step written part by part, closed explicitly (the writer holds the dataset's lock).
struct PyPartedStep {
  std::unique_ptr<motes::PartedStepWriter> writer;
  motes::PartedStepWriter& get() {
    if (!writer) throw motes::UsageError("this part-by-part step is closed");
    return *writer;
  }
};

// A query's selection (bound to its collection), gathered into numpy on demand.
struct PySelection {
  motes::Selection selection;
  motes::QueryCounters counters;
  unsigned threads;
};

nb::dict counters_dict(const motes::QueryCounters& c) {
  nb::dict d;
  d["nodes_visited"] = c.nodes_visited;
  d["nodes_pruned"] = c.nodes_pruned;
  d["nodes_whole"] = c.nodes_all;
  d["points_tested"] = c.points_tested;
  d["points_taken_whole"] = c.points_taken_whole;
  d["scanned"] = c.scanned;
  d["parts_read"] = c.parts_read;
  d["parts_pruned"] = c.parts_pruned;
  return d;
}

}  // namespace

NB_MODULE(_core, m) {
  m.doc() = "motes C++ core (layout, format, queries, analyses)";
  m.attr("version") = motes::version;  // project(VERSION) of CMakeLists.txt: motes.__version__

  // motes.MotesError, and one class per kind of the error table (core/errors.hpp), each
  // deriving from MotesError and the kind's Python bases (ValueError, OSError, ...), with
  // class attributes kind and exit_code. error_kinds: the table, for the CLI and the docs.
  static nb::object motes_error;
  static nb::object error_classes[std::size(motes::error_kinds)];
  motes_error = nb::borrow(PyErr_NewExceptionWithDoc("motes.MotesError", "Base class of motes' errors.",
                                                     PyExc_Exception, nullptr));
  m.attr("MotesError") = motes_error;
  {
    // Classes deriving from OSError take the keywords errno, strerror (from errno when not
    // given; ENOENT for a FileNotFoundError) and filename; str() is the message alone, and
    // pickling keeps all of them.
    nb::dict os_error;
    os_error["__name__"] = "motes._core";
    nb::exec(R"(
import errno as _errno, os as _os

def _rebuild_error(cls, message, errno, strerror, filename):
    return cls(message, errno=errno, strerror=strerror, filename=filename)

def __init__(self, message="", *, errno=None, strerror=None, filename=None):
    if errno is None and isinstance(self, FileNotFoundError):
        errno = _errno.ENOENT
    OSError.__init__(self, message)
    self.errno = errno
    self.strerror = strerror if strerror is not None else (_os.strerror(errno) if errno else None)
    self.filename = filename

def __str__(self):
    return str(self.args[0]) if self.args else ""

def __reduce__(self):
    return _rebuild_error, (type(self), str(self), self.errno, self.strerror, self.filename)
)", os_error);
    m.attr("_rebuild_error") = os_error["_rebuild_error"];
    nb::module_ builtins = nb::module_::import_("builtins");
    nb::list kinds;
    for (size_t i = 0; i < std::size(motes::error_kinds); ++i) {
      const motes::ErrorKindInfo& k = motes::error_kinds[i];
      nb::list bases;  // MotesError first, unless a class of the table (a MotesError) is a base
      bool own = false;
      for (std::string_view rest = k.python_bases; !rest.empty();) {
        size_t comma = rest.find(',');
        std::string base(rest.substr(0, comma));
        rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
        base.erase(0, base.find_first_not_of(' '));
        size_t j = 0;
        while (j < i && base != motes::error_kinds[j].python_class) ++j;
        bases.append(j < i ? error_classes[j] : nb::object(builtins.attr(base.c_str())));
        own |= j < i;
      }
      if (!own) bases.insert(0, motes_error);
      nb::dict attributes;
      for (nb::handle base : bases)
        if (PyObject_IsSubclass(base.ptr(), PyExc_OSError) == 1)
          for (const char* method : {"__init__", "__str__", "__reduce__"}) attributes[method] = os_error[method];
      std::string name = std::string("motes.") + k.python_class;
      PyObject* made = PyErr_NewExceptionWithDoc(name.c_str(), k.description, nb::tuple(bases).ptr(), attributes.ptr());
      if (!made) throw nb::python_error();
      nb::object cls = nb::borrow(made);
      cls.attr("kind") = k.name;
      cls.attr("exit_code") = k.exit_code;
      m.attr(k.python_class) = cls;
      error_classes[i] = cls;
      kinds.append(nb::make_tuple(k.name, k.code, cls, k.exit_code, k.description));
    }
    m.attr("error_kinds") = kinds;  // (name, C status, class, exit code, description) per kind
  }
  // Messages quote user input and file bytes: decoded with backslashreplace, a byte that is
  // not UTF-8 shows as \xNN instead of turning the error into a UnicodeDecodeError. An
  // OSError subclass gets the errno when the core knew it.
  static auto raise = [](const motes::ErrorReport& r) {
    PyObject* type = PyExc_RuntimeError;
    for (size_t i = 0; i < std::size(motes::error_kinds); ++i)
      if (motes::error_kinds[i].kind == r.kind) type = error_classes[i].ptr();
    PyObject* msg = PyUnicode_DecodeUTF8(r.message.data(), Py_ssize_t(r.message.size()), "backslashreplace");
    PyObject* args = msg ? PyTuple_Pack(1, msg) : nullptr;
    PyObject* kwargs = nullptr;
    if (args && r.error_number && PyObject_IsSubclass(type, PyExc_OSError) == 1) {
      kwargs = Py_BuildValue("{s:i}", "errno", r.error_number);
      if (!kwargs) PyErr_Clear();
    }
    PyObject* exc = args ? PyObject_Call(type, args, kwargs) : nullptr;
    Py_XDECREF(kwargs);
    Py_XDECREF(args);
    Py_XDECREF(msg);
    if (exc) {
      PyErr_SetObject(type, exc);
      Py_DECREF(exc);
    }  // else the failure to build it is the error set
  };
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const motes::Error&) {
    } catch (const std::filesystem::filesystem_error&) {
    } catch (const std::bad_alloc&) {
    }  // anything else: nanobind's own translation
    raise(motes::describe_exception(p));
  });

  {
    nb::list names;  // the stored dtypes, in code order: Python derives its dtype table from this
    for (uint8_t c = 1; motes::dtype_valid(c); ++c) names.append(motes::dtype_name(motes::DType(c)));
    m.attr("dtype_names") = names;
  }

  m.def("block_cache_bytes", []() { return motes::block_cache_bytes(); },
        "Bytes the cache of decoded blocks may hold (MOTES_CACHE_MB at start, default 256 MiB).");
  m.def("set_block_cache_bytes", [](uint64_t bytes) { motes::set_block_cache_bytes(bytes); }, "bytes"_a);
  m.def("clear_block_cache", []() { motes::clear_block_cache(); }, "Drops every decoded block (cold measurements).");

  m.def("parse_expression", [](const std::string& text) { return motes::parse_expression(text)->to_string(); },
        "text"_a, "Parses a query expression; returns its fully parenthesised form or raises UsageError.");

  m.def(
      "write_file",
      [](const std::string& path, const std::vector<ColumnTuple>& cols, uint32_t leaf_size, uint32_t lod_count,
         uint32_t treelet_size, unsigned threads, bool sync, nb::object progress, const std::string& compression) {
        auto views = views_of(cols);
        auto opts = write_options(leaf_size, lod_count, treelet_size, threads, sync, progress, compression);
        motes::WriteSummary s;
        {
          nb::gil_scoped_release release;
          s = motes::write_particle_file(path, views, opts);
        }
        return summary_dict(s);
      },
      "path"_a, "columns"_a, "leaf_size"_a = 512, "lod_count"_a = 8, "treelet_size"_a = 65536, "threads"_a = 0,
      "sync"_a = true, "progress"_a = nb::none(), "compression"_a = "lossless");

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
      .def_prop_ro("node_count", [](const motes::ParticleFile& f) { return f.nodes().size(); })
      .def_prop_ro("level_count", [](const motes::ParticleFile& f) { return f.levels().level_count(); })
      .def_prop_ro("level_starts", [](const motes::ParticleFile& f) { return f.levels().level_start; })
      .def_prop_ro("lod_count", &motes::ParticleFile::lod_count)
      .def_prop_ro("leaf_size", &motes::ParticleFile::leaf_size)
      .def_prop_ro("version", [](const motes::ParticleFile& f) { return nb::make_tuple(f.version_major(), f.version_minor()); })
      .def_prop_ro("block_values", &motes::ParticleFile::block_values)
      .def_prop_ro("required_features", &motes::ParticleFile::required_features)
      .def_prop_ro("bounds", [](const motes::ParticleFile& f) { return box_tuple(f.bounds()); })
      .def_prop_ro("columns",
                   [](const motes::ParticleFile& f) {
                     nb::list out;
                     for (size_t i = 0; i < f.schema().size(); ++i) {
                       const motes::ColumnIndex& c = f.index(i);
                       const motes::BlockStream& v = f.values(i);
                       nb::dict d;
                       d["name"] = c.spec.name;
                       d["dtype"] = motes::dtype_name(c.spec.dtype);
                       d["index"] = fine_name(c.fine);
                       d["unit"] = c.spec.unit;
                       d["error_bound"] = c.spec.error_bound;
                       d["min"] = c.global_min;
                       d["max"] = c.global_max;
                       d["nan_count"] = c.nan_count;
                       d["bitmap_dictionary"] = c.dictionary_size;
                       d["codec"] = v.pipelines();
                       d["stored_bytes"] = v.stored_bytes();
                       d["raw_bytes"] = v.count() * motes::dtype_size(c.spec.dtype);
                       if (const motes::BlockStream* codes = f.codes(i)) {
                         d["codes_codec"] = codes->pipelines();
                         d["codes_stored_bytes"] = codes->stored_bytes();
                       }
                       out.append(d);
                     }
                     return out;
                   })
      .def_prop_ro("sizes",
                   [](const motes::ParticleFile& f) {
                     auto s = f.stats();
                     nb::dict d;
                     d["file_bytes"] = s.file_bytes;
                     d["data_bytes"] = s.data_bytes;
                     d["raw_data_bytes"] = s.raw_data_bytes;
                     d["index_bytes"] = s.index_bytes;
                     d["padding_bytes"] = s.padding_bytes;
                     d["fine_index_bytes"] = s.fine_bytes;
                     return d;
                   })
      .def(
          "read_column",
          [](const motes::ParticleFile& f, const std::string& name, uint64_t begin, std::optional<uint64_t> end) {
            const size_t c = f.column(name);
            const uint64_t n = f.particle_count();
            const uint64_t e = std::min(end.value_or(n), n), b = std::min(begin, e);
            auto [arr, data] = new_array(f.schema()[c].dtype, e - b);
            nb::gil_scoped_release release;
            f.values(c).read(b, e - b, data);
            return arr;
          },
          "name"_a, "begin"_a = 0, "end"_a = nb::none(),
          "Values [begin, end) of a column in file order (decoded, one thread).")
      .def(
          "verify_data",
          [](const motes::ParticleFile& f, nb::object progress) {
            std::function<void(uint64_t, uint64_t)> cb;
            if (!progress.is_none())
              cb = [progress](uint64_t d, uint64_t t) {
                nb::gil_scoped_acquire gil;
                progress(d, t);
              };
            nb::gil_scoped_release release;
            f.verify_data(cb);
          },
          "progress"_a = nb::none());

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

  nb::class_<PySelection>(m, "Selection")
      .def_prop_ro("size", [](const PySelection& s) { return s.selection.size(); })
      .def_prop_ro("counters", [](const PySelection& s) { return counters_dict(s.counters); })
      .def(
          "gather",
          [](const PySelection& s, const std::string& column, uint64_t begin, uint64_t end) {
            size_t c = s.selection.collection().column(column);
            if (end > s.selection.size()) end = s.selection.size();
            if (begin > end) begin = end;
            auto [arr, data] = new_array(s.selection.collection().schema()[c].dtype, end - begin);
            {
              nb::gil_scoped_release release;
              s.selection.gather(c, begin, end, data, s.threads);
            }
            return arr;
          },
          "column"_a, "begin"_a, "end"_a)
      .def(
          "gather_columns",
          [](const PySelection& s, const std::vector<std::string>& columns, uint64_t begin, uint64_t end) {
            if (end > s.selection.size()) end = s.selection.size();
            if (begin > end) begin = end;
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
              // Columns go to different threads; a column's rows are shared only when few columns are asked for.
              const uint64_t rows = end - begin;
              const unsigned across = rows >= 1024 ? s.threads : 1;
              const unsigned within = index.size() >= s.threads ? 1 : s.threads;
              motes::parallel_for(index.size(), across, [&](uint64_t k) {
                s.selection.gather(index[k], begin, end, dest[k], within);
              });
            }
            return out;
          },
          "columns"_a, "begin"_a, "end"_a, "Gathers several columns at once (one call, GIL released once).")
      .def(
          "positions",
          [](const PySelection& s, uint64_t begin, uint64_t end) {
            if (end > s.selection.size()) end = s.selection.size();
            if (begin > end) begin = end;
            auto [arr, data] = new_array(motes::DType::u64, end - begin);
            s.selection.positions(begin, end, static_cast<uint64_t*>(data));
            return arr;
          },
          "begin"_a, "end"_a);

  m.def(
      "select",
      [](std::shared_ptr<motes::Collection> f, const std::string& where, std::optional<std::vector<double>> box,
         double qfrom, double qto, unsigned threads, std::optional<double> fraction) {
        auto spec = query_spec(where, box, qfrom, qto, threads, fraction);
        auto out = std::make_unique<PySelection>();
        {
          nb::gil_scoped_release release;
          motes::Query q(f, spec);
          out->selection = motes::Selection(q);
          out->counters = q.counters();
          out->threads = q.threads();
        }
        return out;
      },
      "source"_a, "where"_a = "", "box"_a = nb::none(), "quality_from"_a = 0.0, "quality_to"_a = 1.0, "threads"_a = 0,
      "fraction"_a = nb::none());

  m.def(
      "count",
      [](std::shared_ptr<motes::Collection> f, const std::string& where, std::optional<std::vector<double>> box,
         double qfrom, double qto, unsigned threads, std::optional<double> fraction) {
        auto spec = query_spec(where, box, qfrom, qto, threads, fraction);
        nb::gil_scoped_release release;
        motes::Query q(f, spec);
        return motes::count(q);
      },
      "source"_a, "where"_a = "", "box"_a = nb::none(), "quality_from"_a = 0.0, "quality_to"_a = 1.0, "threads"_a = 0,
      "fraction"_a = nb::none());

  m.def(
      "stats",
      [](std::shared_ptr<motes::Collection> f, const std::string& column, const std::string& where,
         std::optional<std::vector<double>> box, double qfrom, double qto, unsigned threads,
         std::optional<double> fraction) {
        auto spec = query_spec(where, box, qfrom, qto, threads, fraction);
        motes::ColumnStats s;
        {
          nb::gil_scoped_release release;
          motes::Query q(f, spec);
          s = motes::stats(q, f->column(column));
        }
        nb::dict d;
        d["count"] = s.count;
        d["valid"] = s.valid;
        d["min"] = s.valid ? nb::cast(s.min) : nb::none();
        d["max"] = s.valid ? nb::cast(s.max) : nb::none();
        d["sum"] = s.sum;
        d["mean"] = s.valid ? nb::cast(s.mean()) : nb::none();
        return d;
      },
      "source"_a, "column"_a, "where"_a = "", "box"_a = nb::none(), "quality_from"_a = 0.0, "quality_to"_a = 1.0,
      "threads"_a = 0, "fraction"_a = nb::none());

  m.def(
      "histogram",
      [](std::shared_ptr<motes::Collection> f, const std::string& x, uint32_t xbins, double xlo, double xhi,
         std::optional<std::string> y, uint32_t ybins, double ylo, double yhi, std::optional<std::string> weight,
         const std::string& where, std::optional<std::vector<double>> box, double qfrom, double qto,
         unsigned threads, std::optional<double> fraction) {
        auto spec = query_spec(where, box, qfrom, qto, threads, fraction);
        motes::Axis ax{f->column(x), xbins, xlo, xhi};
        std::optional<size_t> w;
        if (weight) w = f->column(*weight);
        std::vector<double> h;
        if (y) {
          motes::Axis ay{f->column(*y), ybins, ylo, yhi};
          {
            nb::gil_scoped_release release;
            motes::Query q(f, spec);
            h = motes::histogram2d(q, ax, ay, w);
          }
          return float_array(h, xbins, ybins);
        }
        {
          nb::gil_scoped_release release;
          motes::Query q(f, spec);
          h = motes::histogram(q, ax, w);
        }
        return float_array(h, xbins, 0);
      },
      "source"_a, "x"_a, "xbins"_a, "xlo"_a, "xhi"_a, "y"_a = nb::none(), "ybins"_a = 0, "ylo"_a = 0.0, "yhi"_a = 0.0,
      "weight"_a = nb::none(), "where"_a = "", "box"_a = nb::none(), "quality_from"_a = 0.0, "quality_to"_a = 1.0,
      "threads"_a = 0, "fraction"_a = nb::none());

  m.def(
      "simulate_aggregation",
      [](InputArray x, InputArray y, InputArray z, std::vector<uint32_t> grid, const std::string& method,
         uint64_t bytes_per_particle, uint64_t target_bytes, bool best_axis) {
        // Virtual ranks: a grid[0] x grid[1] x grid[2] decomposition of the bounds; each rank
        // summarises its particles as the MPI writer's ranks do, then one plan is built.
        if (grid.size() != 3 || !grid[0] || !grid[1] || !grid[2]) throw motes::UsageError("grid must be 3 positive integers");
        if (method != "adaptive" && method != "aug") throw motes::UsageError("method must be 'adaptive' or 'aug'");
        motes::ColumnView axes[3] = {view_of(x, "x"), view_of(y, "y"), view_of(z, "z")};
        for (const motes::ColumnView& a : axes)
          if ((a.spec.dtype != motes::DType::f32 && a.spec.dtype != motes::DType::f64) || a.count != axes[0].count)
            throw motes::UsageError("x, y and z must be float32 or float64 arrays of equal length");
        const motes::Coordinate coords[3] = {motes::Coordinate(axes[0]), motes::Coordinate(axes[1]),
                                             motes::Coordinate(axes[2])};
        nb::dict out;
        nb::gil_scoped_release release;
        using Clock = std::chrono::steady_clock;
        auto t0 = Clock::now();
        const uint64_t n = axes[0].count, ranks = uint64_t(grid[0]) * grid[1] * grid[2];
        double lo[3], hi[3];
        for (int a = 0; a < 3; ++a) {
          lo[a] = INFINITY, hi[a] = -INFINITY;
          for (uint64_t i = 0; i < n; ++i) {
            double v = coords[a][i];
            lo[a] = std::min(lo[a], v), hi[a] = std::max(hi[a], v);
          }
        }
        std::vector<std::array<std::vector<double>, 3>> local(ranks);
        for (uint64_t i = 0; i < n; ++i) {
          uint64_t r = 0, mul = 1;
          double p[3];
          for (int a = 0; a < 3; ++a) {
            p[a] = coords[a][i];
            double t = hi[a] > lo[a] ? (p[a] - lo[a]) / (hi[a] - lo[a]) : 0.0;
            r += mul * std::min<uint64_t>(grid[a] - 1, uint64_t(t * grid[a]));
            mul *= grid[a];
          }
          for (int a = 0; a < 3; ++a) local[r][a].push_back(p[a]);
        }
        motes::AggregationOptions o;
        o.bytes_per_particle = bytes_per_particle;
        o.target_bytes = target_bytes;
        o.best_axis = best_axis;
        const uint64_t cap = target_bytes ? motes::cell_cap(target_bytes, bytes_per_particle) : 1ull << 62;
        std::vector<motes::RankSummary> summaries(ranks);
        motes::parallel_for(ranks, 0, [&](uint64_t r) {
          motes::ColumnView v[3];
          for (int a = 0; a < 3; ++a) {
            v[a].spec = {"p", motes::DType::f64};
            v[a].data = local[r][a].data();
            v[a].count = local[r][a].size();
          }
          // AUG (the baseline) works from counts and boxes alone, as in its reference code.
          summaries[r] = motes::summarize_rank(v[0], v[1], v[2], method == "aug" ? (1ull << 62) : cap);
        });
        auto t1 = Clock::now();
        motes::AggregationPlan plan = method == "aug" ? motes::plan_aug(summaries, o) : motes::plan_adaptive(summaries, o);
        auto t2 = Clock::now();
        motes::Balance b = motes::balance(plan, bytes_per_particle);
        nb::gil_scoped_acquire gil;
        out["ranks"] = ranks;
        out["atoms"] = plan.atoms.size();
        out["target_bytes"] = plan.target_bytes;
        out["files"] = b.files;
        out["mean_bytes"] = b.mean;
        out["sd_bytes"] = b.sd;
        out["max_bytes"] = b.max;
        out["sd_over_mean"] = b.sd_over_mean();
        out["max_over_mean"] = b.max_over_mean();
        out["summarize_seconds"] = std::chrono::duration<double>(t1 - t0).count();
        out["plan_seconds"] = std::chrono::duration<double>(t2 - t1).count();
        return out;
      },
      "x"_a, "y"_a, "z"_a, "grid"_a, "method"_a = "adaptive", "bytes_per_particle"_a = 32, "target_bytes"_a = 0,
      "best_axis"_a = false,
      "Builds an aggregation plan for virtual ranks on a grid over the particles' bounds; returns its file-size balance.");

  // Dataset (manifest) access; the Python layer builds its API on these.
  nb::class_<motes::Dataset>(m, "DatasetCore")
      .def_static("open", &motes::Dataset::open, "dir"_a)
      .def_static(
          "create",
          [](const std::string& dir, std::optional<double> lock_timeout) {
            return motes::Dataset::create(dir, lock_timeout ? *lock_timeout : motes::default_lock_timeout());
          },
          "dir"_a, "lock_timeout"_a = nb::none())
      .def_static("exists", &motes::Dataset::exists, "dir"_a)
      .def_prop_ro("dir", &motes::Dataset::dir)
      .def_prop_ro("created", &motes::Dataset::created, "Whether create() made the directory.")
      .def_prop_rw("lock_timeout", &motes::Dataset::lock_timeout, &motes::Dataset::set_lock_timeout)
      .def("reload", &motes::Dataset::reload, "Re-reads the manifest from disk.")
      .def("remove_if_unused",
           [](motes::Dataset& d) {
             nb::gil_scoped_release release;
             return d.remove_if_unused();
           })
      .def(
          "open_species",
          [](const motes::Dataset& d, int64_t step, const std::string& species) {
            const motes::SpeciesEntry& e = d.step(step).find(species);
            nb::gil_scoped_release release;
            return std::const_pointer_cast<motes::Collection>(motes::open_species(d.dir(), step, e));
          },
          "step"_a, "species"_a, "One species of one step, its files checked against the manifest.")
      .def_prop_ro("attributes_json", [](const motes::Dataset& d) { return d.attributes().dump(); })
      .def("set_attributes_json",
           [](motes::Dataset& d, const std::string& s) { d.set_attributes(motes::parse_attributes(s, "dataset attributes")); })
      .def_prop_ro("steps",
                   [](const motes::Dataset& d) {
                     nb::list out;
                     for (const auto& st : d.steps()) {
                       nb::dict sd;
                       sd["index"] = st.index;
                       sd["time"] = st.time;
                       sd["attributes_json"] = st.attributes.dump();
                       nb::dict sp;
                       for (const auto& e : st.species) {
                         nb::dict ed;
                         ed["path"] = d.path_of(e);
                         ed["parts"] = e.parts;
                         ed["checksum"] = e.checksum ? nb::cast(motes::checksum_text(*e.checksum)) : nb::none();
                         ed["count"] = e.count;
                         ed["bounds"] = box_tuple(e.bounds);
                         nb::list cols;
                         for (const auto& c : e.columns)
                           cols.append(nb::make_tuple(c.name, motes::dtype_name(c.dtype), fine_name(c.fine), c.unit, c.error_bound));
                         ed["columns"] = cols;
                         sp[e.name.c_str()] = ed;
                       }
                       sd["species"] = sp;
                       out.append(sd);
                     }
                     return out;
                   })
      .def(
          "begin_parted_step",
          [](motes::Dataset& d, int64_t index, double time, const std::string& attrs_json,
             std::vector<std::string> species, uint32_t leaf_size, uint32_t lod_count, uint32_t treelet_size,
             unsigned threads, bool sync, const std::string& compression) {
            nlohmann::json attrs = motes::parse_attributes(attrs_json, "step attributes");
            auto opts = write_options(leaf_size, lod_count, treelet_size, threads, sync, nb::none(), compression);
            nb::gil_scoped_release release;  // may wait for the dataset's lock
            return new PyPartedStep{std::make_unique<motes::PartedStepWriter>(d, index, time, attrs, opts, std::move(species))};
          },
          "index"_a, "time"_a, "attributes_json"_a, "species"_a, "leaf_size"_a = 512, "lod_count"_a = 8,
          "treelet_size"_a = 65536, "threads"_a = 0, "sync"_a = true, "compression"_a = "lossless", nb::keep_alive<0, 1>(),
          nb::rv_policy::take_ownership)
      .def(
          "append_step",
          [](motes::Dataset& d, int64_t index, double time, const std::string& attrs_json,
             const std::vector<std::pair<std::string, std::vector<ColumnTuple>>>& species, uint32_t leaf_size,
             uint32_t lod_count, uint32_t treelet_size, unsigned threads, bool sync, nb::object progress,
             const std::string& compression) {
            nlohmann::json attrs = motes::parse_attributes(attrs_json, "step attributes");
            std::vector<motes::SpeciesColumns> sp;
            for (const auto& [name, cols] : species) sp.emplace_back(name, views_of(cols));
            auto opts = write_options(leaf_size, lod_count, treelet_size, threads, sync, progress, compression);
            std::vector<motes::WriteSummary> summaries;
            {
              nb::gil_scoped_release release;
              d.append_step(index, time, attrs, sp, opts, &summaries);
            }
            nb::list out;
            for (const auto& s : summaries) out.append(summary_dict(s));
            return out;
          },
          "index"_a, "time"_a, "attributes_json"_a, "species"_a, "leaf_size"_a = 512, "lod_count"_a = 8,
          "treelet_size"_a = 65536, "threads"_a = 0, "sync"_a = true, "progress"_a = nb::none(),
          "compression"_a = "lossless");

  nb::class_<PyPartedStep>(m, "PartedStep",
                           "A step written part by part; invisible until commit(); holds the dataset's lock until close().")
      .def(
          "add_part",
          [](PyPartedStep& p, const std::string& species, const std::vector<ColumnTuple>& cols) {
            auto views = views_of(cols);
            motes::WriteSummary s;
            {
              nb::gil_scoped_release release;
              s = p.get().add_part(species, views);
            }
            return summary_dict(s);
          },
          "species"_a, "columns"_a)
      .def("commit",
           [](PyPartedStep& p) {
             nb::gil_scoped_release release;
             p.get().commit();
           })
      .def(
          "close",
          [](PyPartedStep& p) {
            nb::gil_scoped_release release;
            p.writer.reset();
          },
          "Releases the lock; the files of an uncommitted step are removed.");

#ifdef MOTES_HAVE_MPI
  m.attr("has_mpi") = true;
  // Communicators come from mpi4py as Fortran handles (comm.py2f()): no mpi4py headers needed.
  m.def(
      "write_step_parallel",
      [](int comm_f, const std::string& dir, int64_t index, double time, const std::string& attrs_json,
         const std::vector<std::pair<std::string, std::vector<ColumnTuple>>>& species, uint32_t leaf_size,
         uint32_t lod_count, uint32_t treelet_size, unsigned threads, bool sync, uint64_t target_bytes,
         const std::string& method, bool best_axis, double overfull, std::optional<double> lock_timeout,
         const std::string& compression) {
        nlohmann::json attrs = motes::parse_attributes(attrs_json, "step attributes");
        if (method != "adaptive" && method != "aug") throw motes::UsageError("aggregation must be 'adaptive' or 'aug'");
        std::vector<motes::SpeciesColumns> sp;
        for (const auto& [name, cols] : species) sp.emplace_back(name, views_of(cols));
        motes::ParallelWriteOptions o;
        o.write = write_options(leaf_size, lod_count, treelet_size, threads, sync, nb::none(), compression);
        o.aggregation.target_bytes = target_bytes;
        o.aggregation.best_axis = best_axis;
        o.aggregation.overfull = overfull;
        o.method = method == "aug" ? motes::AggregationMethod::aug : motes::AggregationMethod::adaptive;
        if (lock_timeout) o.lock_timeout = *lock_timeout;
        motes::ParallelWriteReport r;
        {
          nb::gil_scoped_release release;
          r = motes::write_step_parallel(MPI_Comm_f2c(comm_f), dir, index, time, attrs, sp, o);
        }
        nb::dict d;
        nb::list species_out;
        for (const auto& s : r.species) {
          nb::dict sd;
          sd["name"] = s.name;
          sd["count"] = s.count;
          sd["parts"] = s.parts;
          sd["target_bytes"] = s.target_bytes;
          sd["balance"] = nb::dict();
          sd["balance"]["files"] = s.balance.files;
          sd["balance"]["mean_bytes"] = s.balance.mean;
          sd["balance"]["sd_over_mean"] = s.balance.sd_over_mean();
          sd["balance"]["max_over_mean"] = s.balance.max_over_mean();
          species_out.append(sd);
        }
        d["species"] = species_out;
        d["file_bytes"] = r.file_bytes;
        d["plan_seconds"] = r.plan_seconds;
        d["exchange_seconds"] = r.exchange_seconds;
        d["write_seconds"] = r.write_seconds;
        d["commit_seconds"] = r.commit_seconds;
        d["total_seconds"] = r.total_seconds;
        return d;
      },
      "comm"_a, "dir"_a, "index"_a, "time"_a, "attributes_json"_a, "species"_a, "leaf_size"_a = 512,
      "lod_count"_a = 8, "treelet_size"_a = 65536, "threads"_a = 0, "sync"_a = true, "target_bytes"_a = 0,
      "method"_a = "adaptive", "best_axis"_a = false, "overfull"_a = 1.25, "lock_timeout"_a = nb::none(),
      "compression"_a = "lossless");

  m.def(
      "read_partition",
      [](int comm_f, const std::string& path, std::optional<std::vector<double>> box, const std::string& where,
         const std::vector<std::string>& columns, unsigned threads, double quality, std::optional<double> fraction) {
        motes::PartitionRequest req;
        req.box = box_of(box);
        req.where = where;
        req.quality = quality;
        req.fraction = fraction;
        req.columns = columns;
        req.threads = threads;
        motes::LocalParticles lp;
        {
          nb::gil_scoped_release release;
          lp = motes::read_partition(MPI_Comm_f2c(comm_f), path, req);
        }
        nb::dict out;
        for (size_t j = 0; j < lp.schema.size(); ++j) {
          auto [arr, data] = new_array(lp.schema[j].dtype, lp.count);
          if (lp.count) std::memcpy(data, lp.columns[j].data(), lp.columns[j].size());
          std::vector<unsigned char>().swap(lp.columns[j]);
          out[lp.schema[j].name.c_str()] = arr;
        }
        return out;
      },
      "comm"_a, "path"_a, "box"_a = nb::none(), "where"_a = "", "columns"_a = std::vector<std::string>{},
      "threads"_a = 0, "quality"_a = 1.0, "fraction"_a = nb::none());
#else
  m.attr("has_mpi") = false;
#endif
}
