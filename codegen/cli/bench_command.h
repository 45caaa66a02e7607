// `tunecast tune --bench-cmd CMD`: the user's benchmark process, started once through /bin/sh -c
// in its own process group, spoken to by a line protocol (docs/search.md): one candidate per line
// on its stdin (values comma-separated, in the model's parameter order), one answer per line on
// its stdout (a time, or `fail`). Its stderr passes through.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "tunecast/search.h"
#include "tunecast/status.h"

namespace tunecast::cli {

class BenchCommand {
 public:
  BenchCommand() = default;
  BenchCommand(const BenchCommand&) = delete;
  BenchCommand& operator=(const BenchCommand&) = delete;
  ~BenchCommand();  // kills and reaps a child still running

  // Starts `command` with `environment` ("NAME=value") added to ours.
  Status start(const std::string& command, const std::vector<std::string>& environment, double timeout_seconds);

  // Writes one candidate, reads its answer. kFailed for `fail`; kAbort (error() says why) for
  // anything else, end of output, or no answer within the timeout.
  BenchmarkStatus run(const int64_t* values, int count, double* time);

  // Closes the child's stdin and reaps it (waiting up to `grace_seconds`, then killing its group).
  // A non-zero exit after the last answer is a note, not an error: every answer had arrived.
  void finish(double grace_seconds, std::string* note);

  const Status& error() const { return error_; }
  int candidates() const { return candidates_; }

 private:
  bool read_line(std::string* line, double timeout_seconds);
  std::string exit_text();
  void kill_group();

  pid_t pid_ = -1;
  int to_child_ = -1;
  int from_child_ = -1;
  double timeout_ = 600.0;
  std::string buffer_;
  Status error_;
  int candidates_ = 0;
  bool reaped_ = false;
  int wait_status_ = 0;
};

}  // namespace tunecast::cli
