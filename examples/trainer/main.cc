// ringleader-example-trainer: data-parallel linear regression on CPU with Gloo all-reduce, driven
// only by the torch.distributed env:// contract that ringleader injects into every trainer.
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <iostream>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "examples/trainer/agent_store_rendezvous.h"
#include "examples/trainer/linear_regression.h"
#include "examples/trainer/profiler_stand_in.h"
#include "examples/trainer/torch_store_gloo_adapter.h"
#include "examples/trainer/trainer_config.h"
#include "sidecar/app/gloo_store_adapter.h"
#include "sidecar/collectives/gloo_communicator.h"
#include "sidecar/rendezvous/join.h"
#include "sidecar/rendezvous/peer_diagnosis.h"
#include "sidecar/rendezvous/store_client.h"
#include "sidecar/rendezvous/store_server.h"
#include "sidecar/rendezvous/torch_store_client.h"

namespace ringleader::examples {
namespace {

constexpr int kExitFailure = 1;
constexpr int kExitUsage = 2;

// The project's rendezvous store insists on a token, and the env:// contract carries none. This
// example's store is not a security boundary; real trainers use their framework's own store
// (e.g. torch's TCPStore), which is just as open.
constexpr std::string_view kStoreToken = "ringleader-example-trainer-not-a-secret";

// Every key this trainer writes lives under this prefix.
constexpr std::string_view kKeyPrefix = "example-trainer/";

// With the agent store, every key also goes under /worker/attempt_<TORCHELASTIC_RESTART_COUNT>/,
// as PyTorch 1.13's env:// puts a trainer's keys there: a store that outlives an attempt (an
// agent's, or a sidecar whose Pod lives on) then never mixes one attempt's join counter or Gloo
// addresses with the next one's, and the example's keys sit where a PyTorch trainer's would.
std::string AttemptPrefix(int restart_count) {
  return "/worker/attempt_" + std::to_string(restart_count) + "/";
}

// A failure after the configuration was accepted; the message says what happened.
class TrainingFailure : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};


// The local address this host would use to reach MASTER_ADDR: a UDP connect() sends nothing but
// picks the route, and getsockname() reads the source address. That is the address peers can
// reach us on, on loopback and inside a Pod's network namespace alike, without RINGLEADER_*.
std::string LocalAddressToward(const std::string& host, std::uint16_t port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(port);
  if (const int rc = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &found); rc != 0) {
    throw TrainingFailure("cannot resolve MASTER_ADDR " + host + ": " + ::gai_strerror(rc));
  }
  std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> owned(found, &::freeaddrinfo);
  std::string last_error = "no address";
  for (const addrinfo* ai = found; ai != nullptr; ai = ai->ai_next) {
    const int fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) {
      last_error = std::strerror(errno);
      continue;
    }
    sockaddr_storage local{};
    socklen_t length = sizeof(local);
    const bool ok = ::connect(fd, ai->ai_addr, ai->ai_addrlen) == 0 &&
                    ::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &length) == 0;
    last_error = ok ? "" : std::strerror(errno);
    ::close(fd);
    if (!ok) {
      continue;
    }
    char text[INET6_ADDRSTRLEN] = {};
    const void* address = local.ss_family == AF_INET6
                              ? static_cast<const void*>(&reinterpret_cast<sockaddr_in6*>(&local)->sin6_addr)
                              : static_cast<const void*>(&reinterpret_cast<sockaddr_in*>(&local)->sin_addr);
    if (::inet_ntop(local.ss_family, address, text, sizeof(text)) != nullptr) {
      return text;
    }
  }
  throw TrainingFailure("no local route to MASTER_ADDR " + host + ": " + last_error);
}

std::string RankName(const TrainerConfig& config) {
  return "rank " + std::to_string(config.rank) + " of " + std::to_string(config.world_size);
}

class Trainer {
 public:
  explicit Trainer(TrainerConfig config) : config_(std::move(config)) {}

  int Run() {
    try {
      return Train();
    } catch (...) {
      LetPeersHearTheOutcome();
      throw;
    }
  }

