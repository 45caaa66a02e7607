#include "bench_command.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>

extern char** environ;

namespace tunecast::cli {
namespace {

using Clock = std::chrono::steady_clock;

// The process groups of the commands running now. A command runs in its own group (a timeout ends
// it and its children), which a terminal's Ctrl-C does not reach: a tune stopped by SIGINT, SIGTERM
// (a scheduler's) or SIGHUP kills these groups before it dies, or they run on, reparented to init.
constexpr int kMaxGroups = 256;
std::atomic<pid_t> g_groups[kMaxGroups];

extern "C" void kill_groups_and_die(int sig) {
  for (std::atomic<pid_t>& g : g_groups) {
    const pid_t pid = g.load();
    if (pid > 0) kill(-pid, SIGKILL);
  }
  signal(sig, SIG_DFL);
  raise(sig);
}

void install_group_killer() {
  static std::once_flag installed;
  std::call_once(installed, [] {
    for (int sig : {SIGINT, SIGTERM, SIGHUP}) {
      struct sigaction old = {};
      sigaction(sig, nullptr, &old);
      if (old.sa_handler == SIG_IGN) continue;  // nohup's SIGHUP, a shell's background SIGINT: kept ignored
      struct sigaction action = {};
      action.sa_handler = kill_groups_and_die;
      sigemptyset(&action.sa_mask);
      sigaction(sig, &action, nullptr);
    }
  });
}

void watch_group(pid_t pid) {
  for (std::atomic<pid_t>& g : g_groups) {
    pid_t free_slot = 0;
    if (g.compare_exchange_strong(free_slot, pid)) return;
  }
}

void unwatch_group(pid_t pid) {
  for (std::atomic<pid_t>& g : g_groups) {
    pid_t mine = pid;
    if (g.compare_exchange_strong(mine, 0)) return;
  }
}

// The line as received, for messages: printable, at most 60 characters.
std::string shown(const std::string& line) {
  std::string out;
  for (char c : line.substr(0, 60)) out += (c >= 32 && c < 127) ? c : '?';
  return line.size() > 60 ? out + "..." : out;
}

std::string values_text(const int64_t* values, int count) {
  std::string text;
  for (int i = 0; i < count; ++i) text += (i ? "," : "") + std::to_string(values[i]);
  return text;
}

}  // namespace

BenchCommand::~BenchCommand() {
  if (to_child_ >= 0) close(to_child_);
  if (from_child_ >= 0) close(from_child_);
  if (pid_ > 0) {
    kill(-pid_, SIGKILL);  // the group: also what the command left running (a child holding its output)
    if (!reaped_) waitpid(pid_, &wait_status_, 0);
    unwatch_group(pid_);
  }
}

Status BenchCommand::start(const std::string& command, const std::vector<std::string>& environment,
                           double timeout_seconds) {
  timeout_ = timeout_seconds;
  // A child that dies while we write must not kill us with SIGPIPE: write() then says EPIPE.
  signal(SIGPIPE, SIG_IGN);
  int in[2], out[2];
  if (pipe2(in, O_CLOEXEC) != 0) return Status::error(StatusCode::kIoError, "--bench-cmd: pipe: %s", std::strerror(errno));
  if (pipe2(out, O_CLOEXEC) != 0) {
    close(in[0]);
    close(in[1]);
    return Status::error(StatusCode::kIoError, "--bench-cmd: pipe: %s", std::strerror(errno));
  }
  std::vector<std::string> env_strings;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry(*e);
    bool replaced = false;
    for (const std::string& mine : environment) {
      const std::string name = mine.substr(0, mine.find('=') + 1);
      replaced = replaced || entry.compare(0, name.size(), name) == 0;
    }
    if (!replaced) env_strings.push_back(entry);
  }
  env_strings.insert(env_strings.end(), environment.begin(), environment.end());
  // Protocol 2 is offered, never imposed: a command that does not greet is spoken to as before.
  bool protocol_given = false;
  for (const std::string& mine : environment) protocol_given = protocol_given || mine.rfind("TUNECAST_PROTOCOL=", 0) == 0;
  if (!protocol_given) env_strings.push_back("TUNECAST_PROTOCOL=2");
  std::vector<char*> envp;
  for (std::string& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in[0], 0);
  posix_spawn_file_actions_adddup2(&actions, out[1], 1);
  // A stop signal between the spawn and watch_group would leave the command running: held back
  // until the group is watched (the command itself starts with our mask as it was).
  install_group_killer();
  sigset_t stops, before;
  sigemptyset(&stops);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&stops, sig);
  pthread_sigmask(SIG_BLOCK, &stops, &before);
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK);
  posix_spawnattr_setsigmask(&attributes, &before);
  posix_spawnattr_setpgroup(&attributes, 0);  // its own group: a timeout ends the command and its children
  std::string shell_command = command;
  char sh[] = "/bin/sh", dash_c[] = "-c";
  char* argv[] = {sh, dash_c, shell_command.data(), nullptr};
  const int rc = posix_spawn(&pid_, "/bin/sh", &actions, &attributes, argv, envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  close(in[0]);
  close(out[1]);
  to_child_ = in[1];
  from_child_ = out[0];
  if (rc == 0) watch_group(pid_);
  pthread_sigmask(SIG_SETMASK, &before, nullptr);
  if (rc != 0) {
    pid_ = -1;
    return Status::error(StatusCode::kIoError, "--bench-cmd: cannot start /bin/sh: %s", std::strerror(rc));
  }
  return Status::ok();
}

