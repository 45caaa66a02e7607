// `tunecast tune --bench-cmd CMD`: the user's benchmark process, started once through /bin/sh -c
// in its own process group, spoken to by a line protocol (docs/search.md): one candidate per line
// on its stdin (values comma-separated, in the model's parameter order), one answer per line on
// its stdout (a time, or `fail`). Its stderr passes through.
//
// Protocol 2 (opt-in, docs/search.md): the command is started with TUNECAST_PROTOCOL=2 in its
// environment; one that speaks it writes `tunecast-protocol 2` as its first line, before reading
// anything. Only then does tunecast send the two further lines: `prepare C1 C2 ...` (configs the
// search will benchmark next, values comma-separated, configs space-separated; no answer) and
// `problem TEXT` (the problem of the candidates that follow; no answer). A command that never
// writes the greeting sees nothing but candidate lines, as before.
#pragma once

#include <sys/types.h>
#include <sys/wait.h>

#include <chrono>
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
  ~BenchCommand();  // kills its process group (what is left of it) and reaps the command

  // Starts `command` with `environment` ("NAME=value") added to ours.
  Status start(const std::string& command, const std::vector<std::string>& environment, double timeout_seconds);

  // Told of the configs the search will benchmark next (Benchmark::prepare). Sent as a `prepare`
  // line to a protocol-2 command; kept until the first answer tells the protocol otherwise (then
  // the configs not yet run are sent when the greeting is read), dropped for a protocol-1 command.
  void prepare(const int64_t* configs, int config_count, int count);

  // Protocol 2 only: the problem of the candidates that follow (a `problem` line). False (nothing
  // sent) when the command does not speak protocol 2: it serves only its TUNECAST_PROBLEM.
  bool set_problem(const std::string& text);

  // 0 while unknown (no line read yet), 1 or 2.
  int protocol() const { return protocol_; }
  bool running() const { return pid_ > 0 && !reaped_; }
  // Started and not exited (reaps it, without waiting, when it has).
  bool alive();

  // Why run() returned kAbort: no answer in time (the command was killed), the command ended its
  // output or could not be written to (it died), or its answer broke the protocol.
  enum class Fault { kNone, kTimeout, kDied, kGarbage };
  Fault fault() const { return fault_; }
  // The kind of the last `fail` answer ("fail" when it named none): the record's status.
  const std::string& failure_kind() const { return failure_kind_; }

  // Writes one candidate, reads its answer. kFailed for `fail`; kAbort (error() says why) for
  // anything else, end of output, or no answer within the timeout.
  BenchmarkStatus run(const int64_t* values, int count, double* time);

  // Closes the child's stdin and reaps it (waiting up to `grace_seconds`, then killing its group).
  // A non-zero exit after the last answer is a note, not an error: every answer had arrived.
  void finish(double grace_seconds, std::string* note);

  const Status& error() const { return error_; }
  int candidates() const { return candidates_; }
  int answers() const { return answers_; }  // candidates answered with a time or `fail`
  // Its exit status once it has exited normally (reaped); -1 while running or when a signal ended it.
  int exit_status() const { return reaped_ && WIFEXITED(wait_status_) ? WEXITSTATUS(wait_status_) : -1; }
  // Gone before its first answer with status 0 (it never read a line), 126 or 127 (the shell could
  // not run it): the command is broken, not the candidate it was asked.
  bool broken_command() const {
    return fault_ == Fault::kDied && answers_ == 0 && (exit_status() == 0 || exit_status() == 126 || exit_status() == 127);
  }

 private:
  bool read_line(std::string* line, double timeout_seconds);
  bool write_line(const std::string& line);
  void peek_greeting();  // reads what has arrived without waiting; notes a greeting
  std::string exit_text();
  void kill_group();

  pid_t pid_ = -1;
  int to_child_ = -1;
  int from_child_ = -1;
  double timeout_ = 600.0;
  std::string buffer_;
  Status error_;
  int candidates_ = 0;
  int answers_ = 0;
  std::string failure_kind_ = "fail";
  bool reaped_ = false;
  int wait_status_ = 0;
  std::chrono::steady_clock::time_point exited_at_{};  // when read_line saw it exit
  int protocol_ = 0;
  std::vector<std::string> pending_;     // configs announced before the protocol was known
  Fault fault_ = Fault::kNone;
};

// The first line a protocol-2 benchmark command writes.
constexpr const char* kProtocolGreeting = "tunecast-protocol 2";

}  // namespace tunecast::cli