 private:
  int Train() {
    // The devices the runtime gave this container (a device plugin's NVIDIA_VISIBLE_DEVICES), so
    // a test can compare them with the ones the preflight container tested.
    const char* devices = std::getenv("NVIDIA_VISIBLE_DEVICES");
    std::printf("devices: %s\n", devices != nullptr && *devices != '\0' ? devices : "none given");
    std::fflush(stdout);
    Bootstrap();
    StartProfilerStandIn();
    const std::vector<Sample> shard =
        LoadShard(config_.seed, ShardOf(config_.samples, config_.rank, config_.world_size));
    Parameters parameters{};
    // One all-reduce per step carries the gradient and the loss together.
    auto buffers = comm_->Allocate(kParameters + 1, kParameters + 1);
    std::vector<float> reduced(kParameters + 1);
    for (int step = 1; step <= config_.steps; ++step) {
      if (config_.ExitsAtStep(step)) {
        // The last line is what the kubelet keeps as the termination message.
        std::fprintf(stderr, "ringleader-example-trainer: %s: exiting with code %d at step %d (--exit-code-at-step)\n",
                     RankName(config_).c_str(), config_.injected_exit->code, step);
        std::fflush(stderr);
        LetPeersHearTheOutcome();
        return config_.injected_exit->code;
      }
      if (config_.StallsAtStep(step)) {
        // The others enter this step's all-reduce and wait in it; this rank never comes.
        std::fprintf(stderr, "ringleader-example-trainer: %s: stalling at step %d: not entering its all-reduce (--stall-at-step); waiting until stopped\n",
                     RankName(config_).c_str(), step);
        std::fflush(stderr);
        for (;;) {
          std::this_thread::sleep_for(std::chrono::hours(1));
        }
      }
      const GradientShare share = ComputeGradientShare(shard, config_.samples, parameters);
      std::vector<float> send(kParameters + 1);
      std::transform(share.gradient.begin(), share.gradient.end(), send.begin(),
                     [](double value) { return static_cast<float>(value); });
      send[kParameters] = static_cast<float>(share.loss);
      buffers->WriteSend(send);
      // NCCL starts a collective's event when the rank launches it, before its peers need have
      // come, and its kernel's times once it ran: so does the stand-in, around Gloo's call.
      const ProfilerStandIn::Entered entered =
          stand_in_ ? stand_in_->EnterAllReduce(kParameters + 1) : ProfilerStandIn::Entered{};
      const std::uint64_t started_unix_ns = UnixNowNs();
      const auto started = std::chrono::steady_clock::now();
      Communicate("the gradient all-reduce of step " + std::to_string(step), [&] {
        comm_->Run(collectives::Collective::kAllReduce, *buffers, kParameters + 1);
      });
      if (stand_in_) {
        stand_in_->FinishAllReduce(entered, started_unix_ns, std::chrono::steady_clock::now() - started);
      }
      buffers->ReadRecv(reduced);
      for (std::size_t i = 0; i < kParameters; ++i) {
        parameters[i] -= config_.learning_rate * static_cast<double>(reduced[i]);
      }
      if (config_.rank == 0) {
        std::printf("step %d/%d loss %.9g\n", step, config_.steps,
                    static_cast<double>(reduced[kParameters]));
        std::fflush(stdout);
      }
      if (config_.step_delay.count() > 0) {
        std::this_thread::sleep_for(config_.step_delay);
      }
    }
    VerifyRanksAgree(parameters);
    std::printf("final steps %d checksum %.17g weights", config_.steps, Checksum(parameters));
    for (std::size_t i = 0; i < kParameters; ++i) {
      std::printf("%s%.17g", i == 0 ? " " : ",", parameters[i]);
    }
    std::printf("\n");
    std::fflush(stdout);
    if (const std::chrono::seconds linger = config_.LingerAfterTraining(); linger.count() > 0) {
      std::printf("training done; lingering %lld s (--linger-after-training-seconds)\n",
                  static_cast<long long>(linger.count()));
      std::fflush(stdout);
      std::this_thread::sleep_for(linger);
    }
    return 0;
  }

  // Every rank connects to the store on MASTER_PORT, joins, and builds the Gloo mesh through
  // the store. Who serves that store depends on TORCHELASTIC_USE_AGENT_STORE (trainer_config.h).
  void Bootstrap() {
    const auto deadline = std::chrono::steady_clock::now() + config_.timeout;
    const std::string own_address =
        config_.use_agent_store ? JoinTheAgentStore(deadline) : JoinOwnStore(deadline);
    collectives::GlooOptions gloo;
    gloo.rank = config_.rank;
    gloo.size = config_.world_size;
    gloo.prefix = std::string(kKeyPrefix) + "gloo/";
    gloo.hostname = own_address;
    gloo.timeout = config_.timeout;
    Communicate("connecting the Gloo mesh", [&] {
      comm_ = std::make_unique<collectives::GlooCommunicator>(*store_, gloo);
    });
    const std::string whose =
        config_.use_agent_store
            ? " (a client of its TCPStore, keys under " + AttemptPrefix(config_.restart_count) + ")"
            : "";
    std::fprintf(stderr, "ringleader-example-trainer: %s: connected on %s to MASTER_ADDR %s:%u%s\n",
                 RankName(config_).c_str(), own_address.c_str(), config_.master_addr.c_str(),
                 static_cast<unsigned>(config_.master_port), whose.c_str());
  }

