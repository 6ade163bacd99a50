// The baseline for rendezvous_bench from PyTorch itself: N ranks meet through c10d::TCPStore
// (libtorch 1.13) as init_process_group("gloo", init_method="env://") has them meet, and each
// reads rank 0's record. Prints the median seconds per N.
//
// What each rank sends, in the order torch/distributed does it:
// - rendezvous.py's _create_c10d_store: TCPStore(MASTER_ADDR, MASTER_PORT, world_size,
//   is_master = rank 0, multi_tenant = True). Rank 0 hosts the server. Every rank connects twice
//   (the store's client and its callback client, which runs a thread of its own) and adds 1 to
//   "init/"; rank 0 then polls "init/" every 10 ms until all N are in (waitForWorkers).
// - the process group: each rank sets its record "ranks/<rank>".
// - distributed_c10d.py's _store_based_barrier: add(key, 1). The wait for the other ranks is, with
//   --barrier wait (the default), TCPStore::wait on a key the last rank sets (the rank whose add
//   returns N), which the server answers to every waiter when the key appears, as ringleader's
//   Barrier and Redis' XREAD BLOCK do; with --barrier poll, torch 1.13's own loop: add(key, 0)
//   every 10 ms until it returns N.
// - then a get of rank 0's record, and the store is destroyed (its sockets closed).
//
// The client is blocking, one request in flight per thread. --processes x --threads threads
// (default 2 x 1,024: as many ranks joining at once as rendezvous_bench's 2 threads x 1,024) each
// join their ranks one after another; once a thread has joined all of its ranks it waits for the
// barrier and reads rank 0's record for each of them in turn. Rank 0 runs in the server's process,
// as it does in PyTorch. Ranks connect to 127.0.0.1 to 127.0.0.64 (the server listens on all
// addresses), as tens of thousands of connections from one address to one address make the
// kernel's ephemeral-port search dominate. The clock runs from releasing the client processes
// (their threads already started) until every rank has rank 0's record and closed its store.
//   tcpstore_rendezvous_bench --ranks 1024,4096,16384 --repetitions 3 [--processes 2]
//                             [--threads 1024] [--barrier wait|poll] [--timeout-s 300]
//                             [--over-limit skip|attempt]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <initializer_list>
#include <latch>
#include <memory>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <c10/util/Exception.h>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include "tests/bench/bench_args.h"

