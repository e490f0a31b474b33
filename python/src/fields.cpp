// Grid fields: field files (write_field_file, FieldFile), samplers (FieldSampler, the fields
// expressions sample), and the HZ order of fields/hz (Bitmask, HzOrder, blocks_for_box) for
// the field reader and writer of the Python layer and the IDX converter. Arrays are numpy C
// order ((z, y, x) indexing), coordinates and dims (x, y, z).
#include <nanobind/stl/array.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <cstring>
#include <limits>

#include "common.hpp"
#include "motes/core/errors.hpp"
#include "motes/fields/file.hpp"
#include "motes/fields/hz.hpp"
#include "motes/fields/sample.hpp"
#include "motes/expr/expr.hpp"

namespace motes_py {

namespace {

using motes::fields::Bitmask;
using motes::fields::Centering;
using motes::fields::Dims;
using motes::fields::FieldFile;
using motes::fields::FieldSpec;
using motes::fields::HzOrder;
using motes::fields::Region;

// Outputs are written; inputs may be read-only (np.frombuffer of a file's bytes, a read-only
// memory map).
using AnyArray = nb::ndarray<nb::c_contig, nb::device::cpu>;
using InArray = GridArray;
using Triple = std::array<uint64_t, 3>;

template <class Array>
size_t item_size(const Array& a, const char* what) {
  const size_t size = a.itemsize();
  if (size != 1 && size != 2 && size != 4 && size != 8)
    throw motes::UsageError(std::string(what) + ": samples of " + std::to_string(size) + " bytes (1, 2, 4 or 8 expected)");
  return size;
}

// The (x, y, z) sample counts of a C-order array of 1-3 axes ((z, y, x) indexing).
template <class Array>
Dims dims_of(const Array& a) {
  if (a.ndim() < 1 || a.ndim() > 3) throw motes::UsageError("a grid array has 1, 2 or 3 axes, not " + std::to_string(a.ndim()));
  Dims d{1, 1, 1};
  for (size_t k = 0; k < a.ndim(); ++k) d[k] = uint64_t(a.shape(a.ndim() - 1 - k));
  return d;
}

void check_range(const HzOrder& o, uint64_t first, uint64_t count) {
  if (first > o.size() || count > o.size() - first)
    throw motes::UsageError("HZ range [" + std::to_string(first) + ", " + std::to_string(first + count) +
                            ") is outside [0, " + std::to_string(o.size()) + ")");
}

Centering centering_of(const std::string& s) {
  if (s == "node") return Centering::node;
  if (s == "cell") return Centering::cell;
  throw motes::UsageError("centering must be 'node' or 'cell', got '" + s + "'");
}

nb::tuple region_tuple(const Region& r) {
  return nb::make_tuple(r.first, r.count, r.stride_bits, r.level);
}

}  // namespace

motes::FieldInput field_input_of(const FieldTuple& t) {
  const auto& [name, arrays, ndim, components, centering, origin, spacing, coords, unit, attributes, tolerance, geometry] = t;
  motes::FieldInput f;
  FieldSpec& spec = f.spec;
  spec.name = name;
  spec.ndim = ndim;
  spec.components = components;
  spec.centering = centering_of(centering);
  spec.unit = unit;
  spec.tolerance = tolerance;
  if (geometry) {  // (name, modes, imag): fields/geometry.hpp
    const auto& [gname, modes, imag] = *geometry;
    std::string problem;
    spec.geometry = motes::fields::Geometry::of({{"name", gname}, {"modes", modes}, {"imag", imag}}, problem);
    if (!problem.empty()) throw motes::UsageError("field '" + name + "': " + problem);
  }
  spec.attributes = attributes_of(attributes, "attributes of field '" + name + "'");
  if (arrays.empty()) throw motes::UsageError("field '" + name + "' has no arrays");
  spec.dtype = dtype_of(arrays[0].dtype(), "field '" + name + "'");
  if (int(arrays[0].ndim()) != ndim)
    throw motes::UsageError("field '" + name + "': arrays must have " + std::to_string(ndim) + " axes");
  spec.dims = dims_of(arrays[0]);
  for (const InArray& a : arrays) {
    if (a.dtype() != arrays[0].dtype() || a.ndim() != arrays[0].ndim() || dims_of(a) != spec.dims)
      throw motes::UsageError("field '" + name + "': the components' arrays differ in shape or dtype");
    f.values.push_back(a.data());
  }
  if (coords) {
    if (coords->size() != size_t(ndim)) throw motes::UsageError("field '" + name + "': coords need one array per axis");
    for (int a = 0; a < ndim; ++a) spec.coords[size_t(a)] = (*coords)[size_t(a)];
  } else {
    if ((origin && origin->size() != size_t(ndim)) || (spacing && spacing->size() != size_t(ndim)))
      throw motes::UsageError("field '" + name + "': origin and spacing need one number per axis");
    for (int a = 0; a < ndim; ++a) {
      spec.origin[size_t(a)] = origin ? (*origin)[size_t(a)] : 0.0;
      spec.spacing[size_t(a)] = spacing ? (*spacing)[size_t(a)] : 1.0;
    }
  }
  return f;
}

namespace {

nb::object read_samples(const FieldFile& f, const Triple& lo, const Triple& hi, int level, size_t component,
                        unsigned threads) {
  const Region r = f.region(lo, hi, level);
  auto [arr, data] = new_array(f.spec().dtype, r.size());
  {
    nb::gil_scoped_release release;
    f.read(r, component, data, threads);
  }
  nb::list shape;
  for (int a = f.spec().ndim - 1; a >= 0; --a) shape.append(r.count[size_t(a)]);
  return arr.attr("reshape")(nb::tuple(shape));
}

nb::object hz_points(const HzOrder& o, uint64_t first, uint64_t count) {
  check_range(o, first, count);
  auto [arr, data] = new_array(motes::DType::u64, count * 3);
  auto* p = static_cast<uint64_t*>(data);
  {
    nb::gil_scoped_release release;
    for (uint64_t i = 0; i < count; ++i) {
      const Dims d = o.point_of_hz(first + i);
      std::memcpy(p + 3 * i, d.data(), sizeof d);
    }
  }
  return arr.attr("reshape")(count, 3);
}

void hz_gather(const HzOrder& o, const InArray& grid, uint64_t first, uint64_t count, AnyArray out) {
  check_range(o, first, count);
  const size_t size = item_size(grid, "gather");
  if (out.itemsize() != size || out.size() != count)
    throw motes::UsageError("gather: out must hold " + std::to_string(count) + " samples of " + std::to_string(size) +
                            " bytes");
  const Dims dims = dims_of(grid);
  const Dims p2 = o.bitmask().pow2_dims();
  for (size_t a = 0; a < 3; ++a)
    if (dims[a] > p2[a]) throw motes::UsageError("gather: the grid's dims exceed the bitmask " + o.bitmask().text() + "'s");
  nb::gil_scoped_release release;
  o.gather(grid.data(), dims, size, first, count, out.data());
}

uint64_t hz_scatter(const HzOrder& o, const InArray& samples, uint64_t first, const Triple& lo, const Triple& hi,
                    const std::array<int, 3>& stride_bits, const Triple& out_first, AnyArray out) {
  check_range(o, first, samples.size());
  const size_t size = item_size(samples, "scatter");
  const Dims out_dims = dims_of(out);
  if (out.itemsize() != size) throw motes::UsageError("scatter: out has another sample size");
  nb::gil_scoped_release release;
  return o.scatter(samples.data(), size, first, samples.size(), lo, hi, stride_bits, out_first, out_dims, out.data());
}

// write_field_file and what it returns (FieldSummary).
void bind_field_writer(nb::module_& m) {
  m.def(
      "write_field_file",
      [](const std::string& path, const FieldTuple& field, const motes::fields::FieldWriteOptions& options) {
        motes::FieldInput f = field_input_of(field);
        nb::gil_scoped_release release;
        return motes::fields::write_field_file(path, f.spec, f.values, options);
      },
      "path"_a, "field"_a, "options"_a,
      "Writes a field file (fields/file.hpp); field: (name, arrays (one C-order array per stored array, (z, y, x) "
      "indexing), ndim, components, centering, origin, spacing, coords, unit, attributes, tolerance, geometry "
      "(None: Cartesian; (name, modes, imag))).");

  nb::class_<motes::fields::FieldSummary>(m, "FieldSummary", "What write_field_file wrote.")
      .def_ro("file_bytes", &motes::fields::FieldSummary::file_bytes)
      .def_ro("data_bytes", &motes::fields::FieldSummary::data_bytes)
      .def_ro("stored_bytes", &motes::fields::FieldSummary::stored_bytes)
      .def_ro("header_checksum", &motes::fields::FieldSummary::header_checksum)
      .def_ro("bitmask", &motes::fields::FieldSummary::bitmask)
      .def_ro("zfp_blocks", &motes::fields::FieldSummary::zfp_blocks, "blocks stored by ZFP within the tolerance")
      .def_prop_ro("ranges", [](const motes::fields::FieldSummary& s) {
        nb::list out;
        for (const auto& r : s.ranges) out.append(nb::make_tuple(r.min, r.max, r.nan_count));
        return out;
      });
}

// FieldSampler (one component in memory, sampled at points) and the fields expressions sample.
void bind_field_sampler(nb::module_& m) {
  using Coordinates = nb::ndarray<nb::ro, const double, nb::ndim<1>, nb::c_contig, nb::device::cpu>;
  nb::class_<motes::fields::Sampler>(m, "FieldSampler",
                                     "One component of a field in memory, sampled at points (fields/sample.hpp).")
      .def("__init__",
           [](motes::fields::Sampler* self, const FieldFile& f, const std::string& component, unsigned threads) {
             nb::gil_scoped_release release;
             new (self) motes::fields::Sampler(f, component, threads);
           },
           "file"_a, "component"_a = "", "threads"_a = 0,
           "component: its name ('' for a scalar field; 'x', 'y' of a thetaMode field with components r and t)")
      .def(
          "sample",
          [](const motes::fields::Sampler& s, const Coordinates& x, std::optional<Coordinates> y,
             std::optional<Coordinates> z, double fill, unsigned threads) {
            const uint64_t n = x.shape(0);
            if ((y && y->shape(0) != n) || (z && z->shape(0) != n))
              throw motes::UsageError("x, y and z must have the same length");
            auto [arr, data] = new_array(motes::DType::f64, n);
            {
              nb::gil_scoped_release release;
              s.sample(x.data(), y ? y->data() : nullptr, z ? z->data() : nullptr, n, fill,
                       static_cast<double*>(data), threads);
            }
            return arr;
          },
          "x"_a, "y"_a = nb::none(), "z"_a = nb::none(), "fill"_a = std::numeric_limits<double>::quiet_NaN(),
          "threads"_a = 0, "The field at the points (float64 arrays): linear along each axis, fill outside.");

  m.def(
      "value_fields",
      [](const std::string& text, const std::vector<std::string>& columns) {
        motes::ExprPtr e = motes::parse_value(text);
        motes::bind_columns(*e, columns);
        return motes::referenced_fields(*e);
      },
      "text"_a, "columns"_a,
      "The (name, component) of every field(...) a numeric expression (a histogram axis) samples; UsageError for "
      "bad syntax, a condition, or a column not among `columns`.");
}

// FieldFile: an opened field file, its spec and its reads.
void bind_field_file(nb::module_& m) {
  nb::class_<FieldFile>(m, "FieldFile", "An opened field file (fields/file.hpp).")
      .def_static(
          "open",
          [](const std::string& path) {
            nb::gil_scoped_release release;
            return FieldFile::open(path);
          },
          "path"_a)
      .def_static(
          "open_parts",
          [](const std::vector<std::string>& paths) {
            nb::gil_scoped_release release;
            return FieldFile::open(paths);
          },
          "paths"_a, "A field written in parts: the files of parts 0, 1, ...")
      .def_prop_ro("path", [](const FieldFile& f) { return f.path(); }, "The (first part's) file.")
      .def_prop_ro("part_count", &FieldFile::part_count)
      .def_prop_ro("paths",
                   [](const FieldFile& f) {
                     std::vector<std::string> out;
                     for (size_t k = 0; k < f.part_count(); ++k) out.push_back(f.path(k));
                     return out;
                   })
      .def_prop_ro("name", [](const FieldFile& f) { return f.spec().name; })
      .def_prop_ro("dtype", [](const FieldFile& f) { return std::string(motes::dtype_name(f.spec().dtype)); })
      .def_prop_ro("ndim", [](const FieldFile& f) { return f.spec().ndim; })
      .def_prop_ro("dims", [](const FieldFile& f) { return f.spec().dims; })
      .def_prop_ro("components", [](const FieldFile& f) { return f.spec().components; })
      .def_prop_ro("geometry", [](const FieldFile& f) { return std::string(f.spec().geometry.name()); })
      .def_prop_ro("modes", [](const FieldFile& f) { return f.spec().geometry.modes; }, "thetaMode: the modes (0 to modes - 1)")
      .def_prop_ro("imag", [](const FieldFile& f) { return std::string(1, f.spec().geometry.imag); })
      .def_prop_ro("sample_components", [](const FieldFile& f) { return motes::fields::Sampler::component_names(f.spec()); },
                   "The components a FieldSampler takes.")
      .def_prop_ro("centering", [](const FieldFile& f) { return std::string(motes::fields::centering_name(f.spec().centering)); })
      .def_prop_ro("origin", [](const FieldFile& f) { return f.spec().origin; })
      .def_prop_ro("spacing", [](const FieldFile& f) { return f.spec().spacing; })
      .def_prop_ro("coords", [](const FieldFile& f) { return f.spec().coords; })
      .def_prop_ro("rectilinear", [](const FieldFile& f) { return f.spec().rectilinear(); })
      .def_prop_ro("unit", [](const FieldFile& f) { return f.spec().unit; })
      .def_prop_ro("tolerance", [](const FieldFile& f) { return f.spec().tolerance; })
      .def_prop_ro("attributes", [](const FieldFile& f) { return python_of(f.spec().attributes); })
      .def_prop_ro("bitmask", [](const FieldFile& f) { return f.bitmask().text(); })
      .def_prop_ro("block_bits", &FieldFile::block_bits)
      .def_prop_ro("levels", &FieldFile::levels)
      .def_prop_ro("stored_bytes", &FieldFile::stored_bytes)
      .def_prop_ro("header_checksum", [](const FieldFile& f) { return f.header_checksum(); }, "The (first part's) header checksum.")
      .def_prop_ro("ranges",
                   [](const FieldFile& f) {
                     nb::list out;
                     for (const auto& r : f.ranges()) out.append(nb::make_tuple(r.min, r.max));
                     return out;
                   })
      .def(
          "region", [](const FieldFile& f, const Triple& lo, const Triple& hi, int level) { return region_tuple(f.region(lo, hi, level)); },
          "lo"_a, "hi"_a, "level"_a = 0, "(first, count, stride_bits, level) of a box of sample indexes [lo, hi) at a level.")
      .def(
          "blocks", [](const FieldFile& f, const Triple& lo, const Triple& hi, int level) { return f.blocks(f.region(lo, hi, level)); },
          "lo"_a, "hi"_a, "level"_a = 0, "The blocks a read touches.")
      .def("read", &read_samples, "lo"_a, "hi"_a, "level"_a = 0, "component"_a = 0, "threads"_a = 0,
           "Samples of [lo, hi) (x, y, z sample indexes) at a level, as a C-order array ((z, y, x) indexing).")
      .def(
          "verify",
          [](const FieldFile& f) {
            nb::gil_scoped_release release;
            f.verify();
          },
          "Checks every block against its checksum and that it decodes.");
}

// The HZ order: bitmask helpers and HzOrder.
void bind_hz(nb::module_& m) {
  m.def(
      "hz_guess", [](const Triple& dims, int ndim) { return Bitmask::guess(dims, ndim).text(); }, "dims"_a, "ndim"_a,
      "The bitmask text of a grid of (x, y, z) sample counts (fields/hz.hpp, Bitmask::guess).");
  m.def(
      "hz_stride_bits", [](const std::string& bitmask, int resolution) { return Bitmask::parse(bitmask).stride_bits(resolution); },
      "bitmask"_a, "resolution"_a, "Per axis (x, y, z), log2 of the stride between the samples of a resolution.");
  m.def(
      "hz_resolution_of_level",
      [](const std::string& bitmask, int level) { return Bitmask::parse(bitmask).resolution_of_level(level); },
      "bitmask"_a, "level"_a, "The resolution that keeps every 2^level-th sample along each axis.");
  m.def(
      "hz_levels", [](const std::string& bitmask) { return Bitmask::parse(bitmask).levels(); }, "bitmask"_a,
      "The largest level of a bitmask (every axis down to one sample).");

  nb::class_<HzOrder>(m, "HzOrder", "Coordinates <-> HZ indexes of one bitmask (fields/hz.hpp).")
      .def("__init__", [](HzOrder* self, const std::string& bitmask) { new (self) HzOrder(Bitmask::parse(bitmask)); },
           "bitmask"_a)
      .def_prop_ro("bitmask", [](const HzOrder& o) { return o.bitmask().text(); })
      .def_prop_ro("maxh", &HzOrder::maxh)
      .def_prop_ro("size", &HzOrder::size)
      .def_prop_ro("pow2_dims", [](const HzOrder& o) { return o.bitmask().pow2_dims(); })
      .def("hz_of", &HzOrder::hz_of, "x"_a, "y"_a = 0, "z"_a = 0)
      .def("point_of_hz", &HzOrder::point_of_hz, "hz"_a)
      .def("points", &hz_points, "first"_a, "count"_a,
           "The (x, y, z) points of HZ indexes [first, first + count), as a (count, 3) uint64 array.")
      .def("gather", &hz_gather, "grid"_a, "first"_a, "count"_a, "out"_a.noconvert(),
           "HZ samples [first, first + count) of a C-order grid array into `out` (zeros for the padding).")
      .def("scatter", &hz_scatter, "samples"_a, "first"_a, "lo"_a, "hi"_a, "stride_bits"_a, "out_first"_a,
           "out"_a.noconvert(),
           "Writes the samples (HZ indexes first..) inside [lo, hi) on the lattice of stride_bits into `out`, the "
           "C-order array of the box's lattice points from lattice index out_first; returns how many.")
      .def(
          "block_lattice",
          [](const HzOrder& o, int block_bits, uint64_t block) {
            const auto l = motes::fields::block_lattice(o, block_bits, block);
            return std::make_tuple(l.first, l.step_bits, l.count);
          },
          "block_bits"_a, "block"_a,
          "(first, step_bits, count), (x, y, z) each: block `block`'s samples are first + i * 2**step_bits, "
          "i < count per axis; in C order ((z, y, x) indexing) they are IDX's row-major block layout.")
      .def(
          "blocks_for_box",
          [](const HzOrder& o, int block_bits, int resolution, const Triple& lo, const Triple& hi) {
            return motes::fields::blocks_for_box(o, block_bits, resolution, lo, hi);
          },
          "block_bits"_a, "resolution"_a, "lo"_a, "hi"_a,
          "The blocks of 2^block_bits HZ samples that hold samples of [lo, hi) at a resolution.");
}

}  // namespace

void bind_grid_fields(nb::module_& m) {
  bind_field_writer(m);
  bind_field_sampler(m);
  bind_field_file(m);
  bind_hz(m);
}

}  // namespace motes_py