bool BenchCommand::alive() {
  if (pid_ <= 0 || reaped_) return false;
  if (waitpid(pid_, &wait_status_, WNOHANG) == pid_) reaped_ = true;
  return !reaped_;
}

void BenchCommand::kill_group() {
  if (pid_ > 0 && !reaped_) kill(-pid_, SIGKILL);
}

std::string BenchCommand::exit_text() {
  if (pid_ <= 0) return "";
  if (!reaped_) {
    // It closed its output: give it a moment to exit so that its status can be told.
    for (int i = 0; i < 100 && !reaped_; ++i) {
      if (waitpid(pid_, &wait_status_, WNOHANG) == pid_) {
        reaped_ = true;
      } else {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
    }
  }
  if (!reaped_) return "";
  if (WIFEXITED(wait_status_)) return " (it exited with status " + std::to_string(WEXITSTATUS(wait_status_)) + ")";
  if (WIFSIGNALED(wait_status_)) return " (it was killed by signal " + std::to_string(WTERMSIG(wait_status_)) + ")";
  return "";
}

bool BenchCommand::read_line(std::string* line, double timeout_seconds) {
  const Clock::time_point deadline =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_seconds));
  for (;;) {
    const size_t newline = buffer_.find('\n');
    if (newline != std::string::npos) {
      *line = buffer_.substr(0, newline);
      buffer_.erase(0, newline + 1);
      return true;
    }
    const double left = std::chrono::duration<double>(deadline - Clock::now()).count();
    if (left <= 0.0) {
      errno = ETIMEDOUT;
      return false;
    }
    pollfd fd{from_child_, POLLIN, 0};
    // In slices of 0.25 s: a command whose children keep its output open (a compile pool) must
    // not hide its own death until the timeout. Once it has exited, what it wrote is read, and
    // half a second without a line is the end of its output.
    const int ready = poll(&fd, 1, static_cast<int>(std::min(left * 1000.0 + 1.0, 250.0)));
    if (ready < 0 && errno == EINTR) continue;
    if (ready == 0) {  // the deadline check above ends it
      if (pid_ > 0 && !reaped_ && waitpid(pid_, &wait_status_, WNOHANG) == pid_) {
        reaped_ = true;
        exited_at_ = Clock::now();
      }
      if (reaped_ && std::chrono::duration<double>(Clock::now() - exited_at_).count() >= 0.5) {
        errno = 0;  // end of output: the command is gone
        *line = buffer_;
        return false;
      }
      continue;
    }
    char chunk[4096];
    const ssize_t n = read(from_child_, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      errno = 0;  // end of output
      *line = buffer_;
      return false;
    }
    buffer_.append(chunk, static_cast<size_t>(n));
  }
}