  // Rank 0 serves a store of ringleader's own protocol on MASTER_PORT; every rank (rank 0 too)
  // connects and meets at its barrier. The store stays up until rank 0 exits, which is after
  // the last collective, so no rank still needs it by then. Returns this rank's address.
  std::string JoinOwnStore(std::chrono::steady_clock::time_point deadline) {
    if (config_.rank == 0) {
      rendezvous::ServerOptions options;
      options.port = config_.master_port;
      options.token = std::string(kStoreToken);
      options.world_size = static_cast<std::uint32_t>(config_.world_size);
      try {
        server_ = std::make_unique<rendezvous::StoreServer>(options);
      } catch (const std::exception& error) {
        throw TrainingFailure(std::string("serving the store on MASTER_PORT: ") + error.what());
      }
    }
    rendezvous::ClientOptions options;
    options.host = config_.master_addr;
    options.port = config_.master_port;
    options.token = std::string(kStoreToken);
    options.rank = static_cast<std::uint32_t>(config_.rank);
    options.world_size = static_cast<std::uint32_t>(config_.world_size);
    options.deadline = deadline;
    options.io_timeout = config_.timeout;
    auto client = rendezvous::StoreClient::Connect(options);
    if (!client) {
      throw TrainingFailure("connecting to rank 0's store: " + client.error());
    }
    client_ = std::move(client).value();

    std::string own_address = LocalAddressToward(config_.master_addr, config_.master_port);
    rendezvous::JoinRequest join;
    join.record = own_address;
    join.timeout = config_.timeout;
    join.key_prefix = std::string(kKeyPrefix) + "ranks/";
    join.barrier_name = std::string(kKeyPrefix) + "join";
    if (auto joined = rendezvous::Join(*client_, join); !joined) {
      throw TrainingFailure("joining: " + joined.error());
    }
    store_ = std::make_unique<sidecar::GlooStoreAdapter>(*client_, config_.timeout);
    return own_address;
  }

  // Every rank, rank 0 included, is a client of the TCPStore someone else serves on MASTER_PORT
  // (rank 0's sidecar) and binds nothing for the rendezvous. Connecting retries until the
  // deadline: other ranks' trainers can start before rank 0's Pod, and with it the store.
  // Returns this rank's address.
  std::string JoinTheAgentStore(std::chrono::steady_clock::time_point deadline) {
    rendezvous::TorchStoreClientOptions options;
    options.host = config_.master_addr;
    options.port = config_.master_port;
    options.key_prefix = AttemptPrefix(config_.restart_count);
    options.deadline = deadline;
    options.io_timeout = config_.timeout;
    auto client = rendezvous::TorchStoreClient::Connect(options);
    if (!client) {
      throw TrainingFailure("connecting to the TCPStore on MASTER_PORT: " + client.error());
    }
    agent_client_ = std::move(client).value();
    auto responder = RollCallResponder::Start(options, std::string(kKeyPrefix), config_.rank);
    if (!responder) {
      throw TrainingFailure("connecting to the TCPStore on MASTER_PORT: " + responder.error());
    }
    roll_call_ = std::move(responder).value();

    std::string own_address = LocalAddressToward(config_.master_addr, config_.master_port);
    AgentStoreJoin join;
    join.key_prefix = std::string(kKeyPrefix);
    join.rank = config_.rank;
    join.world_size = config_.world_size;
    join.record = own_address;
    join.timeout = config_.timeout;
    if (auto joined = JoinAgentStore(*agent_client_, join); !joined) {
      throw TrainingFailure("joining: " + joined.error());
    }
    store_ = std::make_unique<TorchStoreGlooAdapter>(*agent_client_, config_.timeout);
    return own_address;
  }

