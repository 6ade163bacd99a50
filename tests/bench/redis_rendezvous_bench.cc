// The baseline for rendezvous_bench: the same join + barrier through a redis-server the caller
// started. Each rank connects, SETs its record and INCRs a counter; the last rank publishes
// "join/done"; every rank waits for it, then GETs rank 0's record. Prints median seconds per N.
//
// --client async (the default) matches rendezvous_bench's client: hiredis' asynchronous API on
// --threads event loops (Boost.Asio), each keeping --window ranks joining at once. A rank's join
// is connect, then SET + INCR in one write; once the INCR's reply is in, its worker starts the
// next rank while this one waits for the barrier and the GET. The clock runs from before the
// first connect until every rank has rank 0's record and closed. The barrier is a stream: the
// last rank XADDs one entry to "join/done" and every rank sends XREAD BLOCK ... STREAMS join/done
// 0-0 (pipelined with its GET), which the server answers at once if the entry exists and else
// as soon as it is added. That is what ringleader's Barrier is: one request per rank, answered
// by the server to every waiter when the last rank arrives. The alternatives are less fair:
// polling EXISTS adds a poll interval or floods the server, BLPOP needs the last rank to push N
// tokens, and a SUBSCRIBEd connection can send no GET, so PUBLISH would need two per rank.
// As before, Redis ranks do not authenticate (rendezvous_bench's do: one more round trip each).
//
// --client gloo is the earlier baseline: blocking gloo::rendezvous::RedisStore connections on
// --processes x --threads (default 2 x 4), each joining its ranks one after another and then
// waiting as RedisStore::wait does (EXISTS join/done, sleep 10 ms), the last rank SETting it.
//
// Ranks reach the server at 127.0.0.1 to 127.0.0.16 (see RedisHost), so it must listen on all 16.
//   redis_rendezvous_bench --port 6379 --ranks 1024,4096,16384 --repetitions 3
//                          [--client async|gloo] [--threads 2] [--window 1024] [--processes 2]
//                          [--server-pid PID]  (redis-server's: prints the CPU each side used)
#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <initializer_list>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <netinet/in.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <gloo/rendezvous/redis_store.h>
#include <hiredis/async.h>
#include <hiredis/hiredis.h>

#include "tests/bench/bench_args.h"
#include "tests/bench/cpu_seconds.h"
#include "tests/bench/hiredis_asio.h"

namespace ringleader::bench {
namespace {

using Clock = std::chrono::steady_clock;

constexpr char kRank0Record[] = "10.0.0.0";
constexpr char kBarrierTimeoutMs[] = "120000";

struct Args {
  int port = 6379;
  std::vector<std::uint32_t> ranks{1024, 4096, 16384};
  int repetitions = 3;
  std::string client = "async";
  int threads = 0;  // client threads (per process for gloo); 0: 2 for async, 4 for gloo
  int window = 1024;  // async: ranks joining at once per client thread
  int processes = 2;  // gloo only
  int server_pid = 0;  // redis-server's, to print the CPU it used per run (async only)
};

Args ParseArgs(int argc, char** argv) {
  Args args;
  ParseFlags(argc, argv, [&](const std::string& flag, const std::string& value) {
    if (flag == "--port") {
      args.port = std::stoi(value);
    } else if (flag == "--server-pid") {
      args.server_pid = std::stoi(value);
    } else if (flag == "--ranks") {
      args.ranks = ParseList<std::uint32_t>(value);
    } else if (flag == "--repetitions") {
      args.repetitions = std::stoi(value);
    } else if (flag == "--client") {
      args.client = value;
    } else if (flag == "--threads") {
      args.threads = std::stoi(value);
    } else if (flag == "--window") {
      args.window = std::stoi(value);
    } else if (flag == "--processes") {
      args.processes = std::stoi(value);
    } else {
      return false;
    }
    return true;
  });
  if (args.client != "async" && args.client != "gloo") {
    throw std::invalid_argument("--client must be async or gloo");
  }
  if (args.threads <= 0) {
    args.threads = args.client == "async" ? 2 : 4;
  }
  return args;
}

// Spreads ranks over the 16 addresses redis-server can bind: tens of thousands of connections
// from one address to one address make the kernel's ephemeral-port search dominate
// (rendezvous_bench spreads its source addresses over 64 for the same reason; neither
// RedisStore nor hiredis can set IP_BIND_ADDRESS_NO_PORT, which that needs).
std::string RedisHost(std::uint32_t rank) { return "127.0.0." + std::to_string(1 + rank % 16); }

std::string Record(std::uint32_t rank) { return "10.0.0." + std::to_string(rank); }

// --client gloo: blocking RedisStore connections, each client thread joining its ranks in turn.

// Gloo's RedisStore plus the one command a counting barrier needs (Gloo's Store has no add()).
class RedisRank : public gloo::rendezvous::RedisStore {
 public:
  RedisRank(const std::string& host, int port) : RedisStore(host, port) {}

