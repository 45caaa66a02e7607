#include "tunecast/status.h"

namespace tunecast {

const char* status_code_name(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return "ok";
    case StatusCode::kInvalidArgument: return "invalid argument";
    case StatusCode::kCorruptModel: return "corrupt model";
    case StatusCode::kUnsupported: return "unsupported";
    case StatusCode::kBufferTooSmall: return "buffer too small";
    case StatusCode::kNoValidCandidate: return "no valid candidate";
    case StatusCode::kNotFound: return "not found";
    case StatusCode::kIoError: return "i/o error";
    case StatusCode::kAborted: return "aborted";
  }
  return "unknown";
}

}  // namespace tunecast
