// Rendezvous at scale: N ranks connect, authenticate and join (publish a record, barrier, read
// rank 0's record) against a StoreServer in a child process. The ranks are async connections on
// a few client threads. Prints the median seconds per N.
//   rendezvous_bench --ranks 1024,4096,16384 --repetitions 3 [--threads 2] [--window 1024]
#include <utility>  // before Asio's awaitable.hpp, which uses std::exchange without it

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <netinet/in.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include "sidecar/rendezvous/auth.h"
#include "sidecar/rendezvous/protocol.h"
#include "sidecar/rendezvous/store_server.h"
#include "tests/bench/bench_args.h"
#include "tests/bench/cpu_seconds.h"

namespace ringleader::rendezvous {
namespace {

namespace asio = boost::asio;
using bench::ParseFlags;
using bench::ParseList;
using asio::awaitable;
using asio::use_awaitable;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;

constexpr char kToken[] = "bench-token";
constexpr std::uint32_t kBarrierTimeoutMs = 120'000;

struct Args {
  std::vector<std::uint32_t> ranks{1024, 4096, 16384};
  int repetitions = 3;
  int threads = 2;
  int window = 1024;  // handshakes in flight per client thread
};

Args ParseArgs(int argc, char** argv) {
  Args args;
  ParseFlags(argc, argv, [&](const std::string& flag, const std::string& value) {
    if (flag == "--ranks") {
      args.ranks = ParseList<std::uint32_t>(value);
    } else if (flag == "--repetitions") {
      args.repetitions = std::stoi(value);
    } else if (flag == "--threads") {
      args.threads = std::stoi(value);
    } else if (flag == "--window") {
      args.window = std::stoi(value);
    } else {
      return false;
    }
    return true;
  });
  return args;
}

// RLIMIT_NOFILE raised to its hard limit; returns the limit now in force.
rlim_t RaiseFileLimit() {
  rlimit limit{};
  ::getrlimit(RLIMIT_NOFILE, &limit);
  limit.rlim_cur = limit.rlim_max;
  ::setrlimit(RLIMIT_NOFILE, &limit);
  ::getrlimit(RLIMIT_NOFILE, &limit);
  return limit.rlim_cur;
}

// A StoreServer in a child process, so that each side has its own descriptor table.
class ServerProcess {
 public:
  explicit ServerProcess(std::uint32_t world_size) {
    int port_pipe[2];
    int stop_pipe[2];
    if (::pipe(port_pipe) != 0 || ::pipe(stop_pipe) != 0) {
      throw std::runtime_error("pipe failed");
    }
    pid_ = ::fork();
    if (pid_ == 0) {
      ::close(port_pipe[0]);
      ::close(stop_pipe[1]);
      RunChild(world_size, port_pipe[1], stop_pipe[0]);
    }
    ::close(port_pipe[1]);
    ::close(stop_pipe[0]);
    stop_fd_ = stop_pipe[1];
    std::uint16_t port = 0;
    if (::read(port_pipe[0], &port, sizeof(port)) != sizeof(port)) {
      throw std::runtime_error("the server process did not start");
    }
    ::close(port_pipe[0]);
    port_ = port;
  }

  ~ServerProcess() { Stop(); }

  // Stops the server; returns the CPU seconds its process used.
  double Stop() {
    if (pid_ < 0) {
      return 0;
    }
    ::close(stop_fd_);
    int status = 0;
    rusage usage{};
    ::wait4(pid_, &status, 0, &usage);
    pid_ = -1;
    return bench::Seconds(usage.ru_utime) + bench::Seconds(usage.ru_stime);
  }

  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;

  std::uint16_t port() const { return port_; }

 private:
  [[noreturn]] static void RunChild(std::uint32_t world_size, int port_fd, int stop_fd) {
    ServerOptions options;
    options.bind_address = "127.0.0.1";
    options.token = kToken;
    options.world_size = world_size;
    options.handshake_timeout = std::chrono::seconds(60);
    StoreServer server(options);
    const std::uint16_t port = server.port();
    if (::write(port_fd, &port, sizeof(port)) != sizeof(port)) {
      ::_exit(1);
    }
    char byte = 0;
    while (::read(stop_fd, &byte, 1) > 0) {
    }
    const ServerStats stats = server.Stats();
    for (const auto& [reason, count] : stats.refused_by_reason) {
      std::fprintf(stderr, "server refused %llu connections: %s\n",
                   static_cast<unsigned long long>(count), reason.c_str());
    }
    server.Stop();
    ::_exit(0);
  }