bool BenchCommand::write_line(const std::string& line) {
  const std::string text = line + "\n";
  for (size_t written = 0; written < text.size();) {
    const ssize_t n = write(to_child_, text.data() + written, text.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return false;
    written += static_cast<size_t>(n);
  }
  return true;
}

void BenchCommand::peek_greeting() {
  if (protocol_ != 0 || from_child_ < 0) return;
  for (;;) {
    if (buffer_.find('\n') != std::string::npos) break;
    pollfd fd{from_child_, POLLIN, 0};
    if (poll(&fd, 1, 0) <= 0 || !(fd.revents & POLLIN)) break;
    char chunk[4096];
    const ssize_t n = read(from_child_, chunk, sizeof chunk);
    if (n <= 0) break;  // end of output: run() tells
    buffer_.append(chunk, static_cast<size_t>(n));
  }
  const size_t newline = buffer_.find('\n');
  if (newline == std::string::npos) return;
  std::string first = buffer_.substr(0, newline);
  while (!first.empty() && std::isspace(static_cast<unsigned char>(first.back()))) first.pop_back();
  if (first == kProtocolGreeting) {
    buffer_.erase(0, newline + 1);
    protocol_ = 2;
  } else {
    protocol_ = 1;  // a line before any request: run() reports it
    pending_.clear();
  }
}

void BenchCommand::prepare(const int64_t* configs, int config_count, int count) {
  if (config_count <= 0) return;
  if (protocol_ == 0 && running()) peek_greeting();
  if (protocol_ == 1) return;
  std::vector<std::string> list;
  for (int i = 0; i < config_count; ++i) list.push_back(values_text(configs + static_cast<size_t>(i) * count, count));
  if (protocol_ == 0) {
    pending_ = std::move(list);
    return;
  }
  std::string line = "prepare";
  for (const std::string& c : list) line += " " + c;
  write_line(line);  // a command that died is told by the next run()
}

bool BenchCommand::set_problem(const std::string& text) {
  if (protocol_ == 0 && running()) peek_greeting();
  if (protocol_ != 2) return false;
  write_line("problem " + text);
  return true;
}

BenchmarkStatus BenchCommand::run(const int64_t* values, int count, double* time) {
  ++candidates_;
  fault_ = Fault::kNone;
  const std::string candidate = values_text(values, count);
  if (protocol_ == 0) peek_greeting();
  // Configs announced before the greeting was read: sent now, less this one (being run).
  auto send_pending = [&]() {
    std::string line = "prepare";
    bool skipped = false;
    for (const std::string& c : pending_) {
      if (!skipped && c == candidate) {
        skipped = true;
        continue;
      }
      line += " " + c;
    }
    if (line != "prepare") write_line(line);
    pending_.clear();
  };
  if (protocol_ == 2 && !pending_.empty()) send_pending();
  if (!write_line(candidate)) {
    const std::string why = errno == EPIPE ? "it closed its input" : std::strerror(errno);
    fault_ = Fault::kDied;
    error_ = Status::error(StatusCode::kIoError, "--bench-cmd: cannot send candidate %d (%s): %s%s", candidates_,
                           candidate.c_str(), why.c_str(), exit_text().c_str());
    return BenchmarkStatus::kAbort;
  }
  std::string line;
  bool got = read_line(&line, timeout_);
  if (got && protocol_ == 0) {
    std::string first = line;
    while (!first.empty() && std::isspace(static_cast<unsigned char>(first.back()))) first.pop_back();
    if (first == kProtocolGreeting) {
      protocol_ = 2;
      if (!pending_.empty()) send_pending();
      got = read_line(&line, timeout_);
    } else {
      protocol_ = 1;
      pending_.clear();
    }
  }
  if (!got) {
    if (errno == ETIMEDOUT) {
      fault_ = Fault::kTimeout;
      kill_group();
      error_ = Status::error(StatusCode::kIoError,
                             "--bench-cmd: no answer to candidate %d (%s) within %g s (--bench-timeout); the command "
                             "was killed",
                             candidates_, candidate.c_str(), timeout_);
    } else {
      fault_ = Fault::kDied;
      error_ = Status::error(StatusCode::kIoError, "--bench-cmd: the command ended its output before answering candidate %d (%s)%s%s%s",
                             candidates_, candidate.c_str(), line.empty() ? "" : "; it had written '",
                             line.empty() ? "" : (shown(line) + "' with no newline").c_str(), exit_text().c_str());
    }
    return BenchmarkStatus::kAbort;
  }
  std::string answer = line;
  while (!answer.empty() && std::isspace(static_cast<unsigned char>(answer.back()))) answer.pop_back();
  size_t first = 0;
  while (first < answer.size() && std::isspace(static_cast<unsigned char>(answer[first]))) ++first;
  answer.erase(0, first);
  // `fail`, or `fail KIND` with a failure kind of the timing DB (docs/kernels.md): recorded as that.
  const std::string word = answer.substr(0, answer.find_first_of(" \t"));
  if (word == "fail" || word == "FAIL" || word == "Fail") {
    std::string kind = answer.substr(word.size());
    kind.erase(0, kind.find_first_not_of(" \t") == std::string::npos ? kind.size() : kind.find_first_not_of(" \t"));
    static const char* const kKinds[] = {"fail", "compile_fail", "out_of_resources", "launch_fail", "wrong_result"};
    const bool known = kind.empty() || std::any_of(std::begin(kKinds), std::end(kKinds), [&](const char* k) { return kind == k; });
    if (known) {
      failure_kind_ = kind.empty() ? "fail" : kind;
      ++answers_;
      return BenchmarkStatus::kFailed;
    }
  }
  char* end = nullptr;
  const double t = answer.empty() ? 0.0 : std::strtod(answer.c_str(), &end);
  if (answer.empty() || *end != '\0' || !std::isfinite(t) || t < 0.0) {
    fault_ = Fault::kGarbage;
    error_ = Status::error(StatusCode::kIoError,  // the command's fault, not the arguments': exit status 1
                           "--bench-cmd: the answer to candidate %d (%s) was '%s': expected a time (a number >= 0) "
                           "or 'fail [KIND]', one line per candidate",
                           candidates_, candidate.c_str(), shown(line).c_str());
    return BenchmarkStatus::kAbort;
  }
  *time = t;
  ++answers_;
  return BenchmarkStatus::kOk;
}

void BenchCommand::finish(double grace_seconds, std::string* note) {
  if (to_child_ >= 0) {
    close(to_child_);
    to_child_ = -1;
  }
  if (pid_ <= 0) return;
  const Clock::time_point deadline =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(grace_seconds));
  while (!reaped_) {
    if (waitpid(pid_, &wait_status_, WNOHANG) == pid_) {
      reaped_ = true;
      break;
    }
    if (Clock::now() >= deadline) {
      kill_group();
      waitpid(pid_, &wait_status_, 0);
      reaped_ = true;
      *note = "the benchmark command was still running " + std::to_string(static_cast<int>(grace_seconds)) +
              " s after its input closed; it was killed";
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (answers_ == 0) return;  // it never answered: the error that stopped the run said why
  if (WIFEXITED(wait_status_) && WEXITSTATUS(wait_status_) != 0) {
    *note = "the benchmark command exited with status " + std::to_string(WEXITSTATUS(wait_status_)) +
            " after its last answer";
  } else if (WIFSIGNALED(wait_status_)) {
    *note = "the benchmark command was killed by signal " + std::to_string(WTERMSIG(wait_status_));
  }
}

}  // namespace tunecast::cli