namespace ringleader::bench {
namespace {

constexpr char kRank0Record[] = "10.0.0.0";
// distributed_c10d.py's STORE_BASED_BARRIER_PREFIX with the first group's count.
constexpr char kBarrierKey[] = "store_based_barrier_key:1";
constexpr char kBarrierDoneKey[] = "store_based_barrier_done:1";
constexpr auto kPollInterval = std::chrono::milliseconds(10);  // torch's time.sleep(0.01)
// Descriptors a process needs besides its stores': stdio, pipes, the listener, the loader's.
constexpr std::uint64_t kSpareDescriptors = 64;

struct Args {
  std::vector<std::uint32_t> ranks{1024, 4096, 16384};
  int repetitions = 3;
  int processes = 2;
  int threads = 1024;  // per client process
  std::string barrier = "wait";
  int timeout_s = 300;  // every TCPStore operation's; TCPStoreOptions' default
  std::string over_limit = "skip";
};

Args ParseArgs(int argc, char** argv) {
  Args args;
  ParseFlags(argc, argv, [&](const std::string& flag, const std::string& value) {
    if (flag == "--ranks") {
      args.ranks = ParseList<std::uint32_t>(value);
    } else if (flag == "--repetitions") {
      args.repetitions = std::stoi(value);
    } else if (flag == "--processes") {
      args.processes = std::stoi(value);
    } else if (flag == "--threads") {
      args.threads = std::stoi(value);
    } else if (flag == "--barrier") {
      args.barrier = value;
    } else if (flag == "--timeout-s") {
      args.timeout_s = std::stoi(value);
    } else if (flag == "--over-limit") {
      args.over_limit = value;
    } else {
      return false;
    }
    return true;
  });
  if (args.barrier != "wait" && args.barrier != "poll") {
    throw std::invalid_argument("--barrier must be wait or poll");
  }
  if (args.over_limit != "skip" && args.over_limit != "attempt") {
    throw std::invalid_argument("--over-limit must be skip or attempt");
  }
  if (args.processes < 1 || args.threads < 1 || args.repetitions < 1 || args.timeout_s < 1) {
    throw std::invalid_argument(
        "--processes, --threads, --repetitions and --timeout-s must be at least 1");
  }
  return args;
}

std::uint64_t MonotonicNs() {
  timespec now{};
  ::clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<std::uint64_t>(now.tv_sec) * 1'000'000'000ULL +
         static_cast<std::uint64_t>(now.tv_nsec);
}

std::vector<std::uint8_t> Bytes(const std::string& text) {
  return std::vector<std::uint8_t>(text.begin(), text.end());
}

std::string Record(std::uint32_t rank) { return "10.0.0." + std::to_string(rank); }

std::string Host(std::uint32_t rank) { return "127.0.0." + std::to_string(1 + rank % 64); }

// c10::Error's what() carries a backtrace; the first line says what happened.
std::string Describe(const std::exception& error) {
  if (const auto* c10_error = dynamic_cast<const c10::Error*>(&error)) {
    return c10_error->what_without_backtrace();
  }
  return error.what();
}

struct Rendezvous {
  std::uint32_t world_size = 0;
  std::uint16_t port = 0;
  bool poll_barrier = false;
  std::chrono::milliseconds timeout{0};
};

c10d::TCPStoreOptions StoreOptions(const Rendezvous& rendezvous, bool is_server) {
  c10d::TCPStoreOptions options;
  options.port = rendezvous.port;
  options.isServer = is_server;
  options.numWorkers = rendezvous.world_size;
  // Rank 0 calls waitForWorkers itself once it has told the clients its port.
  options.waitWorkers = !is_server;
  options.timeout = rendezvous.timeout;
  options.multiTenant = true;
  return options;
}

// After the store exists: the rank's record and its arrival at the barrier.
void Arrive(c10d::TCPStore& store, std::uint32_t rank, const Rendezvous& rendezvous) {
  store.set("ranks/" + std::to_string(rank), Bytes(Record(rank)));
  const std::int64_t arrived = store.add(kBarrierKey, 1);
  if (!rendezvous.poll_barrier && arrived == static_cast<std::int64_t>(rendezvous.world_size)) {
    store.set(kBarrierDoneKey, Bytes("1"));
  }
}

// The rest of the barrier, then rank 0's record.
void Finish(c10d::TCPStore& store, const Rendezvous& rendezvous) {
  if (rendezvous.poll_barrier) {
    const auto deadline = std::chrono::steady_clock::now() + rendezvous.timeout;
    while (store.add(kBarrierKey, 0) != static_cast<std::int64_t>(rendezvous.world_size)) {
      if (std::chrono::steady_clock::now() > deadline) {
        throw std::runtime_error("timed out in the store-based barrier");
      }
      std::this_thread::sleep_for(kPollInterval);
    }
  } else {
    store.wait({kBarrierDoneKey});
  }
  const std::vector<std::uint8_t> record = store.get("ranks/0");
  if (std::string(record.begin(), record.end()) != kRank0Record) {
    throw std::runtime_error("wrong record for rank 0");
  }
}

// What a process reports through the result pipe: when it finished, or why it failed.
struct Outcome {
  std::uint64_t finished_ns = 0;  // 0: failed
  char error[200] = {};
};
static_assert(sizeof(Outcome) <= PIPE_BUF, "one atomic pipe write");

void Report(int fd, std::uint64_t finished_ns, const std::string& error) {
  Outcome outcome;
  outcome.finished_ns = finished_ns;
  std::snprintf(outcome.error, sizeof(outcome.error), "%s", error.c_str());
  if (::write(fd, &outcome, sizeof(outcome)) != sizeof(outcome)) {
    ::_exit(1);
  }
}

// How often the kernel dropped a handshake's ACK because a listen queue was full (TcpExt
// ListenOverflows in /proc/net/netstat, for the whole network namespace); -1 if unreadable.
long long ListenOverflows() {
  std::ifstream netstat("/proc/net/netstat");
  std::string names;
  std::string values;
  while (std::getline(netstat, names) && std::getline(netstat, values)) {
    if (names.rfind("TcpExt:", 0) != 0) {
      continue;
    }
    std::istringstream name_words(names);
    std::istringstream value_words(values);
    std::string name;
    std::string value;
    while (name_words >> name && value_words >> value) {
      if (name == "ListenOverflows") {
        return std::stoll(value);
      }
    }
  }
  return -1;
}

void CloseAll(std::initializer_list<int> fds) {
  for (const int fd : fds) {
    if (fd >= 0) {
      ::close(fd);
    }
  }
}

// Rank 0: hosts the TCPStore, writes its port, joins, reports, then holds the store until the
// stop pipe closes.
[[noreturn]] void RunRank0(Rendezvous rendezvous, int port_fd, int result_fd, int stop_fd) {
  std::string error;
  std::uint64_t finished = 0;
  {
    std::unique_ptr<c10d::TCPStore> store;
    try {
      store = std::make_unique<c10d::TCPStore>("127.0.0.1", StoreOptions(rendezvous, true));
      const std::uint16_t port = store->getPort();
      if (::write(port_fd, &port, sizeof(port)) != sizeof(port)) {
        ::_exit(1);
      }
      ::close(port_fd);
      store->waitForWorkers();
      Arrive(*store, 0, rendezvous);
      Finish(*store, rendezvous);
      finished = MonotonicNs();
    } catch (const std::exception& e) {
      error = "rank 0: " + Describe(e);
    }
    Report(result_fd, finished, error);
    char byte = 0;
    while (::read(stop_fd, &byte, 1) > 0) {
    }
  }
  ::_exit(0);
}

// A client process: starts its threads, says so on `ready_fd`, waits for the go byte, reports
// its finish time, or its first failure as soon as it happens (the other ranks would wait for the
// failed one until they time out).
[[noreturn]] void RunClients(const Args& args, Rendezvous rendezvous, int index, int ready_fd,
                             int go_fd, int result_fd) {
  const auto stride = static_cast<std::uint32_t>(args.processes * args.threads);
  std::latch go(1);
  std::mutex error_mutex;
  bool failed = false;
  std::vector<std::thread> threads;
  for (int t = 0; t < args.threads; ++t) {
    // Rank 0 is the server's; this thread's ranks are first, first + stride, ...
    const auto first = static_cast<std::uint32_t>(1 + index * args.threads + t);
    if (first >= rendezvous.world_size) {
      break;
    }
    threads.emplace_back([&, first] {
      go.wait();
      std::vector<std::unique_ptr<c10d::TCPStore>> joined;
      try {
        for (std::uint32_t rank = first; rank < rendezvous.world_size; rank += stride) {
          auto store =
              std::make_unique<c10d::TCPStore>(Host(rank), StoreOptions(rendezvous, false));
          Arrive(*store, rank, rendezvous);
          joined.push_back(std::move(store));
        }
        for (auto& store : joined) {
          Finish(*store, rendezvous);
          store.reset();
        }
      } catch (const std::exception& e) {
        const std::lock_guard<std::mutex> lock(error_mutex);
        if (!failed) {
          failed = true;
          Report(result_fd, 0, "rank group " + std::to_string(first) + ": " + Describe(e));
        }
      }
    });
  }
  const char ready = 'r';
  char byte = 0;
  if (::write(ready_fd, &ready, 1) != 1 || ::read(go_fd, &byte, 1) != 1) {
    ::_exit(1);
  }
  go.count_down();
  for (auto& thread : threads) {
    thread.join();
  }
  if (!failed) {
    Report(result_fd, MonotonicNs(), "");
  }
  ::_exit(0);
}

struct Measurement {
  double seconds = 0;     // from releasing the clients until every rank has rank 0's record
  double server_cpu = 0;  // CPU seconds of rank 0's process (the TCPStore server), start to exit
};

Measurement RunOnce(std::uint32_t world_size, const Args& args) {
  Rendezvous rendezvous;
  rendezvous.world_size = world_size;
  rendezvous.poll_barrier = args.barrier == "poll";
  rendezvous.timeout = std::chrono::seconds(args.timeout_s);
  int port_pipe[2];
  int result_pipe[2];
  int stop_pipe[2];
  int ready_pipe[2];
  int go_pipe[2];
  for (int* p : {port_pipe, result_pipe, stop_pipe, ready_pipe, go_pipe}) {
    if (::pipe(p) != 0) {
      throw std::runtime_error("pipe failed");
    }
  }
  std::vector<pid_t> children;
  const pid_t server = ::fork();
  if (server == 0) {
    CloseAll({port_pipe[0], result_pipe[0], stop_pipe[1], ready_pipe[0], ready_pipe[1],
              go_pipe[0], go_pipe[1]});
    RunRank0(rendezvous, port_pipe[1], result_pipe[1], stop_pipe[0]);
  }
  children.push_back(server);
  CloseAll({port_pipe[1], stop_pipe[0]});
  std::uint16_t port = 0;
  const bool started = ::read(port_pipe[0], &port, sizeof(port)) == sizeof(port);
  ::close(port_pipe[0]);
  rendezvous.port = port;
  if (started) {
    for (int p = 0; p < args.processes; ++p) {
      const pid_t pid = ::fork();
      if (pid == 0) {
        CloseAll({result_pipe[0], stop_pipe[1], ready_pipe[0], go_pipe[1]});
        RunClients(args, rendezvous, p, ready_pipe[1], go_pipe[0], result_pipe[1]);
      }
      children.push_back(pid);
    }
  }
  CloseAll({result_pipe[1], ready_pipe[1], go_pipe[0]});
  for (int p = 0; started && p < args.processes; ++p) {
    char byte = 0;
    if (::read(ready_pipe[0], &byte, 1) != 1) {
      break;
    }
  }
  const std::uint64_t released = MonotonicNs();
  const std::string go(static_cast<std::size_t>(args.processes), 'g');
  if (started && ::write(go_pipe[1], go.data(), go.size()) != static_cast<ssize_t>(go.size())) {
    throw std::runtime_error("cannot start the clients");
  }
  // One outcome per process, rank 0's included, until the first failure; a process that dies
  // closes its end, and the deadline covers one that hangs.
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(2 * args.timeout_s + 30);
  std::uint64_t last = 0;
  double server_cpu = 0;
  std::string error = started ? "" : "rank 0's TCPStore did not start";
  for (std::size_t received = 0; started && received < children.size();) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    pollfd fd{result_pipe[0], POLLIN, 0};
    if (left.count() <= 0 || ::poll(&fd, 1, static_cast<int>(left.count())) <= 0) {
      error = "no result after " + std::to_string(2 * args.timeout_s + 30) + " s";
      break;
    }
    Outcome outcome;
    if (::read(result_pipe[0], &outcome, sizeof(outcome)) != sizeof(outcome)) {
      error = "a process died without a result (see its stderr)";
      break;
    }
    ++received;
    if (outcome.finished_ns == 0) {
      // The others may be waiting for a rank that will never arrive.
      const double at_s = static_cast<double>(MonotonicNs() - released) / 1e9;
      error = std::string(outcome.error) + ", " + std::to_string(std::lround(at_s)) +
              " s after the start";
      break;
    }
    last = std::max(last, outcome.finished_ns);
  }
  CloseAll({stop_pipe[1], result_pipe[0], ready_pipe[0], go_pipe[1]});
  // All at once: a client store's callback thread spins once the server's end is gone.
  for (const pid_t pid : children) {
    if (!error.empty()) {
      ::kill(pid, SIGKILL);
    }
  }
  for (const pid_t pid : children) {
    int status = 0;
    rusage usage{};
    ::wait4(pid, &status, 0, &usage);
    if (pid == server) {
      server_cpu = static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
                   static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
    }
  }
  if (!error.empty()) {
    throw std::runtime_error(error);
  }
  return {static_cast<double>(last - released) / 1e9, server_cpu};
}

int Main(int argc, char** argv) {
  const Args args = ParseArgs(argc, argv);
  ::signal(SIGPIPE, SIG_IGN);
  rlimit limit{};
  ::getrlimit(RLIMIT_NOFILE, &limit);
  limit.rlim_cur = limit.rlim_max;
  ::setrlimit(RLIMIT_NOFILE, &limit);
  ::getrlimit(RLIMIT_NOFILE, &limit);
  std::printf("c10d::TCPStore; RLIMIT_NOFILE %llu; %d client processes x %d blocking threads; "
              "barrier: %s\n",
              static_cast<unsigned long long>(limit.rlim_cur), args.processes,
              args.threads, args.barrier == "wait" ? "TCPStore::wait" : "add(key, 0) every 10 ms");
  std::fflush(stdout);
  for (const std::uint32_t n : args.ranks) {
    // Rank 0's server holds two connections per rank; a client store holds its two sockets and
    // its callback thread's control pipe.
    const std::uint64_t server_needs = 2ULL * n + kSpareDescriptors;
    const std::uint64_t client_needs =
        4ULL * ((n + args.processes - 1) / args.processes) + kSpareDescriptors;
    if (args.over_limit == "skip" && server_needs > limit.rlim_cur) {
      std::printf("ranks=%u stopped: rank 0's TCPStore holds 2 connections per rank (the store's "
                  "and its callback client's), %llu descriptors, over RLIMIT_NOFILE %llu\n",
                  n, static_cast<unsigned long long>(server_needs),
                  static_cast<unsigned long long>(limit.rlim_cur));
      std::fflush(stdout);
      continue;
    }
    if (args.over_limit == "skip" && client_needs > limit.rlim_cur) {
      std::printf("ranks=%u skipped: a client process needs %llu descriptors, over RLIMIT_NOFILE "
                  "%llu (give more --processes)\n",
                  n, static_cast<unsigned long long>(client_needs),
                  static_cast<unsigned long long>(limit.rlim_cur));
      std::fflush(stdout);
      continue;
    }
    std::vector<double> runs;
    std::vector<double> server_cpu;
    std::string stopped;
    const long long overflows_before = ListenOverflows();
    for (int r = 0; r < args.repetitions && stopped.empty(); ++r) {
      try {
        const Measurement measurement = RunOnce(n, args);
        runs.push_back(measurement.seconds);
        server_cpu.push_back(measurement.server_cpu);
      } catch (const std::exception& e) {
        stopped = e.what();
      }
    }
    const long long overflows = ListenOverflows() - overflows_before;
    if (!stopped.empty()) {
      std::printf("ranks=%u stopped: %s (after %zu good runs; %lld listen queue "
                  "overflows)\n",
                  n, stopped.c_str(), runs.size(), overflows);
      std::fflush(stdout);
      continue;
    }
    std::printf("ranks=%u median=%.3f s (runs:", n, Median(runs));
    for (const double run : runs) {
      std::printf(" %.3f", run);
    }
    std::printf("); rank 0's process (the server) used %.3f s of CPU (median); %lld listen "
                "queue overflows\n",
                Median(server_cpu), overflows);
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace
}  // namespace ringleader::bench

int main(int argc, char** argv) {
  try {
    return ringleader::bench::Main(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tcpstore_rendezvous_bench: %s\n", e.what());
    return 1;
  }
}
