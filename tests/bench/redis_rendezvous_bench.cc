// The baseline for rendezvous_bench: the same join + barrier through Gloo's Redis-backed store
// (gloo::rendezvous::RedisStore) against a redis-server the caller started. Each rank connects,
// set()s its record, INCRs a counter (the last rank sets "join/done"), waits for "join/done" as
// Gloo's RedisStore::wait does (EXISTS, then sleep 10 ms) and get()s rank 0's record. Ranks are
// blocking RedisStore connections spread over a few processes x threads. Prints median seconds.
// The server must listen on 127.0.0.1 to 127.0.0.16 (see DriveRanks).
//   redis_rendezvous_bench --port 6379 --ranks 1024,4096,16384 --repetitions 3
//                          [--processes 2] [--threads 4]
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gloo/rendezvous/redis_store.h>
#include <hiredis/hiredis.h>

#include "tests/bench/bench_args.h"

namespace ringleader::bench {
namespace {

using Clock = std::chrono::steady_clock;

struct Args {
  int port = 6379;
  std::vector<std::uint32_t> ranks{1024, 4096, 16384};
  int repetitions = 3;
  int processes = 2;
  int threads = 4;  // per process
};

Args ParseArgs(int argc, char** argv) {
  Args args;
  ParseFlags(argc, argv, [&](const std::string& flag, const std::string& value) {
    if (flag == "--port") {
      args.port = std::stoi(value);
    } else if (flag == "--ranks") {
      args.ranks = ParseList<std::uint32_t>(value);
    } else if (flag == "--repetitions") {
      args.repetitions = std::stoi(value);
    } else if (flag == "--processes") {
      args.processes = std::stoi(value);
    } else if (flag == "--threads") {
      args.threads = std::stoi(value);
    } else {
      return false;
    }
    return true;
  });
  return args;
}

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
    // Ranks reach the server at 16 loopback addresses (redis-server binds at most 16): RedisStore
    // cannot pick a source address, and tens of thousands of connections from one address to
    // one address make the kernel's ephemeral-port search dominate (rendezvous_bench spreads its
    // sources over 64 addresses for the same reason).
    const std::string host = "127.0.0." + std::to_string(1 + rank % 16);
    auto store = std::make_unique<RedisRank>(host, args.port);
    const std::string record = "10.0.0." + std::to_string(rank);
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
      if (std::string(record.begin(), record.end()) != "10.0.0.0") {
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
double Rendezvous(std::uint32_t world_size, const Args& args) {
  Flush(args.port);
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

int Main(int argc, char** argv) {
  const Args args = ParseArgs(argc, argv);
  rlimit limit{};
  ::getrlimit(RLIMIT_NOFILE, &limit);
  limit.rlim_cur = limit.rlim_max;
  ::setrlimit(RLIMIT_NOFILE, &limit);
  std::printf("gloo RedisStore on port %d; %d processes x %d threads\n", args.port, args.processes,
              args.threads);
  for (const std::uint32_t n : args.ranks) {
    std::vector<double> runs;
    for (int r = 0; r < args.repetitions; ++r) {
      runs.push_back(Rendezvous(n, args));
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
