// Shared pieces of the extension: see common.hpp.
#include "common.hpp"

#include <nanobind/stl/vector.h>

#include <time.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>

#include "motes/core/memory.hpp"
#include "motes/dataset/manifest.hpp"

namespace motes_py {

namespace {

// numpy's names of the stored dtypes, for messages: "float32, float64, int8, ...".
std::string numpy_names() {
  std::string out;
  for (const motes::DTypeInfo& d : motes::dtype_table) out += (out.empty() ? "" : ", ") + std::string(d.numpy_name);
  return out;
}

}  // namespace

motes::DType dtype_of(nb::dlpack::dtype d, const std::string& what) {
  using C = nb::dlpack::dtype_code;
  const char kind = d.code == uint8_t(C::Float) ? 'f' : d.code == uint8_t(C::Int) ? 'i' : d.code == uint8_t(C::UInt) ? 'u' : 0;
  if (d.lanes == 1 && kind)
    for (const motes::DTypeInfo& t : motes::dtype_table)
      if (t.kind == kind && 8 * t.size == d.bits) return t.dtype;
  throw motes::UsageError(what + " has an unsupported dtype (use " + numpy_names() + ")");
}

motes::DType dtype_of(const InputArray& a, const std::string& name) { return dtype_of(a.dtype(), "column '" + name + "'"); }

motes::IndexKind index_kind_of(const std::string& s, const std::string& name) {
  if (s == "auto") return motes::IndexKind::automatic;
  if (s == "none") return motes::IndexKind::none;
  if (s == "quantile") return motes::IndexKind::quantile;
  throw motes::UsageError("column '" + name + "': index must be 'auto', 'none' or 'quantile', got '" + s + "'");
}

motes::ColumnView view_of(const InputArray& arr, const std::string& name, motes::IndexKind index,
                          const std::string& unit) {
  motes::ColumnView v;
  v.spec = {name, dtype_of(arr, name), index, unit};
  v.data = arr.data();
  v.count = arr.shape(0);
  v.stride_bytes = arr.stride(0) * int64_t(motes::dtype_size(v.spec.dtype));
  return v;
}

std::vector<motes::ColumnView> views_of(const std::vector<ColumnTuple>& cols) {
  std::vector<motes::ColumnView> out;
  for (const auto& [name, arr, index, unit, bound] : cols) {
    out.push_back(view_of(arr, name, index_kind_of(index, name), unit));
    out.back().spec.error_bound = bound;
  }
  return out;
}

std::pair<nb::object, void*> new_array(motes::DType t, uint64_t n) {
  // numpy.empty, kept for the life of the process (never released: no decref after exit).
  static nb::handle empty = nb::object(nb::module_::import_("numpy").attr("empty")).release();
  const motes::DTypeInfo* info = nullptr;
  for (const motes::DTypeInfo& d : motes::dtype_table)
    if (d.dtype == t) info = &d;
  if (!info) throw motes::InternalError("new_array: unknown dtype code " + std::to_string(int(t)));
  const size_t bytes = size_t(n) * info->size;
  if (bytes > 0 && bytes <= motes::kHugeSlabMaxBytes) {
    // Up to 1 MiB, from the slab of the decoded blocks (core/memory.hpp), whose freed slots
    // are used again: numpy.empty's malloc hands such arrays back to the system once glibc
    // trims its heap, and a query returning a few hundred kilobytes per column then had
    // every page cleared again on each call (825 page faults per 1 % box query of 10M).
    struct Owned {
      void* data;
      size_t bytes;
    };
    auto owned = std::make_unique<Owned>(Owned{nullptr, bytes});
    owned->data = motes::huge_slab_allocate(bytes);
    void* data = owned->data;
    nb::capsule owner(owned.release(), [](void* p) noexcept {
      auto* o = static_cast<Owned*>(p);
      motes::huge_slab_free(o->data, o->bytes);
      delete o;
    });
    using C = nb::dlpack::dtype_code;
    const nb::dlpack::dtype dt{uint8_t(info->kind == 'f' ? C::Float : info->kind == 'i' ? C::Int : C::UInt),
                               uint8_t(8 * info->size), 1};
    const size_t shape[1] = {size_t(n)};
    return {nb::ndarray<nb::numpy, nb::ndim<1>>(data, 1, shape, owner, nullptr, dt).cast(), data};
  }
  nb::object arr = empty(n, info->numpy_name);
  auto view = nb::cast<nb::ndarray<nb::numpy, nb::ndim<1>>>(arr);
  return {arr, view.data()};
}

std::function<void(const std::string&, uint64_t, uint64_t)> progress_of(nb::object progress) {
  if (progress.is_none()) return {};
  return [progress](const std::string& stage, uint64_t done, uint64_t total) {
    nb::gil_scoped_acquire gil;
    progress(stage, done, total);
  };
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

nb::tuple box_tuple(const motes::Box& b) {
  return nb::make_tuple(nb::make_tuple(b.lo[0], b.lo[1], b.lo[2]), nb::make_tuple(b.hi[0], b.hi[1], b.hi[2]));
}

std::optional<motes::Box> box_of(nb::handle value) {
  if (value.is_none()) return std::nullopt;
  if (nb::isinstance<motes::Box>(value)) return nb::cast<motes::Box>(value);
  std::vector<double> b;
  if (!nb::try_cast(value, b) || b.size() != 6)
    throw motes::UsageError("box must have 6 numbers: xmin, ymin, zmin, xmax, ymax, zmax");
  motes::Box box{};
  for (int a = 0; a < 3; ++a) box.lo[a] = b[size_t(a)], box.hi[a] = b[size_t(a) + 3];
  return box;
}

// ---- attributes -----------------------------------------------------------------------------

namespace {

std::string type_text(nb::handle v) { return nb::cast<std::string>(nb::str(v.type().attr("__name__"))); }
std::string repr_text(nb::handle v) { return nb::cast<std::string>(nb::repr(v)); }

// Python -> JSON, naming the value at fault as `what` and its path (step attributes['a'][1]).
// Values deeper than the core's limit are not visited: a null stands for them, and
// check_attributes refuses the result, so nesting costs no C++ stack.
nlohmann::json to_json(nb::handle v, const std::string& what, const std::string& path, int depth) {
  using json = nlohmann::json;
  if (depth > motes::kMaxAttributeDepth) return json();
  const std::string here = what + path;
  if (v.is_none()) return nullptr;
  if (PyBool_Check(v.ptr())) return v.ptr() == Py_True;
  if (PyLong_Check(v.ptr())) {
    int overflow = 0;
    const long long i = PyLong_AsLongLongAndOverflow(v.ptr(), &overflow);
    if (!overflow) return int64_t(i);
    if (overflow > 0) {
      const unsigned long long u = PyLong_AsUnsignedLongLong(v.ptr());
      if (!PyErr_Occurred()) return uint64_t(u);
      PyErr_Clear();
    }
    const double d = PyLong_AsDouble(v.ptr());  // as JSON text read back would: a float
    if (d == -1.0 && PyErr_Occurred()) {
      PyErr_Clear();
      throw motes::UsageError(here + " is an integer too large for JSON numbers");
    }
    return d;
  }
  if (PyFloat_Check(v.ptr())) {
    const double d = PyFloat_AsDouble(v.ptr());
    if (!std::isfinite(d))
      throw motes::UsageError(here + " is " + repr_text(v) + ": attributes must be JSON (NaN and infinity have no JSON form; use null or a string)");
    return d;
  }
  if (PyUnicode_Check(v.ptr())) {
    Py_ssize_t size = 0;
    const char* s = PyUnicode_AsUTF8AndSize(v.ptr(), &size);
    if (!s) {
      PyErr_Clear();
      throw motes::UsageError(here + " is not valid text (it holds a lone surrogate, which is not UTF-8)");
    }
    return std::string(s, size_t(size));
  }
  if (PyDict_Check(v.ptr())) {
    json out = json::object();
    PyObject *key, *value;
    Py_ssize_t pos = 0;
    while (PyDict_Next(v.ptr(), &pos, &key, &value)) {
      if (!PyUnicode_Check(key))
        throw motes::UsageError(here + " has the key " + repr_text(key) + " (" + type_text(key) +
                                "): attributes must be JSON, whose keys are strings");
      const std::string k = nb::cast<std::string>(nb::handle(key));
      out[k] = to_json(value, what, path + "[" + repr_text(key) + "]", depth + 1);
    }
    return out;
  }
  if (PyList_Check(v.ptr()) || PyTuple_Check(v.ptr())) {
    json out = json::array();
    size_t i = 0;
    for (nb::handle item : v) out.push_back(to_json(item, what, path + "[" + std::to_string(i++) + "]", depth + 1));
    return out;
  }
  throw motes::UsageError(here + " has type " + type_text(v) +
                          ": attributes must be JSON-serialisable (dict, list, tuple, str, int, float, bool, None)");
}

}  // namespace

nlohmann::json attributes_of(nb::handle value, const std::string& what) {
  if (value.is_none()) return nlohmann::json::object();
  if (!PyDict_Check(value.ptr()))
    throw motes::UsageError(what + " must be a dict (a JSON object), got " + type_text(value));
  nlohmann::json j = to_json(value, what, "", 1);
  motes::check_attributes(j, what);
  return j;
}

nb::object python_of(const nlohmann::json& j) {
  using json = nlohmann::json;
  switch (j.type()) {
    case json::value_t::null: return nb::none();
    case json::value_t::boolean: return nb::bool_(j.get<bool>());
    case json::value_t::number_integer: return nb::int_(j.get<int64_t>());
    case json::value_t::number_unsigned: return nb::int_(j.get<uint64_t>());
    case json::value_t::number_float: return nb::float_(j.get<double>());
    case json::value_t::string: {
      const std::string& s = j.get_ref<const std::string&>();
      return nb::str(s.data(), s.size());
    }
    case json::value_t::array: {
      nb::list out;
      for (const json& item : j) out.append(python_of(item));
      return out;
    }
    case json::value_t::object: {
      nb::dict out;
      for (auto it = j.begin(); it != j.end(); ++it) out[nb::str(it.key().data(), it.key().size())] = python_of(it.value());
      return out;
    }
    default: throw motes::InternalError("attributes hold a JSON value of no Python form");
  }
}

// ---- bound structs ------------------------------------------------------------------------

nb::object plain(nb::handle value) {
  static nb::handle enum_type = nb::object(nb::module_::import_("enum").attr("Enum")).release();
  nb::handle type = value.type();
  if (nb::hasattr(type, "_fields")) {
    nb::dict d;
    for (nb::handle field : type.attr("_fields")) d[field] = plain(value.attr(field));
    return d;
  }
  if (nb::isinstance(value, enum_type)) return value.attr("name");
  if (nb::isinstance<nb::list>(value) || nb::isinstance<nb::tuple>(value)) {
    nb::list out;
    for (nb::handle item : value) out.append(plain(item));
    return out;
  }
  return nb::borrow(value);
}

namespace {

double monotonic_seconds() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return double(t.tv_sec) + 1e-9 * double(t.tv_nsec);
}

}  // namespace

std::optional<double> deadline_seconds(const std::optional<motes::Deadline>& d) {
  if (!d) return std::nullopt;
  return monotonic_seconds() + std::chrono::duration<double>(*d - std::chrono::steady_clock::now()).count();
}

std::optional<motes::Deadline> deadline_of(std::optional<double> seconds) {
  if (!seconds) return std::nullopt;
  if (!std::isfinite(*seconds)) throw motes::UsageError("deadline must be a finite number of seconds (time.monotonic())");
  const double left = std::clamp(*seconds - monotonic_seconds(), -1e9, 1e9);  // no overflow of the clock
  return std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                                std::chrono::duration<double>(left));
}

}  // namespace motes_py
