// A child process for integration tests: the real binaries, started with their own argv and
// environment, output appended to a log file, always reaped (SIGKILL in the destructor).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace ringleader::testing {

struct ChildOptions {
  std::filesystem::path binary;
  std::vector<std::string> args;
  // Replaces the whole environment when set; the parent's environment otherwise.
  std::optional<std::map<std::string, std::string>> env;
  std::filesystem::path log;  // stdout and stderr; /dev/null when empty
  // SIGKILL the child when the thread that started it ends (PR_SET_PDEATHSIG), so a test killed
  // by its timeout leaves no API server or etcd behind. Start it from a thread that lives as
  // long as the child should.
  bool die_with_parent = false;
};

// How a child ended: exit code, or the signal that killed it.
struct ChildExit {
  int exit_code = -1;
  int signal = 0;
  bool exited() const { return signal == 0; }
};

class ChildProcess {
 public:
  explicit ChildProcess(const ChildOptions& options);
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const { return pid_; }
  // Sends a signal if the child still runs (not reaped yet).
  void Signal(int signal);
  // Waits up to `timeout` for the child to end; nullopt if it still runs.
  std::optional<ChildExit> WaitFor(std::chrono::milliseconds timeout);
  // True until the child has ended (reaps it when it has).
  bool Running();

 private:
  pid_t pid_ = -1;
  std::optional<ChildExit> exit_;
};

// The child's log so far, for failure messages.
std::string ReadLog(const std::filesystem::path& log);

}  // namespace ringleader::testing