  long long Increment(const std::string& key) {
    auto* reply = static_cast<redisReply*>(redisCommand(redis_, "INCR %b", key.data(), key.size()));
    if (reply == nullptr || reply->type != REDIS_REPLY_INTEGER) {
      throw std::runtime_error("INCR failed");
    }
    const long long value = reply->integer;
    freeReplyObject(reply);
    return value;
  }

  // Close with a reset, as rendezvous_bench does: TIME_WAIT sockets would slow the next run.
  ~RedisRank() override {
    const linger reset{1, 0};
    ::setsockopt(redis_->fd, SOL_SOCKET, SO_LINGER, &reset, sizeof(reset));
  }
};

std::uint64_t MonotonicNs() {
  timespec now{};
  ::clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<std::uint64_t>(now.tv_sec) * 1'000'000'000ULL +
         static_cast<std::uint64_t>(now.tv_nsec);
}

// One client thread's ranks: first, first + stride, ...; joins them all, then polls them.
void DriveRanks(const Args& args, std::uint32_t world_size, std::uint32_t first,
                std::uint32_t stride) {
  const std::vector<char> done_flag{'1'};
  std::vector<std::unique_ptr<RedisRank>> pending;
  for (std::uint32_t rank = first; rank < world_size; rank += stride) {
    auto store = std::make_unique<RedisRank>(RedisHost(rank), args.port);
    const std::string record = Record(rank);
    store->set("ranks/" + std::to_string(rank), std::vector<char>(record.begin(), record.end()));
    if (store->Increment("join/count") == world_size) {
      store->set("join/done", done_flag);
    }
    pending.push_back(std::move(store));
  }
  // RedisStore::wait({"join/done"}) for every rank, interleaved: each pending rank checks once
  // per round and a round lasts at least Gloo's 10 ms poll interval.
  const std::vector<std::string> done_key{"join/done"};
  while (!pending.empty()) {
    const auto round_started = Clock::now();
    std::vector<std::unique_ptr<RedisRank>> still;
    for (auto& store : pending) {
      if (!store->check(done_key)) {
        still.push_back(std::move(store));
        continue;
      }
      const std::vector<char> record = store->get("ranks/0");
      if (std::string(record.begin(), record.end()) != kRank0Record) {
        throw std::runtime_error("wrong record for rank 0");
      }
    }
    pending = std::move(still);
    if (!pending.empty()) {
      std::this_thread::sleep_until(round_started + std::chrono::milliseconds(10));
    }
  }
}

void Flush(int port) {
  redisContext* context = redisConnect("127.0.0.1", port);
  if (context == nullptr || context->err != 0) {
    throw std::runtime_error("cannot connect to redis on port " + std::to_string(port));
  }
  auto* reply = static_cast<redisReply*>(redisCommand(context, "FLUSHALL"));
  if (reply != nullptr) {
    freeReplyObject(reply);
  }
  redisFree(context);
}

// A client process: waits for the start byte, runs its threads, writes the finish time (or 0
// on failure) to `result_fd`.
[[noreturn]] void RunClientProcess(const Args& args, std::uint32_t world_size, int index,
                                   int go_fd, int result_fd) {
  char byte = 0;
  if (::read(go_fd, &byte, 1) != 1) {
    ::_exit(1);
  }
  const auto stride = static_cast<std::uint32_t>(args.processes * args.threads);
  std::uint64_t finished = 0;
  std::atomic<bool> ok{true};
  std::vector<std::thread> threads;
  for (int t = 0; t < args.threads; ++t) {
    const auto first = static_cast<std::uint32_t>(index * args.threads + t);
    threads.emplace_back([&, first] {
      try {
        DriveRanks(args, world_size, first, stride);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "rank group %u: %s\n", first, e.what());
        ok = false;
      }
    });
  }
  for (auto& thread : threads) {
    thread.join();
  }
  finished = ok ? MonotonicNs() : 0;
  if (::write(result_fd, &finished, sizeof(finished)) != sizeof(finished)) {
    ::_exit(1);
  }
  ::_exit(ok ? 0 : 1);
}

// Seconds from the start byte until the last process has every rank's copy of rank 0's record.
double GlooRendezvous(std::uint32_t world_size, const Args& args) {
  int go[2];
  int result[2];
  if (::pipe(go) != 0 || ::pipe(result) != 0) {
    throw std::runtime_error("pipe failed");
  }
  std::vector<pid_t> children;
  for (int p = 0; p < args.processes; ++p) {
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::close(go[1]);
      ::close(result[0]);
      RunClientProcess(args, world_size, p, go[0], result[1]);
    }
    children.push_back(pid);
  }
  ::close(go[0]);
  ::close(result[1]);
  const std::uint64_t started = MonotonicNs();
  const std::string bytes(static_cast<std::size_t>(args.processes), 'g');
  if (::write(go[1], bytes.data(), bytes.size()) != static_cast<ssize_t>(bytes.size())) {
    throw std::runtime_error("cannot start the clients");
  }
  std::uint64_t last = 0;
  bool ok = true;
  for (int p = 0; p < args.processes; ++p) {
    std::uint64_t finished = 0;
    if (::read(result[0], &finished, sizeof(finished)) != sizeof(finished) || finished == 0) {
      ok = false;
    }
    last = std::max(last, finished);
  }
  for (const pid_t pid : children) {
    int status = 0;
    ::waitpid(pid, &status, 0);
  }
  ::close(go[1]);
  ::close(result[0]);
  if (!ok) {
    throw std::runtime_error("a client process failed at " + std::to_string(world_size) + " ranks");
  }
  return static_cast<double>(last - started) / 1e9;
}

