// What every part of the extension shares: numpy arrays in (views by their real stride)
// and out (new arrays numpy allocates), boxes, attributes as Python objects <-> JSON, the
// bound structs (Record) and their dict form, and the bind_* functions module.cpp calls.
#pragma once

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>

#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "motes/core/cancel.hpp"
#include "motes/core/types.hpp"
#include "motes/dataset/background.hpp"
#include "motes/dataset/dataset.hpp"

namespace motes_py {

namespace nb = nanobind;
using namespace nb::literals;

// ---- numpy in and out ---------------------------------------------------------------------

using InputArray = nb::ndarray<nb::ro, nb::ndim<1>, nb::device::cpu>;

// The stored dtype of an array (by the core's dtype table); UsageError naming the column.
motes::DType dtype_of(const InputArray& a, const std::string& name);
// The same for any array's dtype; UsageError naming `what` ("field 'Bz'").
motes::DType dtype_of(nb::dlpack::dtype d, const std::string& what);

// "auto", "none", "quantile" -> IndexKind; UsageError naming the column otherwise.
motes::IndexKind index_kind_of(const std::string& s, const std::string& name);

// The index kind of a stored column, as the manifest and Python write it.
inline const char* index_kind_name(motes::IndexKind f) { return f == motes::IndexKind::quantile ? "quantile" : "none"; }

// A column from Python: (name, array, index kind, unit, error bound).
using ColumnTuple = std::tuple<std::string, InputArray, std::string, std::string, double>;

// A view of a numpy array by its real stride (0 for a broadcast value, negative for a
// reversed view). The Python layer copies what a stride in elements cannot describe.
motes::ColumnView view_of(const InputArray& arr, const std::string& name,
                          motes::IndexKind index = motes::IndexKind::none, const std::string& unit = "");
std::vector<motes::ColumnView> views_of(const std::vector<ColumnTuple>& cols);

// A new numpy array of dtype t and length n; returns it and its data pointer. numpy
// allocates it: large arrays get transparent huge pages, so filling them costs far fewer
// page faults than a plain new[].
std::pair<nb::object, void*> new_array(motes::DType t, uint64_t n);

// The core's progress callback (stage, done, total) calling a Python callable (None: none).
std::function<void(const std::string&, uint64_t, uint64_t)> progress_of(nb::object progress);

// A float64 array of `rows` values (cols == 0) or rows x cols, copied from v.
nb::object float_array(const std::vector<double>& v, size_t rows, size_t cols);

// ---- grid fields --------------------------------------------------------------------------

// A C-order array of any dtype, read only (a field component: (z, y, x) indexing).
using GridArray = nb::ndarray<nb::ro, nb::c_contig, nb::device::cpu>;
// A field to write, from Python: (name, one array per stored array (per component; a thetaMode
// field's modes of each component in turn), ndim, component names, centering, origin, spacing,
// coords (None: uniform), unit, attributes, tolerance (0: exact), geometry (None: Cartesian;
// (name, modes, imag): fields/geometry.hpp)).
using FieldTuple = std::tuple<std::string, std::vector<GridArray>, int, std::vector<std::string>, std::string,
                              std::optional<std::vector<double>>, std::optional<std::vector<double>>,
                              std::optional<std::vector<std::vector<double>>>, std::string, nb::object, double,
                              std::optional<std::tuple<std::string, uint32_t, std::string>>>;
// The core's field (spec and pointers to the arrays' samples); UsageError naming the field.
// A rank's block of a grid for a parallel write: its interior as a FieldTuple, the global
// grid's (x, y, z) dims and the block's (x, y, z) offset in it.
using FieldBlockTuple = std::tuple<FieldTuple, std::vector<uint64_t>, std::vector<uint64_t>>;
motes::FieldInput field_input_of(const FieldTuple& t);

// A step to write (Dataset::append_step's arguments, the arrays borrowed) from the tuples
// DatasetCore.append_step and BackgroundWriter.submit take: species are (name, columns).
using SpeciesTuples = std::vector<std::pair<std::string, std::vector<ColumnTuple>>>;
motes::StepJob step_job_of(int64_t index, double time, nb::handle attributes, const SpeciesTuples& species,
                           std::optional<motes::WriteOptions> options, const std::vector<FieldTuple>& fields);

// ---- deadlines ----------------------------------------------------------------------------

// Deadlines cross as seconds on Python's time.monotonic() clock (CLOCK_MONOTONIC).
std::optional<double> deadline_seconds(const std::optional<motes::Deadline>& d);
// UsageError unless finite.
std::optional<motes::Deadline> deadline_of(std::optional<double> seconds);

// ---- boxes --------------------------------------------------------------------------------

// ((xmin, ymin, zmin), (xmax, ymax, zmax)).
nb::tuple box_tuple(const motes::Box& b);
// None, a bound Box, or 6 numbers (xmin, ymin, zmin, xmax, ymax, zmax); UsageError otherwise.
std::optional<motes::Box> box_of(nb::handle value);

// ---- attributes: Python objects <-> JSON --------------------------------------------------

// A dict of attributes as JSON: dict (str keys), list, tuple, str, int, float (finite),
// bool and None, checked by the core (check_attributes: an object, nested at most
// kMaxAttributeDepth deep). UsageError naming `what` and the value at fault otherwise.
nlohmann::json attributes_of(nb::handle value, const std::string& what);
// JSON as Python objects (dict, list, str, int, float, bool, None).
nb::object python_of(const nlohmann::json& j);

// ---- bound structs ------------------------------------------------------------------------

// The plain form of a value: a bound struct (a class with a `_fields` tuple, see Record)
// as a dict of its fields, an enum as its name, lists element by element.
nb::object plain(nb::handle value);

// A C++ struct bound as a Python class whose attributes are its fields: read and written
// for options (rw), read only for results (ro, computed). The fields listed make the
// class's `_fields` (in order), its to_dict() (see plain()), __repr__ and __eq__; a field
// given with in_dict = false is an attribute only (the dicts of the public API keep their keys).
template <class T>
class Record : public nb::class_<T> {
 public:
  Record(nb::handle scope, const char* name, const char* doc) : nb::class_<T>(scope, name, doc) {}

