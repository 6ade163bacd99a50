// CPU seconds (user + system) of this process and of another one, for the rendezvous benchmarks
// to say how much of the two cores each side of a run used.
#pragma once

#include <fstream>
#include <iterator>
#include <sstream>
#include <string>

#include <sys/resource.h>
#include <sys/time.h>
#include <sys/types.h>
#include <unistd.h>

namespace ringleader::bench {

inline double Seconds(const timeval& t) { return static_cast<double>(t.tv_sec) + t.tv_usec / 1e6; }

// Every thread of this process so far.
inline double SelfCpuSeconds() {
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  return Seconds(usage.ru_utime) + Seconds(usage.ru_stime);
}

// Another process's utime + stime from /proc/<pid>/stat, or -1 if it cannot be read.
inline double ProcessCpuSeconds(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  const std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  const std::size_t after_name = text.rfind(')');  // the command name may hold spaces
  if (after_name == std::string::npos) {
    return -1;
  }
  std::istringstream fields(text.substr(after_name + 2));
  std::string field;
  double ticks = 0;
  for (int i = 3; fields >> field; ++i) {
    if (i == 14 || i == 15) {  // utime, stime (proc(5)'s numbering)
      ticks += std::stod(field);
    }
    if (i == 15) {
      return ticks / static_cast<double>(::sysconf(_SC_CLK_TCK));
    }
  }
  return -1;
}

}  // namespace ringleader::bench
