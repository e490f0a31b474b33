// Remote stores from Python (motes.remote): a store's size and read functions, called by
// the core (from any thread, the GIL taken for the call) for the paths under its prefix.
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstring>

#include "common.hpp"
#include "motes/io/remote.hpp"

namespace motes_py {

namespace {

// size(key) -> int or None (absent); read(key, [(offset, length), ...]) -> [bytes-like, ...];
// both with the keywords deadline (time.monotonic() seconds, or None) and cancelled (a
// function telling whether the job was cancelled, or None): the bounds of the job this
// thread works for (motes::current_cancellation: a query's, also on its helper threads).
class PythonStore final : public motes::RemoteStore {
 public:
  PythonStore(nb::object size, nb::object read, std::string base) : size_(size), read_(read), base_(std::move(base)) {}
  ~PythonStore() override {
    if (Py_IsInitialized()) {
      nb::gil_scoped_acquire gil;
      size_.reset();
      read_.reset();
    } else {
      size_.release();  // the interpreter is gone: nothing to give back
      read_.release();
    }
  }

  uint64_t size(const std::string& key) const override {
    nb::gil_scoped_acquire gil;
    nb::object got = call([&] { return size_(key, "deadline"_a = deadline(), "cancelled"_a = cancelled()); }, key);
    if (got.is_none()) throw motes::NotFoundError(url(key) + ": no such object", ENOENT);
    return nb::cast<uint64_t>(got);
  }

  void read(const std::string& key, const std::vector<motes::ByteRange>& ranges,
            const std::vector<void*>& dst) const override {
    nb::gil_scoped_acquire gil;
    nb::list asked;
    for (const motes::ByteRange& r : ranges) asked.append(nb::make_tuple(r.offset, r.length));
    nb::object got =
        call([&] { return read_(key, asked, "deadline"_a = deadline(), "cancelled"_a = cancelled()); }, key);
    size_t i = 0;
    for (nb::handle piece : got) {
      if (i == ranges.size()) break;
      Py_buffer view;
      if (PyObject_GetBuffer(piece.ptr(), &view, PyBUF_SIMPLE) != 0) throw nb::python_error();
      const bool whole = uint64_t(view.len) == ranges[i].length;
      if (whole) std::memcpy(dst[i], view.buf, size_t(view.len));
      PyBuffer_Release(&view);
      if (!whole)
        throw motes::IOError(url(key) + ": the store gave " + std::to_string(view.len) + " bytes for a range of " +
                             std::to_string(ranges[i].length) + " at " + std::to_string(ranges[i].offset));
      ++i;
    }
    if (i != ranges.size())
      throw motes::IOError(url(key) + ": the store gave " + std::to_string(i) + " ranges of " +
                           std::to_string(ranges.size()));
  }

  std::string url(const std::string& key) const override { return base_ + key; }

 private:
  // The deadline of this thread's job, as time.monotonic() seconds.
  static nb::object deadline() {
    const motes::Cancellation* c = motes::current_cancellation();
    const std::optional<double> at = c ? deadline_seconds(c->deadline()) : std::nullopt;
    return at ? nb::object(nb::float_(*at)) : nb::none();
  }
  // Whether this thread's job was cancelled (a copy of its token: the function may outlive it).
  static nb::object cancelled() {
    const motes::Cancellation* c = motes::current_cancellation();
    if (!c) return nb::none();
    return nb::cpp_function([job = *c]() { return job.cancelled(); });
  }

  // A Python failure of the store becomes the core's error naming the object: a motes error
  // (a read stopped at its deadline: CancelledError; a missing object: NotFoundError) keeps
  // its kind and message, anything else is an I/O error with its type's name.
  template <class F>
  nb::object call(F&& f, const std::string& key) const {
    try {
      return f();
    } catch (nb::python_error& e) {
      // The exception's type and message (its traceback stays out of the core's message).
      std::string kind = nb::cast<std::string>(nb::str(e.type().attr("__name__")));
      std::string text = nb::cast<std::string>(nb::str(e.value())).substr(0, 2000);
      const std::string where = url(key);
      if (nb::hasattr(e.value(), "kind"))
        for (const motes::ErrorKindInfo& k : motes::error_kinds)
          if (nb::isinstance<nb::str>(e.value().attr("kind")) && nb::cast<std::string>(e.value().attr("kind")) == k.name &&
              kind == k.python_class)
            motes::throw_error(k.kind, text.rfind(where, 0) == 0 ? text : where + ": " + text);
      throw motes::IOError(where + ": " + kind + ": " + text);
    }
  }

  mutable nb::object size_, read_;
  std::string base_;
};

}  // namespace

void bind_remote(nb::module_& m) {
  m.def(
      "register_remote_store",
      [](const std::string& prefix, nb::object size, nb::object read, const std::string& base) {
        motes::register_remote_store(prefix, std::make_shared<PythonStore>(size, read, base));
      },
      "prefix"_a, "size"_a, "read"_a, "base"_a,
      "Reads the paths under `prefix` through size(key) -> int | None and read(key, [(offset, length)]) -> "
      "[bytes]; `base` + key names an object in messages.");
  m.def("unregister_remote_store", [](const std::string& prefix) {
    nb::gil_scoped_release release;  // a store's last reference may go with it
    motes::unregister_remote_store(prefix);
  });
  m.def("remote_counters", [] {
    motes::RemoteCounters c = motes::remote_counters();
    return nb::make_tuple(c.calls, c.ranges, c.bytes);
  }, "(calls, ranges, bytes) asked of every remote store since the process started.");
}

}  // namespace motes_py