  template <class M>
  Record& rw(const char* name, M T::*member, const char* doc) {
    this->def_rw(name, member, doc);
    fields_.append(name);
    return *this;
  }
  template <class M>
  Record& ro(const char* name, M T::*member, const char* doc, bool in_dict = true) {
    this->def_ro(name, member, doc);
    if (in_dict) fields_.append(name);
    return *this;
  }
  template <class Getter>
  Record& computed(const char* name, Getter&& getter, const char* doc, bool in_dict = true) {
    this->def_prop_ro(name, std::forward<Getter>(getter), doc);
    if (in_dict) fields_.append(name);
    return *this;
  }
  template <class Getter, class Setter>
  Record& rw_prop(const char* name, Getter&& getter, Setter&& setter, const char* doc) {
    this->def_prop_rw(name, std::forward<Getter>(getter), std::forward<Setter>(setter), doc,
                      nb::for_setter(nb::arg("value").none()));
    fields_.append(name);
    return *this;
  }

  // Options: constructed with the core's defaults, or as a copy of another.
  Record& constructible() {
    this->def(nb::init<>(), "The core's defaults.");
    this->def(nb::init<const T&>(), "other"_a, "A copy.");
    return *this;
  }

  // Ends the class: _fields, to_dict, __repr__, __eq__.
  void done() {
    this->attr("_fields") = nb::tuple(fields_);
    this->def("to_dict", [](nb::handle self) { return plain(self); },
              "The fields as a plain dict (nested structs as dicts, enums as their names).");
    this->def("__repr__", [](nb::handle self) {
      static nb::handle enum_type = nb::object(nb::module_::import_("enum").attr("Enum")).release();
      std::string out = nb::cast<std::string>(self.type().attr("__name__")) + "(";
      bool first = true;
      for (nb::handle field : self.type().attr("_fields")) {
        nb::object v = self.attr(field);
        const std::string text = nb::isinstance(v, enum_type)
                                     ? nb::cast<std::string>(v.type().attr("__name__")) + "." + nb::cast<std::string>(v.attr("name"))
                                     : nb::cast<std::string>(nb::repr(v));
        out += (first ? "" : ", ") + nb::cast<std::string>(field) + "=" + text;
        first = false;
      }
      return out + ")";
    });
    this->def("__eq__", [](nb::handle self, nb::handle other) {
      return self.type().is(other.type()) && plain(self).equal(plain(other));
    });
  }

 private:
  nb::list fields_;
};

// ---- the parts of the module (one file each) ----------------------------------------------

void bind_errors(nb::module_& m);       // errors.cpp
void bind_options(nb::module_& m);      // options.cpp: option and result structs, dtypes
void bind_files(nb::module_& m);        // files.cpp: write_file, File, Collection, block cache
void bind_queries(nb::module_& m);      // queries.cpp: Selection, select, plan_reads, count, stats, histogram
void bind_dataset(nb::module_& m);      // dataset.cpp: DatasetCore, PartedStep
void bind_background(nb::module_& m);   // background.cpp: BackgroundWriter
void bind_request(nb::module_& m);      // request.cpp: ReadRequest, resolve_read
void bind_remote(nb::module_& m);       // remote.cpp: remote stores (object stores, web servers)
void bind_parallel(nb::module_& m);     // parallel.cpp: MPI writes and reads, simulate_aggregation
void bind_grid_fields(nb::module_& m);  // fields.cpp: field files, samplers, the HZ order

}  // namespace motes_py
