// N ranks meet through a TCPStore-protocol server, every rank a client of PyTorch's own
// c10d::TCPStore, as init_process_group(init_method="env://") has them meet when
// TORCHELASTIC_USE_AGENT_STORE=True (the store is hosted by someone else: torchrun's agent, or
// ringleader's sidecar). The same clients meet through each server named in --servers, the
// repetitions interleaved (server A, B, A, B...) so that every server sees about the same load.
// Prints the median seconds per server and N. Built twice from this source: against Debian's
// libtorch 1.13 (tcpstore_rendezvous_bench) and against PyTorch 2.x from the project's
// virtualenv (tcpstore_rendezvous_bench_torch2); the two speak different dialects of the
// protocol, so each drives the servers that speak its own.
//
// Servers (each in a child process of its own, started afresh for every repetition):
// - tcpstore: libtorch's own server, TCPStore(isServer=true) with its default backend (1.13: one
//   thread polling every socket; 2.x: libuv);
// - tcpstore-legacy (2.x only): the same with use_libuv=false, 2.x's threaded backend;
// - ringleader: ringleader's TCPStore-protocol server (the sidecar's, on its store's event loop),
//   the program --ringleader-server names, which prints its port and serves until stdin closes;
//   ringleader=PATH: another build of that program, to compare two builds in one run.
//
// What each rank sends, in torch's order:
// - rendezvous.py's _create_c10d_store with the agent store: TCPStore(MASTER_ADDR, MASTER_PORT,
//   world_size, is_master=False). The constructor connects (2.x then sends VALIDATE and a PING;
//   1.13 opens a second connection for its callback client, with a thread of its own) and adds 1
//   to "init/" (waitForWorkers; a client does not wait). 1.13 wraps the store in
//   PrefixStore("/worker/attempt_0"); 2.x makes a new store per attempt instead (keys "/...").
// - the process group: the rank sets its record "ranks/<rank>" (Gloo's address, NCCL's id).
// - distributed_c10d.py's _store_based_barrier as 2.x has it, for both client sets: add(key, 1),
//   then add(key, 0); the rank that sees N sets "<key>:last_worker", and every rank waits on that
//   key (2.x: in waits of max(10 s, 10 s + 1 s per 1,000 ranks), checking the count between
//   them). With --barrier poll, 1.13's own barrier instead: add(key, 0) every 10 ms until N.
// - then a get of rank 0's record, and the store is destroyed (its sockets closed).
//
// The client is blocking, one request in flight per thread. --processes x --threads threads
// (default 2 x 1,024 ranks joining at once, as rendezvous_bench's 2 threads x 1,024) each join
// their ranks one after another; once a thread has joined all of its ranks it waits for the
// barrier and reads rank 0's record for each of them in turn. Ranks connect to 127.0.0.1 to
// 127.0.0.64 (every server listens on all addresses), as tens of thousands of connections from one
// address to one address make the kernel's ephemeral-port search dominate. The clock runs from
// releasing the client processes (their threads already started) until every rank has rank 0's
// record and closed its store.
//
// Names: PyTorch 2.x's sockets look up the peer's host name (reverse DNS, getnameinfo) for their
// log text on every connect and, in the legacy server, every accept. This machine's resolver is
// remote (about 75 ms a lookup, and a dropped query waits 5 s), which would time the resolver, not
// the store. So by default (--names numeric) this program answers those lookups numerically for
// every client and PyTorch server alike; --names system leaves them to the system.
//   tcpstore_rendezvous_bench --ranks 1024,4096,16384 --repetitions 3
//                             [--servers tcpstore,tcpstore-legacy,ringleader] [--processes 2]
//                             [--threads 1024] [--barrier wait|poll] [--timeout-s 300]
//                             [--over-limit skip|attempt] [--ringleader-server PATH]
//                             [--names numeric|system]
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <initializer_list>
#include <latch>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <dlfcn.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <c10/util/Exception.h>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#include <torch/version.h>

#include "tests/bench/bench_args.h"

