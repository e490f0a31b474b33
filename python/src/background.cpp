// BackgroundWriter: a dataset's steps written on a thread of the core (motes/dataset/
// background.hpp), on which motes.Writer(background=True) is built. Every wait releases the
// GIL; a step's arrays are copied with the GIL released, or borrowed (the Python side then
// keeps them alive until the step is done).
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "common.hpp"

namespace motes_py {

void bind_background(nb::module_& m) {
  nb::class_<motes::BackgroundWriter>(m, "BackgroundWriter",
                                      "Writes a dataset's steps on a thread of its own, in the order submitted.")
      .def(nb::init<motes::Dataset*, size_t>(), "dataset"_a.none(), "max_pending"_a, nb::keep_alive<1, 2>(),
           "dataset None: every step is submitted with submit_parallel (collective MPI writes).")
      .def(
          "submit",
          [](motes::BackgroundWriter& w, int64_t index, double time, nb::handle attributes, const SpeciesTuples& species,
             std::optional<motes::WriteOptions> options, const std::vector<FieldTuple>& fields, bool copy,
             unsigned threads) {
            motes::StepJob job = step_job_of(index, time, attributes, species, options, fields);
            nb::gil_scoped_release release;
            job.check();  // at once, as a synchronous write checks first: not on the future
            uint64_t copied = copy ? job.copy_arrays(threads) : 0;
            return std::make_pair(w.submit(std::move(job)), copied);
          },
          "index"_a, "time"_a, "attributes"_a, "species"_a, "options"_a = nb::none(),
          "fields"_a = std::vector<FieldTuple>(), "copy"_a = true, "threads"_a = 0u,
          "Queues a step (copying its arrays first unless copy is False): (ticket, bytes copied). Waits while "
          "max_pending steps are in flight; raises the error of an earlier step not yet reported.")
      .def(
          "wait",
          [](const motes::BackgroundWriter& w, uint64_t ticket, double timeout) {
            nb::gil_scoped_release release;
            return w.wait(ticket, timeout);
          },
          "ticket"_a, "timeout"_a = -1.0, "True once the step is done (timeout < 0: waits without limit).")
      .def(
          "result",
          [](motes::BackgroundWriter& w, uint64_t ticket) -> nb::object {
            motes::StepOutcome o = w.outcome(ticket);
            if (!o.done) return nb::none();
            if (o.error) std::rethrow_exception(o.error);
            return nb::make_tuple(o.summaries, o.field_summaries);
          },
          "ticket"_a,
          "None while the step is in flight; then (summaries, field summaries), or the step's error raised. "
          "Once: the outcome is then forgotten.")
      .def(
          "flush",
          [](motes::BackgroundWriter& w) {
            nb::gil_scoped_release release;
            w.flush();
          },
          "Waits for every step; raises the first error not yet reported.")
      .def_prop_ro("pending", &motes::BackgroundWriter::pending)
      .def_prop_ro("max_pending", &motes::BackgroundWriter::max_pending)
      .def_prop_ro("last_written", [](const motes::BackgroundWriter& w) -> std::optional<int64_t> {
        int64_t step = 0;
        return w.last_written(&step) ? std::optional<int64_t>(step) : std::nullopt;
      });
}

}  // namespace motes_py
