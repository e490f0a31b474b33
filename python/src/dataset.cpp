// Datasets (a manifest and its steps): DatasetCore, on which motes.Dataset and
// motes.Writer are built, and PartedStep, a step written part by part. Attributes cross
// as Python objects (dict, list, str, int, float, bool, None), checked by the core.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <memory>
#include <optional>

#include "common.hpp"
#include "motes/dataset/dataset.hpp"
#include "motes/dataset/fields.hpp"
#include "motes/dataset/species.hpp"
#include "motes/particles/collection.hpp"

namespace motes_py {

motes::StepJob step_job_of(int64_t index, double time, nb::handle attributes, const SpeciesTuples& species,
                           std::optional<motes::WriteOptions> options, const std::vector<FieldTuple>& fields) {
  motes::StepJob job;
  job.index = index;
  job.time = time;
  job.attributes = attributes_of(attributes, "step attributes");
  for (const auto& [name, cols] : species) job.species.emplace_back(name, views_of(cols));
  for (const FieldTuple& f : fields) job.fields.push_back(field_input_of(f));
  job.options = options.value_or(motes::WriteOptions{});
  return job;
}

// The lock a DatasetCore.writing() holds.
struct DatasetWriting {
  std::optional<motes::Dataset::Writing> writing;
};

namespace {

// A step written part by part, closed explicitly (the writer holds the dataset's lock).
struct PyPartedStep {
  std::unique_ptr<motes::PartedStepWriter> writer;
  motes::PartedStepWriter& get() {
    if (!writer) throw motes::UsageError("this part-by-part step is closed");
    return *writer;
  }
};

// A species of a step as the Python layer reads it (path, parts, checksum, count, bounds,
// columns as (name, dtype, index, unit, error bound)).
nb::dict species_dict(const motes::Dataset& d, const motes::SpeciesEntry& e) {
  nb::dict ed;
  ed["path"] = d.path_of(e);
  ed["parts"] = e.parts;
  ed["checksum"] = e.checksum ? nb::cast(motes::checksum_text(*e.checksum)) : nb::none();
  ed["count"] = e.count;
  ed["bounds"] = box_tuple(e.bounds);
  nb::list cols;
  for (const auto& c : e.columns)
    cols.append(nb::make_tuple(c.name, motes::dtype_name(c.dtype), index_kind_name(c.index), c.unit, c.error_bound));
  ed["columns"] = cols;
  return ed;
}

// A grid field of a step as the Python layer reads it.
nb::dict field_dict(const motes::Dataset& d, const motes::FieldEntry& f) {
  nb::dict ed;
  ed["path"] = d.dir() + "/" + f.file;
  ed["dtype"] = motes::dtype_name(f.dtype);
  ed["ndim"] = f.ndim;
  ed["dims"] = nb::make_tuple(f.dims[0], f.dims[1], f.dims[2]);
  ed["components"] = f.components;
  ed["geometry"] = f.geometry.name();
  ed["checksum"] = f.part_checksums.empty() ? nb::object(nb::str(motes::checksum_text(f.checksum).c_str())) : nb::none();
  ed["parts"] = f.part_count();
  return ed;
}

// The steps of the manifest: index, time, attributes, species and fields (dicts by name).
nb::list steps_of(const motes::Dataset& d) {
  nb::list out;
  for (const auto& st : d.steps()) {
    nb::dict sd;
    sd["index"] = st.index;
    sd["time"] = st.time;
    sd["attributes"] = python_of(st.attributes);
    nb::dict sp;
    for (const auto& e : st.species) sp[e.name.c_str()] = species_dict(d, e);
    sd["species"] = sp;
    nb::dict fd;
    for (const auto& f : st.fields) fd[f.name.c_str()] = field_dict(d, f);
    sd["fields"] = fd;
    out.append(sd);
  }
  return out;
}

PyPartedStep* begin_parted_step(motes::Dataset& d, int64_t index, double time, nb::handle attributes,
                                std::vector<std::string> species, std::optional<motes::WriteOptions> options,
                                std::vector<std::string> fields) {
  nlohmann::json attrs = attributes_of(attributes, "step attributes");
  motes::WriteOptions o = options.value_or(motes::WriteOptions{});
  nb::gil_scoped_release release;  // may wait for the dataset's lock
  return new PyPartedStep{
      std::make_unique<motes::PartedStepWriter>(d, index, time, attrs, o, std::move(species), std::move(fields))};
}

nb::tuple append_step(motes::Dataset& d, int64_t index, double time, nb::handle attributes, const SpeciesTuples& species,
                      std::optional<motes::WriteOptions> options, nb::object progress,
                      const std::vector<FieldTuple>& fields) {
  motes::StepJob job = step_job_of(index, time, attributes, species, options, fields);
  job.options.progress = progress_of(progress);
  std::vector<motes::WriteSummary> summaries;
  std::vector<motes::fields::FieldSummary> field_summaries;
  {
    nb::gil_scoped_release release;
    d.append_step(index, time, job.attributes, job.species, job.options, &summaries, job.fields, &field_summaries);
  }
  return nb::make_tuple(summaries, field_summaries);
}

// DatasetCore (a manifest under its lock), and check_attributes.
void bind_dataset_core(nb::module_& m) {
  m.def(
      "check_attributes", [](nb::handle attributes, const std::string& what) { attributes_of(attributes, what); },
      "attributes"_a, "what"_a,
      "Raises UsageError naming `what` unless attributes (a dict) can be stored: JSON values (dict with str "
      "keys, list, tuple, str, int, finite float, bool, None), nested at most as deep as the core allows.");
  m.def("seal_manifest", &motes::seal_manifest_text, "text"_a,
        "A manifest's JSON text with its checksum made anew (docs/format.md, \"The manifest's checksum\"): for "
        "tools and tests that edit a manifest on purpose. The text is written again as motes writes manifests.");

  nb::class_<motes::Dataset>(m, "DatasetCore", "A dataset directory: its manifest, read and written under its lock.")
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
      .def("reload", &motes::Dataset::reload,
           "Re-reads the manifest from disk; DatasetReplacedError when it is another run's.")
      .def_prop_ro("id", &motes::Dataset::id,
                   "The dataset's identity (32 hex digits, kept by appends); '' for a dataset of an older motes.")
      .def("remove_if_unused",
           [](motes::Dataset& d) {
             nb::gil_scoped_release release;
             return d.remove_if_unused();
           })
      .def(
          "open_field",
          [](const motes::Dataset& d, int64_t step, const std::string& field) {
            const motes::FieldEntry& e = d.step(step).find_field(field);
            nb::gil_scoped_release release;
            return motes::open_field(d.dir(), step, e);
          },
          "step"_a, "field"_a, "One field of one step, its file checked against the manifest.")
      .def(
          "open_species",
          [](const motes::Dataset& d, int64_t step, const std::string& species) {
            const motes::SpeciesEntry& e = d.step(step).find(species);
            nb::gil_scoped_release release;
            return std::const_pointer_cast<motes::Collection>(motes::open_species(d.dir(), step, e));
          },
          "step"_a, "species"_a, "One species of one step, its files checked against the manifest.")
      .def_prop_ro("attributes", [](const motes::Dataset& d) { return python_of(d.attributes()); },
                   "The dataset-level attributes (a dict).")
      .def(
          "set_attributes",
          [](motes::Dataset& d, nb::handle attributes) { d.set_attributes(attributes_of(attributes, "dataset attributes")); },
          "attributes"_a, "Replaces the dataset-level attributes (a dict of JSON values), under the lock.")
      .def_prop_ro("steps", &steps_of,
                   "Per step: index, time, attributes, species and fields (dicts by name), as the manifest holds them.")
      .def_prop_ro(
          "skipped",
          [](const motes::Dataset& d) {
            nb::list out;
            for (const motes::SkippedStep& k : d.skipped()) {
              nb::dict e;
              e["index"] = k.index;
              e["time"] = k.time;
              e["reason"] = k.reason;
              out.append(e);
            }
            return out;
          },
          "The steps given to a writer and not written (manifest 1.7): index, time and reason, by index.")
      .def(
          "writing",
          [](motes::Dataset& d, const std::string& what) {
            auto w = std::make_unique<DatasetWriting>();
            nb::gil_scoped_release release;  // may wait for another writer's lock
            w->writing.emplace(d.begin_writing(what));
            return w.release();
          },
          "what"_a, nb::rv_policy::take_ownership,
          "Takes the dataset's writers' lock as a write does (`what` names it to a writer refused meanwhile; "
          "waits up to lock_timeout, then UsageError naming the holder) and re-reads the manifest; a context "
          "manager that releases it.")
      .def("begin_parted_step", &begin_parted_step, "index"_a, "time"_a, "attributes"_a, "species"_a,
           "options"_a = nb::none(), "fields"_a = std::vector<std::string>(), nb::keep_alive<0, 1>(),
           nb::rv_policy::take_ownership)
      .def("append_step", &append_step, "index"_a, "time"_a, "attributes"_a, "species"_a, "options"_a = nb::none(),
           "progress"_a = nb::none(), "fields"_a = std::vector<FieldTuple>(),
           "Writes a step: species are (name, columns) pairs, fields FieldTuples (write_field_file); returns "
           "(a WriteSummary per species, a FieldSummary per field).");
}

// The writers' lock of a dataset, held from DatasetCore.writing() until release() (or the
// end of a `with` block).
void bind_dataset_writing(nb::module_& m) {
  nb::class_<DatasetWriting>(m, "DatasetWriting", "The dataset's writers' lock, held; a context manager.")
      .def("release", [](DatasetWriting& w) { w.writing.reset(); }, "Releases the lock (again: nothing).")
      .def_prop_ro("held", [](const DatasetWriting& w) { return w.writing.has_value(); })
      .def("__enter__", [](DatasetWriting& w) -> DatasetWriting& { return w; }, nb::rv_policy::reference)
      .def("__exit__", [](DatasetWriting& w, nb::handle, nb::handle, nb::handle) { w.writing.reset(); },
           "type"_a.none(), "value"_a.none(), "traceback"_a.none());
}

// PartedStep: a step written part by part.
void bind_parted_step(nb::module_& m) {
  nb::class_<PyPartedStep>(m, "PartedStep",
                           "A step written part by part; invisible until commit(); holds the dataset's lock until close().")
      .def(
          "add_field",
          [](PyPartedStep& p, const FieldTuple& field) {
            motes::FieldInput f = field_input_of(field);
            nb::gil_scoped_release release;
            return p.get().add_field(f);
          },
          "field"_a, "Writes one of the step's declared fields (a FieldTuple, see write_field_file).")
      .def(
          "add_part",
          [](PyPartedStep& p, const std::string& species, const std::vector<ColumnTuple>& cols) {
            auto views = views_of(cols);
            motes::WriteSummary s;
            {
              nb::gil_scoped_release release;
              s = p.get().add_part(species, views);
            }
            return s;
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
}

}  // namespace

void bind_dataset(nb::module_& m) {
  bind_dataset_core(m);
  bind_dataset_writing(m);
  bind_parted_step(m);
}

}  // namespace motes_py
