// BackgroundWriter: a dataset's steps written on a thread of the core (motes/dataset/
// background.hpp), on which motes.Writer(background=True) is built. Every wait releases the
// GIL; a step's arrays are copied with the GIL released, or borrowed (the Python side then
// keeps them alive until the step is done).
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include "common.hpp"
#include "motes/core/memory.hpp"

namespace motes_py {

void bind_background(nb::module_& m) {
  m.def("keep_freed_memory", &motes::keep_freed_memory,
        "Has malloc keep what the process frees (blocks up to 32 MiB) for its next allocations instead of handing "
        "it back: a process taking one large step after another reuses its pages. Process-wide, for good; False "
        "where malloc is not glibc's.");
  nb::class_<motes::BackgroundWriter>(m, "BackgroundWriter",
                                      "Writes a dataset's steps on a thread of its own, in the order submitted.")
      .def(
          "__init__",
          [](motes::BackgroundWriter* self, motes::Dataset* dataset, size_t max_pending, bool skip, int nice) {
            new (self) motes::BackgroundWriter(dataset, max_pending,
                                               skip ? motes::OnBacklog::skip : motes::OnBacklog::block, nice);
          },
          "dataset"_a.none(), "max_pending"_a, "skip"_a = false, "nice"_a = 0, nb::keep_alive<1, 2>(),
          "dataset None: every step is submitted with submit_parallel (collective MPI writes). skip: a step "
          "submitted while max_pending steps are in flight is skipped (listed in the manifest), not waited for. "
          "nice (0-19): the writer's threads run that much nicer than the process (Linux).")
      .def(
          "submit",
          [](motes::BackgroundWriter& w, int64_t index, double time, nb::handle attributes, const SpeciesTuples& species,
             std::optional<motes::WriteOptions> options, const std::vector<FieldTuple>& fields, bool copy,
             unsigned threads) {
            motes::StepJob job = step_job_of(index, time, attributes, species, options, fields);
            nb::gil_scoped_release release;
            job.check();  // at once, as a synchronous write checks first: not on the future
            if (w.on_backlog() == motes::OnBacklog::skip && w.full())  // skipped: nothing to copy
              return std::make_tuple(w.skip(job.index, job.time, job.options.sync), uint64_t(0), true);
            uint64_t copied = copy ? job.copy_arrays(threads) : 0;
            bool skipped = false;
            motes::BackgroundWriter::Ticket t = w.submit(std::move(job), true, &skipped);
            return std::make_tuple(t, copied, skipped);
          },
          "index"_a, "time"_a, "attributes"_a, "species"_a, "options"_a = nb::none(),
          "fields"_a = std::vector<FieldTuple>(), "copy"_a = true, "threads"_a = 0u,
          "Queues a step (copying its arrays first unless copy is False): (ticket, bytes copied, skipped). Waits "
          "while max_pending steps are in flight, or (a writer made with skip) skips the step; raises the error "
          "of an earlier step not yet reported.")
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
            if (o.skipped) {
              nb::dict d;
              d["skipped"] = o.reason;
              return d;
            }
            return nb::make_tuple(o.summaries, o.field_summaries);
          },
          "ticket"_a,
          "None while the step is in flight; then (summaries, field summaries), {'skipped': reason} for a step "
          "skipped and listed in the manifest, or the step's error raised. Once: the outcome is then forgotten.")
      .def(
          "skip",
          [](motes::BackgroundWriter& w, int64_t index, double time, const std::string& reason, bool sync) {
            nb::gil_scoped_release release;
            return w.skip(index, time, sync, true, reason);
          },
          "index"_a, "time"_a, "reason"_a, "sync"_a = true,
          "Queues a step not written, listed in the manifest's skipped steps with `reason` once the steps before "
          "it are done: its ticket. 'backlog' only for a writer made with skip; any other reason for any writer "
          "with a dataset.")
      .def(
          "flush",
          [](motes::BackgroundWriter& w) {
            nb::gil_scoped_release release;
            w.flush();
          },
          "Waits for every step; raises the first error not yet reported.")
      .def_prop_ro("pending", &motes::BackgroundWriter::pending)
      .def_prop_ro("max_pending", &motes::BackgroundWriter::max_pending)
      .def_prop_ro(
          "pace",
          [](const motes::BackgroundWriter& w) {
            motes::BackgroundWriter::Pace p = w.pace();
            nb::dict d;
            d["written"] = p.written;
            d["last_step_seconds"] = p.last_step_seconds;
            d["idle_seconds"] = p.idle_seconds;
            return d;
          },
          "How the writer keeps up: steps written, the seconds the last took, and how long it has had nothing "
          "to do (0 while it works or has work queued).")
      .def_prop_ro("full", &motes::BackgroundWriter::full,
                   "Whether max_pending steps are in flight (a step submitted now waits, or is skipped).")
      .def_prop_ro("last_written", [](const motes::BackgroundWriter& w) -> std::optional<int64_t> {
        int64_t step = 0;
        return w.last_written(&step) ? std::optional<int64_t>(step) : std::nullopt;
      });
}

}  // namespace motes_py
