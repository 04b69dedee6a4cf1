// Errors. Inside fastkernels errors are exceptions (fk::Error) that name what failed and
// where; at the candidate ABI, which is C, they become fk_status codes plus a thread-local
// message (fk_last_error), because exceptions must never cross a shared-library boundary.
#pragma once
#include <source_location>
#include <sstream>
#include <stdexcept>
#include <string>

extern "C" {
typedef int fk_status;
enum {
  FK_OK = 0,
  FK_ERR_INVALID_ARGUMENT = 1,  // shapes, dtypes, strides or attributes the op does not accept
  FK_ERR_UNSUPPORTED = 2,       // valid but not implemented by this implementation
  FK_ERR_CUDA = 3,              // a CUDA / cuBLAS call failed
  FK_ERR_INTERNAL = 4,          // anything else
  FK_ERR_OUT_OF_MEMORY = 5,
};
}

namespace fk {

const char* status_name(fk_status s);

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what, fk_status code = FK_ERR_INTERNAL)
      : std::runtime_error(what), code_(code) {}
  fk_status code() const noexcept { return code_; }

 private:
  fk_status code_;
};

[[noreturn]] void throw_error(fk_status code, const std::string& msg,
                              std::source_location loc = std::source_location::current());

// Builds a message from any streamable pieces: fk::concat("shape ", n, " != ", m).
template <class... Args>
std::string concat(const Args&... args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}

// The message of the last error an op reported on this thread (set by op_guard).
const char* last_error_message();
void set_last_error_message(const std::string& msg);

// Runs f, turning any exception into a status and the thread-local message: the shape of
// every op entry point that crosses the C ABI.
template <class F>
fk_status op_guard(F&& f) noexcept {
  try {
    f();
    return FK_OK;
  } catch (const Error& e) {
    set_last_error_message(e.what());
    return e.code();
  } catch (const std::bad_alloc&) {
    set_last_error_message("out of host memory");
    return FK_ERR_OUT_OF_MEMORY;
  } catch (const std::exception& e) {
    set_last_error_message(e.what());
    return FK_ERR_INTERNAL;
  } catch (...) {
    set_last_error_message("unknown exception");
    return FK_ERR_INTERNAL;
  }
}

}  // namespace fk

// FK_CHECK(cond, pieces...): throws fk::Error(FK_ERR_INVALID_ARGUMENT) naming the condition,
// the place and the pieces.
#define FK_CHECK(cond, ...)                                                               \
  do {                                                                                    \
    if (!(cond)) [[unlikely]]                                                             \
      ::fk::throw_error(FK_ERR_INVALID_ARGUMENT,                                          \
                        ::fk::concat("check failed: " #cond ": " __VA_OPT__(, ) __VA_ARGS__)); \
  } while (0)

#define FK_FAIL(code, ...) ::fk::throw_error((code), ::fk::concat(__VA_ARGS__))