  // NCCL loads its profiler plugin when a communicator is made; the Gloo mesh is this trainer's.
  void StartProfilerStandIn() {
    if (!config_.profiler_plugin) {
      return;
    }
    StandInOptions options;
    options.plugin_path = *config_.profiler_plugin;
    options.comm_name = "example-trainer-gloo";
    options.comm_hash = StandInCommHash(config_.master_addr, config_.master_port,
                                        config_.world_size, config_.attempt.value_or(0));
    options.nnodes = config_.nnodes;
    options.nranks = config_.world_size;
    options.rank = config_.rank;
    options.time_factor = config_.ReportedTimeFactor();
    const std::string who = RankName(config_);
    stand_in_ = ProfilerStandIn::Start(options, [&who](const std::string& line) {
      std::fprintf(stderr, "ringleader-example-trainer: %s: %s\n", who.c_str(), line.c_str());
    });
  }

  // Rank 0's failure takes the store with it, and survivors a moment behind would then blame
  // rank 0 instead of the rank that died. So its store outlives the failure until every peer has
  // left it, for at most a few seconds.
  void LetPeersHearTheOutcome() {
    if (!server_) {
      return;
    }
    comm_.reset();
    store_.reset();
    client_.reset();
    server_->WaitUntilEveryRankLeft(std::chrono::seconds(3));
  }

  // Runs one communicator call; a failure becomes a TrainingFailure saying who is gone.
  template <typename Op>
  void Communicate(const std::string& what, Op&& op) {
    try {
      std::forward<Op>(op)();
    } catch (const collectives::CommunicatorError& error) {
      throw TrainingFailure(what + " failed: " + DiagnosePeers() + "; " + error.what());
    }
  }

  // Which ranks died: from the native store's connections (peer_diagnosis.h; no store means
  // rank 0 is gone), or by a roll call on the agent store.
  std::string DiagnosePeers() {
    if (agent_client_) {
      return DescribeRollCall(TakeRollCall(*agent_client_, std::string(kKeyPrefix), config_.rank,
                                           config_.world_size),
                              config_.world_size);
    }
    return rendezvous::DescribePeerDiagnosis(rendezvous::DiagnosePeers(*client_, kKeyPrefix),
                                             static_cast<std::uint32_t>(config_.world_size));
  }

  // All ranks must hold bit-identical weights: every rank applies the same reduced gradient.
  void VerifyRanksAgree(const Parameters& parameters) {
    const double mine = Checksum(parameters);
    std::vector<double> all;
    Communicate("the checksum all-gather", [&] { all = comm_->AllGatherDouble(mine); });
    for (std::size_t rank = 0; rank < all.size(); ++rank) {
      if (all[rank] != mine) {
        char text[160];
        std::snprintf(text, sizeof(text),
                      "ranks disagree on the weights: rank %zu has checksum %.17g, this rank %.17g",
                      rank, all[rank], mine);
        throw TrainingFailure(text);
      }
    }
  }

  TrainerConfig config_;
  // Declared in teardown order reversed: the communicator goes first, the server last.
  std::unique_ptr<rendezvous::StoreServer> server_;
  std::unique_ptr<rendezvous::StoreClient> client_;
  // With the agent store instead of the two above: the client Gloo's store uses.
  std::unique_ptr<rendezvous::TorchStoreClient> agent_client_;
  std::unique_ptr<gloo::rendezvous::Store> store_;
  std::unique_ptr<collectives::GlooCommunicator> comm_;
  // The roll call's answering connection, which goes before the Gloo mesh: a rank on its way out
  // (its own exit code, a failure) must not answer the roll call its peers take once its Gloo
  // connections close.
  std::unique_ptr<RollCallResponder> roll_call_;
  // Finalized first, as NCCL finalizes the profiler before its communicator goes.
  std::unique_ptr<ProfilerStandIn> stand_in_;
};

std::optional<std::string> ProcessEnv(std::string_view name) {
  const char* value = std::getenv(std::string(name).c_str());
  return value == nullptr ? std::nullopt : std::optional<std::string>(value);
}

}  // namespace
}  // namespace ringleader::examples

int main(int argc, char** argv) {
  using namespace ringleader::examples;
  TrainerConfig config;
  try {
    config = ParseTrainerConfig(std::vector<std::string>(argv + 1, argv + argc), &ProcessEnv);
  } catch (const ConfigError& error) {
    std::fprintf(stderr, "ringleader-example-trainer: %s\n", error.what());
    return kExitUsage;
  }
  const std::string who = RankName(config);
  try {
    Trainer trainer(config);
    return trainer.Run();
  } catch (const std::exception& error) {
    std::fprintf(stderr, "ringleader-example-trainer: %s: %s\n", who.c_str(), error.what());
    return kExitFailure;
  }
}
