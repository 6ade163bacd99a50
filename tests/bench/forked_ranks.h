// The direct baselines' process layout: one forked process per rank sharing a fresh temporary
// directory (a FileStore, a unique-id file), each reporting its own failure on stderr.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

namespace ringleader::bench {

// Runs run_rank(rank, dir) in `ranks` child processes; 0 when every one returned normally.
inline int RunForkedRanks(int ranks, const std::string& dir_prefix,
                          const std::function<void(int rank, const std::filesystem::path& dir)>& run_rank) {
  std::string dir_template = "/tmp/" + dir_prefix + "-XXXXXX";
  if (::mkdtemp(dir_template.data()) == nullptr) {
    throw std::runtime_error("mkdtemp failed");
  }
  const std::filesystem::path dir = dir_template;
  std::vector<pid_t> children;
  for (int rank = 0; rank < ranks; ++rank) {
    const pid_t pid = ::fork();
    if (pid == 0) {
      int code = 0;
      try {
        run_rank(rank, dir);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "rank %d: %s\n", rank, e.what());
        code = 1;
      }
      std::fflush(stdout);
      ::_exit(code);
    }
    children.push_back(pid);
  }
  int failures = 0;
  for (const pid_t pid : children) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    failures += (WIFEXITED(status) && WEXITSTATUS(status) == 0) ? 0 : 1;
  }
  std::error_code ignored;
  std::filesystem::remove_all(dir, ignored);
  return failures == 0 ? 0 : 1;
}

}  // namespace ringleader::bench
