// Writes the steps of a dataset on a thread of its own, so that a simulation is blocked only
// while a step's arrays are copied (or not at all, when it lends them): its layout, indexes,
// compression and I/O overlap the next compute phase. Steps are written one after another in
// the order given, each by Dataset::append_step, so each is published atomically with its
// manifest as before: a crash loses only the steps not yet acknowledged, never a part of one.
//
//   BackgroundWriter bg(dataset, 2);             // at most 2 steps queued or being written
//   Ticket t = bg.submit(StepJob::copied(...));  // returns once the arrays are copied
//   bg.wait(t);                                  // acknowledged: the step is on disk
//   bg.flush();                                  // every step submitted; the first error
//
// When steps come faster than they are written, the queue reaches max_pending and the writer
// follows its OnBacklog policy: block (submit waits for room: every step is written) or skip
// (a step submitted then is not written, and is listed in the manifest as skipped).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "motes/dataset/dataset.hpp"

namespace motes {

struct StepOutcome;

// What a writer does with a step submitted while max_pending steps are in flight.
enum class OnBacklog {
  block,  // submit waits for room: every step is written
  skip,   // the step is not written; it is listed in the manifest's skipped steps ("backlog")
};

// One step to write: append_step's arguments, with the arrays the views point into when
// the job owns copies of them (copy_arrays) rather than borrowing the caller's.
struct StepJob {
  int64_t index = 0;
  double time = 0;
  nlohmann::json attributes = nlohmann::json::object();
  std::vector<SpeciesColumns> species;
  std::vector<FieldInput> fields;
  WriteOptions options;

  // Checks what can be checked before the step is queued (as a synchronous write checks it
  // first): each species' columns (names, dtypes, equal lengths, positions), the attributes
  // and the time; UsageError naming the problem. The checks against the dataset (a new
  // index) wait for the steps before it.
  void check() const;
  // Copies every column and field array into memory the job owns (a strided column becomes
  // contiguous) and points the views there: the caller may reuse its arrays at once. The
  // copies are made by `threads` threads (0: every core); returns the bytes copied.
  uint64_t copy_arrays(unsigned threads = 0);
  bool owns_arrays() const { return !owned_.empty(); }
  // A copy of `bytes` bytes at `src` that the job owns (arrays a custom write reads).
  const void* keep_copy(const void* src, uint64_t bytes);

  // When set, the writer thread runs this instead of Dataset::append_step (a collective MPI
  // write: every rank's writer runs the same steps in the same order).
  std::function<void(StepOutcome&)> custom;

 private:
  std::vector<std::unique_ptr<unsigned char[]>> owned_;
};

// What became of a submitted step.
struct StepOutcome {
  bool done = false;                     // written, skipped, or failed
  bool skipped = false;                  // not written: listed in the manifest's skipped steps
  std::string reason;                    // why, when skipped ("backlog", or the caller's)
  std::exception_ptr error;              // set when the step failed (nothing of it published)
  std::vector<WriteSummary> summaries;   // per species, when written
  std::vector<fields::FieldSummary> field_summaries;
};

class BackgroundWriter {
 public:
  using Ticket = uint64_t;

  // Writes into `dataset` (nullptr when every job is custom), which must outlive the writer
  // and not be written through anything else while it is open. max_pending >= 1: while that
  // many steps are queued or being written (bounded memory), submit waits for room
  // (OnBacklog::block) or skips the step (OnBacklog::skip, which needs the dataset: custom
  // jobs are collective, and every rank would have to skip the same steps). nice (0-19): the
  // writer's thread and the pool its parallel loops use run that much nicer than the process
  // (Linux), so a simulation beside it keeps the cores it wants; 0 leaves them as they are.
  BackgroundWriter(Dataset* dataset, size_t max_pending, OnBacklog on_backlog = OnBacklog::block, int nice = 0);
  // Writes what is queued, then stops (errors left unreported are dropped: call flush first).
  ~BackgroundWriter();
  BackgroundWriter(const BackgroundWriter&) = delete;
  BackgroundWriter& operator=(const BackgroundWriter&) = delete;

