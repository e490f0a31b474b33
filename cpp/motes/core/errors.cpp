#include "motes/core/errors.hpp"

#include <filesystem>
#include <new>
#include <system_error>

namespace motes {

ErrorReport describe_exception(std::exception_ptr e) {
  try {
    std::rethrow_exception(e);
  } catch (const Error& x) {
    return {x.kind(), x.error_number(), x.what()};
  } catch (const std::filesystem::filesystem_error& x) {
    const std::error_code& c = x.code();
    bool is_errno = c.category() == std::generic_category() || c.category() == std::system_category();
    return {ErrorKind::io, is_errno ? c.value() : 0, x.what()};
  } catch (const std::bad_alloc&) {
    return {ErrorKind::memory, 0, "out of memory"};
  } catch (const std::exception& x) {
    return {ErrorKind::internal, 0, x.what()};
  } catch (...) {
    return {ErrorKind::internal, 0, "an exception that is not a std::exception"};
  }
}

void throw_error(ErrorKind kind, const std::string& message, int error_number) {
  switch (kind) {
#define MOTES_ERROR_KIND_THROW(kind, cls, ...) \
  case ErrorKind::kind:                        \
    throw cls(message, error_number);
    MOTES_ERROR_KINDS(MOTES_ERROR_KIND_THROW)
#undef MOTES_ERROR_KIND_THROW
  }
  throw InternalError(message + " (unknown error kind " + std::to_string(int(kind)) + ")", error_number);
}

}  // namespace motes