// --client async: one join per rank, driven by callbacks from hiredis on its thread's io_context.
struct AsyncRun;

// One of a thread's workers: ranks first, first + stride, ...; one joining at a time.
struct Worker {
  AsyncRun* run = nullptr;
  boost::asio::any_io_executor executor;
  std::uint32_t next_rank = 0;
};

struct Join {
  Worker* worker = nullptr;
  std::uint32_t rank = 0;
  bool failed = false;
};

struct AsyncRun {
  int port = 0;
  std::uint32_t world_size = 0;
  std::uint32_t stride = 0;
  std::vector<Join> joins;  // by rank; each written only by its worker's thread
  std::atomic<std::uint32_t> done{0};
  std::atomic<std::uint32_t> failed{0};
  std::string first_error;
  std::atomic_flag error_taken = ATOMIC_FLAG_INIT;

  void Fail(Join& join, const std::string& error) {
    if (join.failed) {
      return;
    }
    join.failed = true;
    ++failed;
    if (!error_taken.test_and_set()) {
      first_error = "rank " + std::to_string(join.rank) + ": " + error;
    }
  }
};

// Queues one command (hiredis copies the arguments into its output buffer at once).
bool Command(redisAsyncContext* context, redisCallbackFn* on_reply, Join& join,
             std::initializer_list<std::string_view> words) {
  std::array<const char*, 8> argv{};
  std::array<std::size_t, 8> lengths{};
  std::size_t count = 0;
  for (const std::string_view word : words) {
    argv.at(count) = word.data();
    lengths.at(count) = word.size();
    ++count;
  }
  return redisAsyncCommandArgv(context, on_reply, &join, static_cast<int>(count), argv.data(),
                               lengths.data()) == REDIS_OK;
}

Join& JoinOf(void* privdata) { return *static_cast<Join*>(privdata); }

// What went wrong with a reply (nullptr: hiredis is dropping the connection).
std::string Describe(const char* command, const redisAsyncContext* context,
                     const redisReply* reply) {
  if (reply == nullptr) {
    const char* error = context->errstr != nullptr ? context->errstr : "";
    return std::string(command) + ": connection lost: " + error;
  }
  if (reply->type == REDIS_REPLY_ERROR) {
    return std::string(command) + ": " + std::string(reply->str, reply->len);
  }
  return std::string(command) + ": unexpected reply of type " + std::to_string(reply->type);
}