namespace ringleader::bench {
namespace {

constexpr bool kTorch2 = TORCH_VERSION_MAJOR >= 2;
// 1.13's agent store is a PrefixStore per attempt; 2.x adds nothing (TCPStore's own "/").
constexpr const char* kKeyPrefix = kTorch2 ? "" : "/worker/attempt_0/";
// distributed_c10d.py's STORE_BASED_BARRIER_PREFIX with the default group's name.
constexpr char kBarrierKey[] = "store_based_barrier_key:1";
constexpr char kLastWorkerSuffix[] = ":last_worker";
constexpr auto kPollInterval = std::chrono::milliseconds(10);  // torch's time.sleep(0.01)
// Descriptors a process needs besides its stores': stdio, pipes, the listener, the loader's.
constexpr std::uint64_t kSpareDescriptors = 64;
// Connections a client store holds: 2.x one; 1.13 also its callback client's (and, in the client
// process, that thread's control pipe).
constexpr std::uint64_t kServerConnectionsPerRank = kTorch2 ? 1 : 2;
constexpr std::uint64_t kClientDescriptorsPerRank = kTorch2 ? 1 : 4;

struct Args {
  std::vector<std::uint32_t> ranks{1024, 4096, 16384};
  int repetitions = 3;
  std::vector<std::string> servers{"tcpstore"};
  int processes = 2;
  int threads = 1024;  // per client process
  std::string barrier = "wait";
  int timeout_s = 300;  // every TCPStore operation's; TCPStoreOptions' default
  std::string over_limit = "skip";
  std::string ringleader_server;
  std::string names = "numeric";
};

// Read by the getnameinfo below, which every socket of this process's libtorch calls.
std::atomic<bool> numeric_host_names{true};

std::vector<std::string> ParseNames(const std::string& text) {
  std::vector<std::string> names;
  std::istringstream words(text);
  std::string name;
  while (std::getline(words, name, ',')) {
    names.push_back(name);
  }
  return names;
}

Args ParseArgs(int argc, char** argv) {
  Args args;
#ifdef RINGLEADER_TCPSTORE_SERVER_PATH
  args.ringleader_server = RINGLEADER_TCPSTORE_SERVER_PATH;
#endif
  ParseFlags(argc, argv, [&](const std::string& flag, const std::string& value) {
    if (flag == "--ranks") {
      args.ranks = ParseList<std::uint32_t>(value);
    } else if (flag == "--repetitions") {
      args.repetitions = std::stoi(value);
    } else if (flag == "--servers") {
      args.servers = ParseNames(value);
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
    } else if (flag == "--ringleader-server") {
      args.ringleader_server = value;
    } else if (flag == "--names") {
      args.names = value;
    } else {
      return false;
    }
    return true;
  });
  for (const std::string& server : args.servers) {
    if (server != "tcpstore" && server != "tcpstore-legacy" && server != "ringleader" &&
        server.rfind("ringleader=", 0) != 0) {
      throw std::invalid_argument("--servers: unknown server '" + server +
                                  "' (tcpstore, tcpstore-legacy, ringleader, ringleader=PATH)");
    }
    if (server == "tcpstore-legacy" && !kTorch2) {
      throw std::invalid_argument("--servers: tcpstore-legacy is PyTorch 2.x's (this is " +
                                  std::string(TORCH_VERSION) + ")");
    }
    if (server == "ringleader" && args.ringleader_server.empty()) {
      throw std::invalid_argument("--servers ringleader needs --ringleader-server PATH");
    }
  }
  if (args.servers.empty()) {
    throw std::invalid_argument("--servers names no server");
  }
  if (args.names != "numeric" && args.names != "system") {
    throw std::invalid_argument("--names must be numeric or system");
  }
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

std::string Key(const std::string& name) { return kKeyPrefix + name; }

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

// A rank's store: a client, as rendezvous.py makes it when the agent hosts the store.
std::unique_ptr<c10d::TCPStore> Connect(std::uint32_t rank, const Rendezvous& rendezvous) {
  c10d::TCPStoreOptions options;
  options.port = rendezvous.port;
  options.isServer = false;
  options.numWorkers = rendezvous.world_size;
  options.waitWorkers = true;  // a client adds 1 to "init/" and goes on
  options.timeout = rendezvous.timeout;
  return std::make_unique<c10d::TCPStore>(Host(rank), options);
}

// After the store exists: the rank's record and its arrival at the barrier.
void Arrive(c10d::TCPStore& store, std::uint32_t rank, const Rendezvous& rendezvous) {
  store.set(Key("ranks/" + std::to_string(rank)), Bytes(Record(rank)));
  store.add(Key(kBarrierKey), 1);
  if (rendezvous.poll_barrier) {
    return;
  }
  const std::int64_t arrived = store.add(Key(kBarrierKey), 0);
  if (arrived == static_cast<std::int64_t>(rendezvous.world_size)) {
    store.set(Key(std::string(kBarrierKey) + kLastWorkerSuffix), Bytes("1"));
  }
}

// 2.x's barrier waits in slices and checks the count between them; 1.13's client cannot resume
// a wait that timed out (its reply would arrive as the next request's), so it waits once.
void WaitForLastWorker(c10d::TCPStore& store, const Rendezvous& rendezvous) {
  const std::vector<std::string> keys{Key(std::string(kBarrierKey) + kLastWorkerSuffix)};
  if constexpr (kTorch2) {
    const auto slice = std::max(std::chrono::milliseconds(10'000),
                                std::chrono::milliseconds(10'000 + rendezvous.world_size));
    const auto deadline = std::chrono::steady_clock::now() + rendezvous.timeout;
    while (true) {
      try {
        store.wait(keys, slice);
        return;
      } catch (const c10::Error& error) {
        store.add(Key(kBarrierKey), 0);
        if (std::chrono::steady_clock::now() > deadline) {
          throw;
        }
      }
    }
  } else {
    store.wait(keys);
  }
}

// The rest of the barrier, then rank 0's record.
void Finish(c10d::TCPStore& store, const Rendezvous& rendezvous) {
  if (rendezvous.poll_barrier) {
    const auto deadline = std::chrono::steady_clock::now() + rendezvous.timeout;
    while (store.add(Key(kBarrierKey), 0) != static_cast<std::int64_t>(rendezvous.world_size)) {
      if (std::chrono::steady_clock::now() > deadline) {
        throw std::runtime_error("timed out in the store-based barrier");
      }
      std::this_thread::sleep_for(kPollInterval);
    }
  } else {
    WaitForLastWorker(store, rendezvous);
  }
  const std::vector<std::uint8_t> record = store.get(Key("ranks/0"));
  if (std::string(record.begin(), record.end()) != Record(0)) {
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

// libtorch's server in this process: writes its port as a decimal line to `port_fd`, then serves
// until `stop_fd` closes.
[[noreturn]] void RunTorchServer(const std::string& server, int port_fd, int stop_fd) {
  {
    std::unique_ptr<c10d::TCPStore> store;
    try {
      c10d::TCPStoreOptions options;
      options.port = 0;
      options.isServer = true;
      options.waitWorkers = false;
      options.multiTenant = false;
#if TORCH_VERSION_MAJOR >= 2
      options.useLibUV = server == "tcpstore";
#endif
      store = std::make_unique<c10d::TCPStore>("127.0.0.1", options);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "%s server: %s\n", server.c_str(), Describe(e).c_str());
      ::_exit(1);
    }
    const std::string line = std::to_string(store->getPort()) + "\n";
    if (::write(port_fd, line.data(), line.size()) != static_cast<ssize_t>(line.size())) {
      ::_exit(1);
    }
    ::close(port_fd);
    char byte = 0;
    while (::read(stop_fd, &byte, 1) > 0) {
    }
  }
  ::_exit(0);
}

// ringleader's server: the program's stdin is the stop pipe, its stdout the port pipe.
[[noreturn]] void ExecRingleaderServer(const std::string& path, int port_fd, int stop_fd) {
  if (::dup2(stop_fd, STDIN_FILENO) < 0 || ::dup2(port_fd, STDOUT_FILENO) < 0) {
    ::_exit(1);
  }
  ::close(stop_fd);
  ::close(port_fd);
  ::execl(path.c_str(), path.c_str(), static_cast<char*>(nullptr));
  std::fprintf(stderr, "cannot run %s\n", path.c_str());
  ::_exit(127);
}

// The port line a server wrote, or 0 if it closed the pipe first.
std::uint16_t ReadPort(int fd) {
  std::string line;
  char c = 0;
  while (::read(fd, &c, 1) == 1 && c != '\n') {
    line += c;
  }
  if (c != '\n' || line.empty() || line.size() > 5) {
    return 0;
  }
  const unsigned long port = std::stoul(line);
  return port > 0 && port < 65536 ? static_cast<std::uint16_t>(port) : 0;
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
    // This thread's ranks are first, first + stride, ...
    const auto first = static_cast<std::uint32_t>(index * args.threads + t);
    if (first >= rendezvous.world_size) {
      break;
    }
    threads.emplace_back([&, first] {
      go.wait();
      std::vector<std::unique_ptr<c10d::TCPStore>> joined;
      try {
        for (std::uint32_t rank = first; rank < rendezvous.world_size; rank += stride) {
          auto store = Connect(rank, rendezvous);
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
  double server_cpu = 0;  // CPU seconds of the server's process, start to exit
};

Measurement RunOnce(const std::string& server_name, std::uint32_t world_size, const Args& args) {
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
    CloseAll({port_pipe[0], result_pipe[0], result_pipe[1], stop_pipe[1], ready_pipe[0],
              ready_pipe[1], go_pipe[0], go_pipe[1]});
    if (server_name == "ringleader") {
      ExecRingleaderServer(args.ringleader_server, port_pipe[1], stop_pipe[0]);
    }
    if (server_name.rfind("ringleader=", 0) == 0) {
      ExecRingleaderServer(server_name.substr(11), port_pipe[1], stop_pipe[0]);
    }
    RunTorchServer(server_name, port_pipe[1], stop_pipe[0]);
  }
  children.push_back(server);
  CloseAll({port_pipe[1], stop_pipe[0]});
  rendezvous.port = ReadPort(port_pipe[0]);
  ::close(port_pipe[0]);
  const bool started = rendezvous.port != 0;
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
  // One outcome per client process, until the first failure; a process that dies closes its
  // end, and the deadline covers one that hangs.
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(2 * args.timeout_s + 30);
  std::uint64_t last = 0;
  double server_cpu = 0;
  std::string error = started ? "" : "the " + server_name + " server did not start";
  for (int received = 0; started && received < args.processes;) {
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
  // Closing the stop pipe ends the server. After a failure, everything goes at once: a 1.13
  // client's callback thread spins once the server's end is gone.
  CloseAll({stop_pipe[1], result_pipe[0], ready_pipe[0], go_pipe[1]});
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
      if (error.empty() && !(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
        error = "the " + server_name + " server did not exit cleanly (status " +
                std::to_string(status) + ")";
      }
    }
  }
  if (!error.empty()) {
    throw std::runtime_error(error);
  }
  return {static_cast<double>(last - released) / 1e9, server_cpu};
}

std::string LoadAverage() {
  std::ifstream file("/proc/loadavg");
  std::string one;
  std::string five;
  std::string fifteen;
  file >> one >> five >> fifteen;
  return one + " " + five + " " + fifteen;
}

// Why N cannot run under this descriptor limit, or "" if it can.
std::string OverLimit(std::uint32_t n, const Args& args, std::uint64_t limit) {
  const std::uint64_t server_needs = kServerConnectionsPerRank * n + kSpareDescriptors;
  const std::uint64_t client_needs =
      kClientDescriptorsPerRank * ((n + args.processes - 1) / args.processes) + kSpareDescriptors;
  if (server_needs > limit) {
    return "not run: the server would hold " + std::to_string(kServerConnectionsPerRank) +
           " connection(s) per rank, " + std::to_string(server_needs) +
           " descriptors, over RLIMIT_NOFILE " + std::to_string(limit);
  }
  if (client_needs > limit) {
    return "not run: a client process needs " + std::to_string(client_needs) +
           " descriptors, over RLIMIT_NOFILE " + std::to_string(limit) +
           " (give more --processes)";
  }
  return "";
}

int Main(int argc, char** argv) {
  const Args args = ParseArgs(argc, argv);
  numeric_host_names = args.names == "numeric";
  ::signal(SIGPIPE, SIG_IGN);
  rlimit limit{};
  ::getrlimit(RLIMIT_NOFILE, &limit);
  limit.rlim_cur = limit.rlim_max;
  ::setrlimit(RLIMIT_NOFILE, &limit);
  ::getrlimit(RLIMIT_NOFILE, &limit);
  std::printf("c10d::TCPStore clients of PyTorch %s; RLIMIT_NOFILE %llu; %d client processes x %d "
              "blocking threads; barrier: %s; peer names: %s\n",
              TORCH_VERSION, static_cast<unsigned long long>(limit.rlim_cur), args.processes,
              args.threads,
              args.barrier == "wait" ? "wait on the last worker's key" : "add(key, 0) every 10 ms",
              args.names == "numeric" ? "numeric (no reverse DNS)" : "the system's resolver");
  std::fflush(stdout);
  for (const std::uint32_t n : args.ranks) {
    if (const std::string why = OverLimit(n, args, limit.rlim_cur);
        !why.empty() && args.over_limit == "skip") {
      for (const std::string& server : args.servers) {
        std::printf("server=%s ranks=%u %s\n", server.c_str(), n, why.c_str());
      }
      std::fflush(stdout);
      continue;
    }
    std::printf("# ranks=%u load %s\n", n, LoadAverage().c_str());
    std::map<std::string, std::vector<double>> runs;
    std::map<std::string, std::vector<double>> server_cpu;
    std::map<std::string, std::string> stopped;
    const long long overflows_before = ListenOverflows();
    // Interleaved: repetition r of every server before repetition r + 1 of any.
    for (int r = 0; r < args.repetitions; ++r) {
      for (const std::string& server : args.servers) {
        if (!stopped[server].empty()) {
          continue;
        }
        try {
          const Measurement measurement = RunOnce(server, n, args);
          runs[server].push_back(measurement.seconds);
          server_cpu[server].push_back(measurement.server_cpu);
        } catch (const std::exception& e) {
          stopped[server] = e.what();
        }
      }
    }
    const long long overflows = ListenOverflows() - overflows_before;
    for (const std::string& server : args.servers) {
      if (!stopped[server].empty()) {
        std::printf("server=%s ranks=%u stopped: %s (after %zu good runs)\n", server.c_str(), n,
                    stopped[server].c_str(), runs[server].size());
        continue;
      }
      std::printf("server=%s ranks=%u median=%.3f s (runs:", server.c_str(), n,
                  Median(runs[server]));
      for (const double run : runs[server]) {
        std::printf(" %.3f", run);
      }
      std::printf("); the server's process used %.3f s of CPU (median)\n",
                  Median(server_cpu[server]));
    }
    std::printf("# ranks=%u: %lld listen queue overflows over every server's runs; load %s\n", n,
                overflows, LoadAverage().c_str());
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace
}  // namespace ringleader::bench

// Interposes glibc's getnameinfo for libtorch (an executable's definition comes first in symbol
// lookup): with --names numeric, host names are the numeric address, so no lookup leaves the host.
extern "C" int getnameinfo(const sockaddr* address, socklen_t address_length, char* host,
                           socklen_t host_length, char* service, socklen_t service_length,
                           int flags) {
  using Real = int (*)(const sockaddr*, socklen_t, char*, socklen_t, char*, socklen_t, int);
  static const Real real = [] {
    Real function = nullptr;
    void* symbol = ::dlsym(RTLD_NEXT, "getnameinfo");
    std::memcpy(&function, &symbol, sizeof(function));
    return function;
  }();
  if (real == nullptr) {
    return EAI_SYSTEM;
  }
  if (ringleader::bench::numeric_host_names) {
    flags |= NI_NUMERICHOST;
  }
  return real(address, address_length, host, host_length, service, service_length, flags);
}

int main(int argc, char** argv) {
  try {
    return ringleader::bench::Main(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tcpstore_rendezvous_bench: %s\n", e.what());
    return 1;
  }
}