  pid_t pid_ = -1;
  int stop_fd_ = -1;
  std::uint16_t port_ = 0;
};

// Leaves the port to connect(), which then only needs it unique per 4-tuple.
using BindAddressNoPort = asio::detail::socket_option::boolean<IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT>;

struct Connection {
  explicit Connection(tcp::socket s) : socket(std::move(s)) {}
  tcp::socket socket;
  FrameDecoder decoder;
  // Here rather than in ReadMessage's frame: a small coroutine frame is recycled by Asio's
  // per-thread frame cache, a 1 KiB one is a malloc and a free per reply.
  std::array<char, 1024> buffer{};
};

awaitable<Message> ReadMessage(Connection& connection) {
  std::array<char, 1024>& buffer = connection.buffer;
  while (true) {
    if (std::optional<Frame> frame = connection.decoder.Next()) {
      Result<Message> message = DecodeMessage(*frame);
      if (!message) {
        throw std::runtime_error(message.error());
      }
      co_return std::move(message).value();
    }
    const std::size_t n =
        co_await connection.socket.async_read_some(asio::buffer(buffer), use_awaitable);
    if (!connection.decoder.Feed(std::string_view(buffer.data(), n))) {
      throw std::runtime_error(connection.decoder.error()->message);
    }
  }
}

template <typename M>
awaitable<M> Expect(Connection& connection, std::string_view step) {
  Message message = co_await ReadMessage(connection);
  if (auto* m = std::get_if<M>(&message)) {
    co_return std::move(*m);
  }
  if (const auto* refused = std::get_if<Refused>(&message)) {
    throw std::runtime_error(std::string(step) + ": refused: " + refused->reason);
  }
  throw std::runtime_error(std::string(step) + ": unexpected reply");
}

struct Run {
  tcp::endpoint server;
  std::uint32_t world_size = 0;
  std::atomic<std::uint32_t> done{0};
  std::atomic<std::uint32_t> failed{0};
  std::string first_error;
  std::atomic_flag error_taken = ATOMIC_FLAG_INIT;