// Close with a reset, as rendezvous_bench does: TIME_WAIT sockets would slow the next run. Only
// from a callback with a reply; hiredis frees the context once the callback returns.
void Close(redisAsyncContext* context) {
  const linger reset{1, 0};
  ::setsockopt(context->c.fd, SOL_SOCKET, SO_LINGER, &reset, sizeof(reset));
  redisAsyncFree(context);
}

void StartNextRank(Worker& worker);

void OnSet(redisAsyncContext* context, void* reply_data, void* privdata) {
  const auto* reply = static_cast<const redisReply*>(reply_data);
  if (reply == nullptr || reply->type != REDIS_REPLY_STATUS) {
    JoinOf(privdata).worker->run->Fail(JoinOf(privdata), Describe("SET", context, reply));
  }
}

void OnPublish(redisAsyncContext* context, void* reply_data, void* privdata) {
  const auto* reply = static_cast<const redisReply*>(reply_data);
  if (reply == nullptr || reply->type != REDIS_REPLY_STRING) {
    JoinOf(privdata).worker->run->Fail(JoinOf(privdata), Describe("XADD", context, reply));
  }
}

// XREAD's reply: the stream's entries, or nil when it timed out.
void OnBarrier(redisAsyncContext* context, void* reply_data, void* privdata) {
  const auto* reply = static_cast<const redisReply*>(reply_data);
  if (reply != nullptr && reply->type == REDIS_REPLY_NIL) {
    JoinOf(privdata).worker->run->Fail(JoinOf(privdata), "barrier timed out");
  } else if (reply == nullptr || reply->type != REDIS_REPLY_ARRAY) {
    JoinOf(privdata).worker->run->Fail(JoinOf(privdata), Describe("XREAD", context, reply));
  }
}

void OnRecord(redisAsyncContext* context, void* reply_data, void* privdata) {
  const auto* reply = static_cast<const redisReply*>(reply_data);
  Join& join = JoinOf(privdata);
  AsyncRun& run = *join.worker->run;
  if (reply == nullptr) {
    run.Fail(join, Describe("GET", context, reply));
    return;
  }
  if (reply->type != REDIS_REPLY_STRING) {
    run.Fail(join, Describe("GET", context, reply));
  } else if (std::string_view(reply->str, reply->len) != kRank0Record) {
    run.Fail(join, "wrong record for rank 0: " + std::string(reply->str, reply->len));
  } else if (!join.failed) {
    ++run.done;
  }
  Close(context);
}

// INCR's reply ends the rank's join: the last rank publishes join/done, every rank queues the
// barrier and the GET of rank 0's record in one write, and the worker moves on.
void OnCount(redisAsyncContext* context, void* reply_data, void* privdata) {
  const auto* reply = static_cast<const redisReply*>(reply_data);
  Join& join = JoinOf(privdata);
  AsyncRun& run = *join.worker->run;
  if (reply == nullptr) {
    run.Fail(join, Describe("INCR", context, reply));
  } else if (reply->type != REDIS_REPLY_INTEGER || join.failed) {
    run.Fail(join, Describe("INCR", context, reply));
    Close(context);
  } else {
    const std::string rank = std::to_string(join.rank);
    const bool last = reply->integer == static_cast<long long>(run.world_size);
    const bool queued =
        (!last || Command(context, OnPublish, join, {"XADD", "join/done", "*", "rank", rank})) &&
        Command(context, OnBarrier, join,
                {"XREAD", "BLOCK", kBarrierTimeoutMs, "STREAMS", "join/done", "0-0"}) &&
        Command(context, OnRecord, join, {"GET", "ranks/0"});
    if (!queued) {
      run.Fail(join, "cannot queue the barrier");
      Close(context);
    }
  }
  StartNextRank(*join.worker);
}

