// Every kind of failure motes reports, in one table: the single source of truth for
// the C++ exception class, the C API status (capi/motes.h), the Python exception
// class (python/src/errors.cpp registers them from this table, exported as
// motes._core.error_kinds) and the exit status of the `motes` command. The MPI layer
// carries the kind between ranks (parallel/agree.cpp) and raises the same class on
// every rank. docs/guide.md#errors shows the table; tests check every layer against it.
//
// X(kind, CppClass, c_status, code, python_class, python_bases, exit_code, description)
//   code         the value of ErrorKind and of the C status c_status: stable, never renumber
//   python_class derives from motes.MotesError and from python_bases: Python classes of
//                rows above, then builtins ("": MotesError alone). Classes deriving from
//                OSError take errno, strerror and filename keywords (python/src/errors.cpp)
//   exit_code    of the `motes` command when the command fails with this kind
#pragma once

#include <exception>
#include <stdexcept>
#include <string>
#include <string_view>

#define MOTES_ERROR_KINDS(X)                                                                                    \
  X(usage, UsageError, MOTES_ERROR_USAGE, 1, "UsageError", "ValueError", 2,                                      \
    "the caller got something wrong: arguments, data, names, a step that exists, a busy lock")                  \
  X(format, FormatError, MOTES_ERROR_FORMAT, 2, "FormatError", "ValueError", 1,                                  \
    "a file or manifest is not valid motes data: corrupted, truncated or foreign")                             \
  X(io, IOError, MOTES_ERROR_IO, 3, "StorageError", "OSError", 1,                                                \
    "the operating system failed: cannot create, open, read, write, sync or rename; a full disk")               \
  X(memory, OutOfMemoryError, MOTES_ERROR_MEMORY, 4, "OutOfMemoryError", "MemoryError", 1, "out of memory")     \
  X(internal, InternalError, MOTES_ERROR_INTERNAL, 5, "InternalError", "", 1,                                    \
    "a bug in motes: please report it with the message")                                                        \
  X(not_found, NotFoundError, MOTES_ERROR_NOT_FOUND, 6, "NotFoundError", "StorageError, FileNotFoundError", 1,  \
    "a dataset or file does not exist")                                                                         \
  X(cancelled, CancelledError, MOTES_ERROR_CANCELLED, 7, "CancelledError", "", 1,                                \
    "a query was stopped before it finished: cancelled by its caller, or past its deadline")                    \
  X(replaced, ReplacedError, MOTES_ERROR_REPLACED, 8, "DatasetReplacedError", "", 1,                             \
    "a dataset was deleted and written again (or its steps changed) since a handle read it: open it again")

namespace motes {

enum class ErrorKind : int {
#define MOTES_ERROR_KIND_ENUM(kind, cls, c_status, code, ...) kind = code,
  MOTES_ERROR_KINDS(MOTES_ERROR_KIND_ENUM)
#undef MOTES_ERROR_KIND_ENUM
};

// One row of the table.
struct ErrorKindInfo {
  ErrorKind kind;
  const char* name;          // "usage", "not_found", ...
  const char* cpp_class;     // "UsageError" (motes::UsageError)
  const char* c_status;      // "MOTES_ERROR_USAGE"
  int code;                  // int(kind): the C status value
  const char* python_class;  // "UsageError" (motes.UsageError)
  const char* python_bases;  // "ValueError", "StorageError, FileNotFoundError", or "" for MotesError alone
  int exit_code;             // of the motes command
  const char* description;
};

inline constexpr ErrorKindInfo error_kinds[] = {
#define MOTES_ERROR_KIND_ROW(kind, cls, c_status, code, py, py_bases, exit_code, description) \
  {ErrorKind::kind, #kind, #cls, #c_status, code, py, py_bases, exit_code, description},
    MOTES_ERROR_KINDS(MOTES_ERROR_KIND_ROW)
#undef MOTES_ERROR_KIND_ROW
};

// The row of a code; nullptr when no kind has it.
constexpr const ErrorKindInfo* find_error_kind(int code) {
  for (const ErrorKindInfo& k : error_kinds)
    if (k.code == code) return &k;
  return nullptr;
}
constexpr const ErrorKindInfo& info(ErrorKind kind) { return *find_error_kind(int(kind)); }

// Every failure motes reports is a motes::Error of one kind, whose message names the
// problem; each kind has its class below (UsageError, FormatError, ...).
class Error : public std::runtime_error {
 public:
  // error_number: the errno of a failed system call (io, not_found); 0 when unknown.
  Error(ErrorKind kind, const std::string& message, int error_number = 0)
      : std::runtime_error(message), kind_(kind), error_number_(error_number) {}
  // A failure of no more specific kind: internal.
  explicit Error(const std::string& message) : Error(ErrorKind::internal, message) {}
  ErrorKind kind() const noexcept { return kind_; }
  int error_number() const noexcept { return error_number_; }

 private:
  ErrorKind kind_;
  int error_number_;
};

// UsageError, FormatError, IOError, OutOfMemoryError, InternalError, NotFoundError, CancelledError,
// ReplacedError.
#define MOTES_ERROR_KIND_CLASS(kind, cls, ...)                                                 \
  struct cls : Error {                                                                         \
    explicit cls(const std::string& message, int error_number = 0)                             \
        : Error(ErrorKind::kind, message, error_number) {}                                     \
  };
MOTES_ERROR_KINDS(MOTES_ERROR_KIND_CLASS)
#undef MOTES_ERROR_KIND_CLASS

// A caught exception by the table: a motes::Error keeps its kind; std::filesystem's
// errors are io (with their errno), std::bad_alloc is memory, anything else internal.
struct ErrorReport {
  ErrorKind kind = ErrorKind::internal;
  int error_number = 0;  // errno when known, else 0
  std::string message;
  bool operator==(const ErrorReport&) const = default;
};
ErrorReport describe_exception(std::exception_ptr e);

// Throws the class of `kind` (the table's C++ class) with this message and errno.
[[noreturn]] void throw_error(ErrorKind kind, const std::string& message, int error_number = 0);
[[noreturn]] inline void throw_error(const ErrorReport& r) { throw_error(r.kind, r.message, r.error_number); }

}  // namespace motes