  // Queues a step and returns at once unless max_pending steps are in flight: then it waits
  // for room (OnBacklog::block) or skips the step (OnBacklog::skip: skip(), *skipped set).
  // Rethrows the error of an earlier step that no submit or flush has raised yet (once; the
  // job is then not queued), so a failure surfaces on the next call whether or not its
  // outcome was read. With keep, the step's outcome is kept until outcome() reads it.
  Ticket submit(StepJob job, bool keep = true, bool* skipped = nullptr);
  // Skips a step: it is not written, and is listed in the manifest's skipped steps with
  // `reason` once the steps before it are done (its outcome then done and skipped; an error
  // when the index is a step already written). "backlog" is OnBacklog::skip's own (a writer
  // that blocks on a backlog refuses it); another reason is the caller's policy (an ingest
  // writing every k-th step: "every"), taken by any writer with a dataset. Rethrows an
  // earlier step's error as submit does.
  Ticket skip(int64_t index, double time, bool sync = true, bool keep = true, const std::string& reason = "backlog");
  // Whether max_pending steps are in flight: a step submitted now waits, or is skipped.
  bool full() const;
  OnBacklog on_backlog() const { return on_backlog_; }
  // Waits up to timeout_s seconds (< 0: without limit) for the step; true when it is done.
  bool wait(Ticket t, double timeout_s = -1) const;
  // The outcome of a kept step (done false while it is in flight), forgotten once read when
  // done. UsageError for a ticket not kept or already read.
  StepOutcome outcome(Ticket t);
  // Waits for every step submitted (and every skipped one listed); rethrows the first error
  // not yet reported.
  void flush();
  // Steps queued or being written.
  size_t pending() const;
  size_t max_pending() const { return max_pending_; }
  // The last step written (acknowledged), or false when none has been yet.
  bool last_written(int64_t* step) const;

  // How the writer keeps up (what a warning about a backlog reports): steps written so far,
  // the seconds the last one took, and how long it has had nothing to do (0 while it works
  // or has work queued).
  struct Pace {
    uint64_t written = 0;
    double last_step_seconds = 0;
    double idle_seconds = 0;
  };
  Pace pace() const;

 private:
  void run();
  void rethrow_unreported_locked();

  Dataset* dataset_;
  // The large blocks of one step's write kept for the next (core/memory.hpp): custom
  // (collective) steps have no Dataset handle that would keep them.
  HugeBlockReuse reuse_;
  const size_t max_pending_;
  const OnBacklog on_backlog_;
  const int nice_;
  mutable std::mutex mutex_;
  mutable std::condition_variable changed_;
  struct Queued {
    Ticket ticket;
    bool keep;
    StepJob job;        // a skipped step's: its index, time and options, no arrays
    bool skip = false;  // a step skipped, to list in the manifest
    std::string reason; // why a skipped step was (SkippedStep::reason)
  };
  std::deque<Queued> queue_;
  Ticket queue_locked(StepJob job, bool keep, bool skip, const std::string& reason = "backlog");
  // Lists the skipped steps of `batch` (taken from the front of the queue) in the manifest
  // (the lock released meanwhile), and sets their outcomes.
  void list_skipped(std::unique_lock<std::mutex>& lock, std::vector<Queued>& batch);
  struct Slot {
    bool keep = true;
    StepOutcome out;
  };
  std::map<Ticket, Slot> outcomes_;  // in flight, or kept and not read yet
  std::deque<std::exception_ptr> unreported_;  // errors of failed steps no submit or flush has raised yet
  Ticket next_ = 1;
  size_t in_flight_ = 0;  // queued + being written
  size_t skips_ = 0;      // skipped steps not listed in the manifest yet
  bool stopping_ = false;
  bool any_written_ = false;
  int64_t last_written_ = 0;
  uint64_t written_ = 0;
  double last_step_seconds_ = 0;
  bool busy_ = false;
  std::chrono::steady_clock::time_point since_ = std::chrono::steady_clock::now();  // busy or idle since
  std::thread worker_;
};

}  // namespace motes