// Connects the worker's next rank and queues its SET and INCR; ranks that fail to connect are
// counted and skipped.
void StartNextRank(Worker& worker) {
  AsyncRun& run = *worker.run;
  while (worker.next_rank < run.world_size) {
    Join& join = run.joins[worker.next_rank];
    join.worker = &worker;
    join.rank = worker.next_rank;
    worker.next_rank += run.stride;
    redisAsyncContext* context = redisAsyncConnect(RedisHost(join.rank).c_str(), run.port);
    if (context == nullptr) {
      run.Fail(join, "redisAsyncConnect: out of memory");
      continue;
    }
    if (context->err != 0) {
      run.Fail(join, std::string("connect: ") + context->errstr);
      redisAsyncFree(context);
      continue;
    }
    HiredisAsio::Attach(context, worker.executor);
    const std::string key = "ranks/" + std::to_string(join.rank);
    const std::string record = Record(join.rank);
    if (!Command(context, OnSet, join, {"SET", key, record}) ||
        !Command(context, OnCount, join, {"INCR", "join/count"})) {
      run.Fail(join, "cannot queue SET and INCR");
      redisAsyncFree(context);
      continue;
    }
    return;
  }
}

// Seconds from the first connect until every rank has rank 0's record.
double AsyncRendezvous(std::uint32_t world_size, const Args& args) {
  AsyncRun run;
  run.port = args.port;
  run.world_size = world_size;
  run.joins.resize(world_size);
  const auto threads = static_cast<std::uint32_t>(std::max(1, args.threads));
  const auto workers_per_thread = static_cast<std::uint32_t>(std::max(1, args.window));
  run.stride = threads * workers_per_thread;
  const auto started = Clock::now();
  std::vector<std::thread> clients;
  for (std::uint32_t t = 0; t < threads; ++t) {
    clients.emplace_back([&, t] {
      boost::asio::io_context io(1);
      std::vector<Worker> workers(workers_per_thread);
      for (std::uint32_t w = 0; w < workers_per_thread; ++w) {
        workers[w].run = &run;
        workers[w].executor = io.get_executor();
        workers[w].next_rank = t * workers_per_thread + w;
        StartNextRank(workers[w]);
      }
      io.run();
    });
  }
  for (auto& client : clients) {
    client.join();
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - started).count();
  if (run.done != world_size) {
    throw std::runtime_error(std::to_string(run.failed.load()) + " of " +
                             std::to_string(world_size) + " ranks failed, first: " +
                             run.first_error);
  }
  return seconds;
}

int Main(int argc, char** argv) {
  const Args args = ParseArgs(argc, argv);
  ::signal(SIGPIPE, SIG_IGN);
  rlimit limit{};
  ::getrlimit(RLIMIT_NOFILE, &limit);
  limit.rlim_cur = limit.rlim_max;
  ::setrlimit(RLIMIT_NOFILE, &limit);
  ::getrlimit(RLIMIT_NOFILE, &limit);
  const bool async = args.client == "async";
  if (async) {
    std::printf("hiredis async on port %d; RLIMIT_NOFILE %llu; %d client threads, %d ranks "
                "joining per thread\n",
                args.port, static_cast<unsigned long long>(limit.rlim_cur), args.threads,
                args.window);
  } else {
    std::printf("gloo RedisStore on port %d; %d processes x %d threads\n", args.port,
                args.processes, args.threads);
  }
  for (const std::uint32_t n : args.ranks) {
    if (async && n + 64 > limit.rlim_cur) {
      std::printf("ranks=%u skipped: needs %u descriptors per process\n", n, n + 64);
      continue;
    }
    std::vector<double> runs;
    for (int r = 0; r < args.repetitions; ++r) {
      Flush(args.port);
      const double server_before = args.server_pid > 0 ? ProcessCpuSeconds(args.server_pid) : -1;
      const double clients_before = SelfCpuSeconds();
      runs.push_back(async ? AsyncRendezvous(n, args) : GlooRendezvous(n, args));
      // The gloo client's processes are not this one: their CPU is not counted.
      if (async && args.server_pid > 0) {
        std::printf("cpu ranks=%u server=%.3f s clients=%.3f s\n", n,
                    ProcessCpuSeconds(args.server_pid) - server_before,
                    SelfCpuSeconds() - clients_before);
      }
    }
    std::vector<double> sorted = runs;
    std::sort(sorted.begin(), sorted.end());
    std::printf("ranks=%u median=%.3f s (runs:", n, sorted[sorted.size() / 2]);
    for (const double run : runs) {
      std::printf(" %.3f", run);
    }
    std::printf(")\n");
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
    std::fprintf(stderr, "redis_rendezvous_bench: %s\n", e.what());
    return 1;
  }
}