  void Fail(const std::exception& error) {
    ++failed;
    if (!error_taken.test_and_set()) {
      first_error = error.what();
    }
  }
};

// No temporaries with destructors inside co_await expressions: GCC 12 destroys some twice.

// After the join's requests: the barrier's reply, then rank 0's record.
awaitable<void> Finish(std::shared_ptr<Connection> connection, Run& run) {
  co_await Expect<Ok>(*connection, "Barrier");
  const Value record = co_await Expect<Value>(*connection, "Get");
  if (record.value != "10.0.0.0") {
    throw std::runtime_error("wrong record for rank 0: " + record.value);
  }
  // Close with a reset: tens of thousands of TIME_WAIT sockets would exhaust loopback's
  // ephemeral ports and make the next repetition's connects crawl.
  // (An explicit close: Asio turns linger off again when a socket is closed by its destructor.)
  connection->socket.set_option(asio::socket_base::linger(true, 0));
  connection->socket.close();
  ++run.done;
}

// What the sidecar sends to join (rendezvous::ConnectAndJoin): the Hello with its early proof,
// Set, Barrier and the Get of rank 0's record, in one write. Waits for the Welcome and the Set's
// reply; the rest goes on in Finish so that this worker can start the next rank.
awaitable<void> Enter(std::uint32_t rank, Run& run) {
  auto executor = co_await asio::this_coro::executor;
  auto connection = std::make_shared<Connection>(tcp::socket(executor));
  // Ranks come from 64 loopback addresses, as they would from many hosts: tens of thousands of
  // connections from one address to one port make the kernel's ephemeral-port search dominate.
  tcp::socket& socket = connection->socket;
  socket.open(tcp::v4());
  socket.set_option(BindAddressNoPort(true));
  const tcp::endpoint source(asio::ip::make_address_v4(0x7F000002U + rank % 64), 0);
  socket.bind(source);
  co_await socket.async_connect(run.server, use_awaitable);
  connection->socket.set_option(tcp::no_delay(true));
  Hello hello{rank, run.world_size};
  hello.attempt = 0;
  hello.sent_at_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                         std::chrono::system_clock::now().time_since_epoch())
                         .count();
  hello.nonce = MakeNonce().value();
  hello.early_proof = ComputeEarlyProof(kToken, hello);
  const std::string record = "10.0.0." + std::to_string(rank);
  const std::string join = EncodeMessage(hello) +
                           EncodeMessage(Set{"ranks/" + std::to_string(rank), record}) +
                           EncodeMessage(Barrier{"join", kBarrierTimeoutMs}) +
                           EncodeMessage(Get{"ranks/0"});
  co_await asio::async_write(connection->socket, asio::buffer(join), use_awaitable);
  co_await Expect<Welcome>(*connection, "Hello");
  co_await Expect<Ok>(*connection, "Set");
  asio::co_spawn(executor, Finish(connection, run), [&run](std::exception_ptr error) {
    if (error) {
      try {
        std::rethrow_exception(error);
      } catch (const std::exception& e) {
        run.Fail(e);
      }
    }
  });
}

// One of a thread's workers: ranks first, first + stride, ...
awaitable<void> Worker(std::uint32_t first, std::uint32_t stride, Run& run) {
  for (std::uint32_t rank = first; rank < run.world_size; rank += stride) {
    try {
      co_await Enter(rank, run);
    } catch (const std::exception& e) {
      run.Fail(e);
    }
  }
}

// Seconds from the first connect until every rank has rank 0's record. Prints the CPU seconds
// the server's process and the clients used.
double Rendezvous(std::uint32_t world_size, const Args& args) {
  ServerProcess server(world_size);
  const double clients_cpu_before = bench::SelfCpuSeconds();
  Run run;
  run.server = tcp::endpoint(asio::ip::make_address("127.0.0.1"), server.port());
  run.world_size = world_size;
  const auto threads = static_cast<std::uint32_t>(std::max(1, args.threads));
  const auto workers_per_thread = static_cast<std::uint32_t>(std::max(1, args.window));
  const std::uint32_t stride = threads * workers_per_thread;
  const auto started = Clock::now();
  std::vector<std::thread> clients;
  for (std::uint32_t t = 0; t < threads; ++t) {
    clients.emplace_back([&, t] {
      asio::io_context io(1);
      for (std::uint32_t w = 0; w < workers_per_thread; ++w) {
        const std::uint32_t first = t * workers_per_thread + w;
        if (first < world_size) {
          asio::co_spawn(io, Worker(first, stride, run), [](std::exception_ptr) {});
        }
      }
      io.run();
    });
  }
  for (auto& client : clients) {
    client.join();
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - started).count();
  const double clients_cpu = bench::SelfCpuSeconds() - clients_cpu_before;
  std::printf("cpu ranks=%u server=%.3f s clients=%.3f s\n", world_size, server.Stop(), clients_cpu);
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
  const rlim_t files = RaiseFileLimit();
  std::printf("RLIMIT_NOFILE %llu; %d client threads, %d handshakes in flight per thread\n",
              static_cast<unsigned long long>(files), args.threads, args.window);
  for (std::uint32_t n : args.ranks) {
    if (n + 64 > files) {
      std::printf("ranks=%u skipped: needs %u descriptors per process\n", n, n + 64);
      continue;
    }
    std::vector<double> runs;
    for (int r = 0; r < args.repetitions; ++r) {
      runs.push_back(Rendezvous(n, args));
    }
    std::vector<double> sorted = runs;
    std::sort(sorted.begin(), sorted.end());
    std::printf("ranks=%u median=%.3f s (runs:", n, sorted[sorted.size() / 2]);
    for (double run : runs) {
      std::printf(" %.3f", run);
    }
    std::printf(")\n");
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace
}  // namespace ringleader::rendezvous

int main(int argc, char** argv) {
  try {
    return ringleader::rendezvous::Main(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rendezvous_bench: %s\n", e.what());
    return 1;
  }
}
