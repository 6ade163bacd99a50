#include "tests/support/child_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace ringleader::testing {
namespace {

ChildExit FromStatus(int status) {
  ChildExit result;
  if (WIFEXITED(status)) {
    result.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    result.signal = WTERMSIG(status);
  }
  return result;
}

}  // namespace

ChildProcess::ChildProcess(const ChildOptions& options) {
  // Everything the child needs is built before fork: only async-signal-safe calls after it.
  std::vector<std::string> args_storage;
  args_storage.push_back(options.binary.string());
  args_storage.insert(args_storage.end(), options.args.begin(), options.args.end());
  std::vector<char*> argv;
  for (auto& arg : args_storage) {
    argv.push_back(arg.data());
  }
  argv.push_back(nullptr);
  std::vector<std::string> env_storage;
  std::vector<char*> envp;
  if (options.env) {
    for (const auto& [name, value] : *options.env) {
      env_storage.push_back(name + "=" + value);
    }
    for (auto& entry : env_storage) {
      envp.push_back(entry.data());
    }
    envp.push_back(nullptr);
  }
  const std::string log = options.log.empty() ? std::string("/dev/null") : options.log.string();
  const pid_t parent = ::getpid();

  pid_ = ::fork();
  if (pid_ < 0) {
    throw std::runtime_error("fork failed for " + options.binary.string());
  }
  if (pid_ == 0) {
    if (options.die_with_parent) {
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != parent) {
        ::_exit(127);  // the parent died before the request took hold
      }
    }
    const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd >= 0) {
      ::dup2(fd, 1);
      ::dup2(fd, 2);
    }
    if (options.env) {
      ::execve(argv[0], argv.data(), envp.data());
    } else {
      ::execv(argv[0], argv.data());
    }
    ::_exit(127);
  }
}

ChildProcess::~ChildProcess() {
  if (!exit_ && pid_ > 0) {
    ::kill(pid_, SIGKILL);
    int status = 0;
    ::waitpid(pid_, &status, 0);
  }
}

void ChildProcess::Signal(int signal) {
  if (!exit_ && pid_ > 0) {
    ::kill(pid_, signal);
  }
}

std::optional<ChildExit> ChildProcess::WaitFor(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!exit_) {
    int status = 0;
    const pid_t done = ::waitpid(pid_, &status, WNOHANG);
    if (done == pid_) {
      exit_ = FromStatus(status);
      break;
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      return std::nullopt;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return exit_;
}

bool ChildProcess::Running() { return !WaitFor(std::chrono::milliseconds(0)).has_value(); }

std::string ReadLog(const std::filesystem::path& log) {
  std::ifstream in(log);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace ringleader::testing
