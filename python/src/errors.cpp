// The exceptions: motes.MotesError and one class per kind of the core's error table
// (core/errors.hpp), and the translation of C++ exceptions into them.
#include <nanobind/eval.h>

#include <filesystem>
#include <new>
#include <string_view>

#include "common.hpp"
#include "motes/core/errors.hpp"

namespace motes_py {

namespace {

// motes.MotesError and the class of each kind of the error table, made by bind_errors.
nb::object motes_error;
nb::object error_classes[std::size(motes::error_kinds)];

// The methods of the classes deriving from OSError: they take the keywords errno, strerror
// (from errno when not given; ENOENT for a FileNotFoundError) and filename; str() is the
// message alone, and pickling keeps all of them. Also _rebuild_error, which unpickles them.
nb::dict os_error_methods() {
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
  return os_error;
}

// The bases of error kind i: its table's Python bases, and MotesError first unless a class
// of the table (a MotesError) is among them, except after a builtin base whose instances
// its own constructor makes (MemoryError): a class's first base fixes which __new__ is safe
// for it, and unpickling by cls.__new__(cls) (tblib's, as dask's distributed installs it)
// needs that base's.
nb::list error_bases(size_t i) {
  const motes::ErrorKindInfo& k = motes::error_kinds[i];
  nb::module_ builtins = nb::module_::import_("builtins");
  nb::list bases;
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
  if (!own) {
    size_t at = 0;
    for (size_t b = 0; b < bases.size(); ++b) {
      auto* t = reinterpret_cast<PyTypeObject*>(bases[b].ptr());
      if (t->tp_new != reinterpret_cast<PyTypeObject*>(PyExc_BaseException)->tp_new &&
          PyObject_IsSubclass(bases[b].ptr(), PyExc_OSError) != 1)
        at = b + 1;
    }
    bases.insert(Py_ssize_t(at), motes_error);
  }
  return bases;
}

// The class of error kind i ("motes.UsageError", ...), with class attributes kind and exit_code.
nb::object error_class(size_t i, const nb::dict& os_error) {
  const motes::ErrorKindInfo& k = motes::error_kinds[i];
  nb::list bases = error_bases(i);
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
  return cls;
}

// Raises the Python error of a report. Messages quote user input and file bytes: decoded
// with backslashreplace, a byte that is not UTF-8 shows as \xNN instead of turning the error
// into a UnicodeDecodeError. An OSError subclass gets the errno when the core knew it.
void raise_report(const motes::ErrorReport& r) {
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
}

}  // namespace

void bind_errors(nb::module_& m) {
  // motes.MotesError, and one class per kind of the error table (core/errors.hpp), each
  // deriving from MotesError and the kind's Python bases (ValueError, OSError, ...), with
  // class attributes kind and exit_code. error_kinds: the table, for the CLI and the docs.
  motes_error = nb::borrow(PyErr_NewExceptionWithDoc("motes.MotesError", "Base class of motes' errors.",
                                                     PyExc_Exception, nullptr));
  m.attr("MotesError") = motes_error;
  nb::dict os_error = os_error_methods();
  m.attr("_rebuild_error") = os_error["_rebuild_error"];
  nb::list kinds;
  for (size_t i = 0; i < std::size(motes::error_kinds); ++i) {
    const motes::ErrorKindInfo& k = motes::error_kinds[i];
    error_classes[i] = error_class(i, os_error);
    m.attr(k.python_class) = error_classes[i];
    kinds.append(nb::make_tuple(k.name, k.code, error_classes[i], k.exit_code, k.description));
  }
  m.attr("error_kinds") = kinds;  // (name, C status, class, exit code, description) per kind
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const motes::Error&) {
    } catch (const std::filesystem::filesystem_error&) {
    } catch (const std::bad_alloc&) {
    }  // anything else: nanobind's own translation
    raise_report(motes::describe_exception(p));
  });
}

}  // namespace motes_py
