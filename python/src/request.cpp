// Read requests (request/request.hpp): resolve_read, and the ReadRequest every Python reader
// reads through (motes.Dataset.request wraps one). Grid fields are opened by the Python
// Dataset, which keeps them: the core asks for their samplers through a callable.
#include <nanobind/stl/function.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "common.hpp"
#include "motes/fields/sample.hpp"
#include "motes/request/request.hpp"

namespace motes_py {

void bind_request(nb::module_& m) {
  Record<motes::ReadRequest>(m, "ReadRequest", "One read resolved against a dataset and checked (request/request.hpp).")
      .ro("step", &motes::ReadRequest::step, "the step's index")
      .ro("species", &motes::ReadRequest::species, "the species' name")
      .ro("known", &motes::ReadRequest::known, "the species' columns, in schema order")
      .ro("columns", &motes::ReadRequest::columns, "the columns asked for (field references among them)")
      .ro("spec", &motes::ReadRequest::spec, "the checked QuerySpec, its fields bound");
  m.def("column_field", &motes::column_field, "text"_a, "known"_a,
        "(name, component) when text is no column of `known` but a field('name'[, 'component']) alone ('' for a "
        "scalar field), else None.");
  m.def(
      "resolve_step",
      [](const motes::Dataset& dataset, std::optional<int64_t> step) { return motes::resolve_step(dataset, step).index; },
      "dataset"_a, "step"_a.none(), "The index of the step a read means (None: the last); UsageError listing the steps.");
  m.def(
      "resolve_species",
      [](const motes::Dataset& dataset, std::optional<int64_t> step, std::optional<std::string> species) {
        const motes::StepEntry& s = motes::resolve_step(dataset, step);
        return std::make_pair(s.index, motes::resolve_species(s, species).name);
      },
      "dataset"_a, "step"_a.none(), "species"_a.none(),
      "(step index, species name) a read means: step None is the last, species None the step's only one; "
      "UsageError naming what is missing (and what there is).");
  m.def(
      "resolve_read",
      [](const motes::Dataset& dataset, std::optional<int64_t> step, std::optional<std::string> species,
         std::optional<std::vector<std::string>> columns, std::vector<std::string> values, motes::QuerySpec spec,
         std::function<std::shared_ptr<motes::fields::Sampler>(int64_t, std::string, std::string)> sampler_of) {
        motes::ReadArgs args{step, std::move(species), std::move(columns), std::move(values)};
        return motes::resolve_read(dataset, args, std::move(spec),
                                   [&](int64_t at, const std::string& name, const std::string& component) {
                                     return std::shared_ptr<const motes::PointSampler>(sampler_of(at, name, component));
                                   });
      },
      "dataset"_a, "step"_a.none(), "species"_a.none(), "columns"_a.none(), "values"_a, "spec"_a, "sampler_of"_a,
      "The ReadRequest of a read over a DatasetCore: step (None: the last), species (None: the only one), columns "
      "(None: all), values (numeric expressions the read computes), spec (a QuerySpec, checked); sampler_of(step, "
      "name, component) gives the sampler of a grid field the spec's where or the values sample. UsageError naming what "
      "is wrong.");
}

}  // namespace motes_py
