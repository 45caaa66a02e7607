// Errors are values. A Status holds its message inline (no heap), so it can be returned from the
// prediction path and from static initializers alike.
#pragma once

#if !defined(_MSC_VER) && __cplusplus < 201703L
#error "tunecast needs C++17 or newer: compile with -std=c++17 (linking tunecast::runtime in CMake requires cxx_std_17)"
#endif

#include <cstdarg>
#include <cstddef>
#include <cstdio>
#include <cstring>

namespace tunecast {

enum class StatusCode : int {
  kOk = 0,
  kInvalidArgument,   // the caller passed something unusable (beam width 0, unknown field...)
  kCorruptModel,      // the blob failed verification
  kUnsupported,       // well-formed but beyond this build (newer format, unknown layer...)
  kBufferTooSmall,    // scratch or output buffer too small
  kNoValidCandidate,  // every candidate broke a constraint, or the end token won (MIOpen policy)
  kNotFound,          // missing file or field
  kIoError,           // unreadable file, failed write
  kAborted,           // the caller's callback stopped the work (BenchmarkStatus::kAbort)
};

const char* status_code_name(StatusCode code);

class Status {
 public:
  static constexpr size_t kMaxMessage = 240;

  Status() = default;  // ok
  static Status ok() { return Status(); }

#if defined(__GNUC__)
  __attribute__((format(printf, 2, 3)))
#endif
  static Status error(StatusCode code, const char* format, ...) {
    Status status;
    status.code_ = code;
    va_list args;
    va_start(args, format);
    std::vsnprintf(status.message_, kMaxMessage, format, args);
    va_end(args);
    return status;
  }

  // `head` then `tail` (" in model.json"). When both do not fit, `head` is cut and ends in "..."
  // so that `tail`, which names the culprit, survives.
  static Status error_with_tail(StatusCode code, const char* head, const char* tail) {
    const size_t room = kMaxMessage - 1, head_size = std::strlen(head), tail_size = std::strlen(tail);
    if (head_size + tail_size <= room || tail_size + 3 > room) return error(code, "%s%s", head, tail);
    size_t cut = room - tail_size - 3;
    while (cut > 0 && (static_cast<unsigned char>(head[cut]) & 0xC0) == 0x80) --cut;  // whole UTF-8 characters
    return error(code, "%.*s...%s", static_cast<int>(cut), head, tail);
  }

  bool is_ok() const { return code_ == StatusCode::kOk; }
  explicit operator bool() const { return is_ok(); }
  StatusCode code() const { return code_; }
  const char* message() const { return is_ok() ? "ok" : message_; }

 private:
  StatusCode code_ = StatusCode::kOk;
  char message_[kMaxMessage] = {};
};

#define TUNECAST_RETURN_IF_ERROR(expr)          \
  do {                                          \
    ::tunecast::Status tunecast_status_ = (expr); \
    if (!tunecast_status_.is_ok()) return tunecast_status_; \
  } while (0)

}  // namespace tunecast
