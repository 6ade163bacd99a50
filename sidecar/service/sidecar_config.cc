// Environment and flags, read through one table of settings so both forms check a value the same
// way and name the place that held it.
#include "sidecar/service/sidecar_config.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <sstream>
#include <utility>

namespace ringleader::sidecar {
namespace {

namespace cenv = contract::env;

// Bounds shared with the operator's validation of the TrainingJob spec.
constexpr std::int64_t kReplicaLimit = 16384;
constexpr std::int64_t kMaxGpusPerReplica = 64;
constexpr std::int64_t kMinMessageBytes = 4;  // one float32 element
constexpr std::int64_t kMaxPreflightBytes = std::int64_t{16} << 30;
constexpr std::int64_t kMaxMonitorBytes = std::int64_t{1} << 30;
constexpr std::int64_t kMaxBusBandwidth = std::int64_t{1} << 50;
constexpr std::int64_t kMaxSeconds = 86400;
constexpr std::int64_t kMaxIterations = 100000;

struct Setting {
  std::string_view flag;  // without the leading "--"
  std::string_view env;
  std::string_view value_name;  // for the usage text
  std::string_view help;
  bool required;
  // Checks `text` and stores it; throws SidecarConfigError starting with `where`.
  void (*apply)(const std::string& text, const std::string& where, SidecarConfig& config);
  std::string (*show)(const SidecarConfig& config);
};

[[noreturn]] void Fail(const std::string& where, const std::string& what) {
  throw SidecarConfigError(where + ": " + what);
}

std::string Quoted(const std::string& text) { return "\"" + text + "\""; }

std::optional<std::int64_t> ToInt(std::string_view text) {
  std::int64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) {
    return std::nullopt;
  }
  return value;
}

std::int64_t Int64In(const std::string& text, std::int64_t minimum, std::int64_t maximum,
                     const std::string& where) {
  const std::optional<std::int64_t> value = ToInt(text);
  if (!value) {
    Fail(where, Quoted(text) + " is not an integer");
  }
  if (*value < minimum || *value > maximum) {
    Fail(where, std::to_string(*value) + " is not between " + std::to_string(minimum) + " and " +
                    std::to_string(maximum));
  }
  return *value;
}

int IntIn(const std::string& text, int minimum, std::int64_t maximum, const std::string& where) {
  return static_cast<int>(Int64In(text, minimum, maximum, where));
}

std::chrono::seconds Seconds(const std::string& text, const std::string& where) {
  return std::chrono::seconds(Int64In(text, 1, kMaxSeconds, where));
}

// A byte count as the operator writes it (a plain integer), or with a Kubernetes quantity suffix
// for a person typing a flag: 1Mi, 64Mi, 10G.
std::int64_t Bytes(const std::string& text, std::int64_t minimum, std::int64_t maximum,
                   const std::string& where) {
  static const std::pair<std::string_view, std::int64_t> kSuffixes[] = {
      {"Ki", std::int64_t{1} << 10}, {"Mi", std::int64_t{1} << 20}, {"Gi", std::int64_t{1} << 30},
      {"Ti", std::int64_t{1} << 40}, {"k", 1000},                     {"M", 1000000},
      {"G", 1000000000},             {"T", 1000000000000}};
  std::string_view digits = text;
  std::int64_t multiplier = 1;
  for (const auto& [suffix, factor] : kSuffixes) {
    if (digits.size() > suffix.size() && digits.ends_with(suffix)) {
      digits.remove_suffix(suffix.size());
      multiplier = factor;
      break;
    }
  }
  const std::optional<std::int64_t> count = ToInt(digits);
  if (!count || !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    Fail(where, Quoted(text) + " is not a byte count (an integer, optionally with Ki, Mi, Gi, Ti, "
                               "k, M, G or T)");
  }
  if (*count > std::numeric_limits<std::int64_t>::max() / multiplier ||
      *count * multiplier < minimum || *count * multiplier > maximum) {
    Fail(where, Quoted(text) + " is not between " + std::to_string(minimum) + " and " +
                    std::to_string(maximum) + " bytes");
  }
  return *count * multiplier;
}

bool Bool(const std::string& text, const std::string& where) {
  if (text == "true") {
    return true;
  }
  if (text == "false") {
    return false;
  }
  Fail(where, Quoted(text) + " is not true or false");
}

bool HasSpaceOrControl(std::string_view text) {
  return std::any_of(text.begin(), text.end(),
                     [](char c) { return static_cast<unsigned char>(c) <= ' ' || c == 0x7f; });
}

std::string Word(const std::string& text, std::string_view what, const std::string& where) {
  if (text.empty() || text.size() > 253 || HasSpaceOrControl(text)) {
    Fail(where, Quoted(text) + " is not " + std::string(what));
  }
  return text;
}

// A DNS-1123 label, as Kubernetes requires of a namespace.
std::string Namespace(const std::string& text, const std::string& where) {
  const bool valid =
      !text.empty() && text.size() <= 63 && text.front() != '-' && text.back() != '-' &&
      std::all_of(text.begin(), text.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
      });
  if (!valid) {
    Fail(where, Quoted(text) + " is not a namespace name (lowercase letters, digits and '-', at "
                               "most 63)");
  }
  return text;
}

// A host name or IP literal; an IPv6 literal may come in brackets, which are dropped.
std::string Host(const std::string& text, const std::string& where) {
  std::string host = text;
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  const bool valid = !host.empty() && host.size() <= 253 && !HasSpaceOrControl(host) &&
                     std::none_of(host.begin(), host.end(),
                                  [](char c) { return c == '/' || c == '[' || c == ']'; });
  if (!valid) {
    Fail(where, Quoted(text) + " is not a host name or IP address");
  }
  return host;
}

std::string IpAddress(const std::string& text, const std::string& where) {
  unsigned char buffer[sizeof(in6_addr)];
  if (::inet_pton(AF_INET, text.c_str(), buffer) != 1 &&
      ::inet_pton(AF_INET6, text.c_str(), buffer) != 1) {
    Fail(where, Quoted(text) + " is not an IP address");
  }
  return text;
}

std::string Path(const std::string& text, const std::string& where) {
  if (text.empty() || text.find('\0') != std::string::npos) {
    Fail(where, Quoted(text) + " is not a path");
  }
  return text;
}

Backend ParseBackend(const std::string& text, const std::string& where) {
  for (const Backend backend : {Backend::kAuto, Backend::kGloo, Backend::kNccl}) {
    if (text == BackendName(backend)) {
      return backend;
    }
  }
  Fail(where, Quoted(text) + " is not one of auto, gloo, nccl");
}

Mode ParseMode(const std::string& text, const std::string& where) {
  for (const Mode mode : {Mode::kRun, Mode::kPreflight, Mode::kMonitor, Mode::kPairwise,
                          Mode::kSidecar, Mode::kPodPreflight}) {
    if (text == ModeName(mode)) {
      return mode;
    }
  }
  Fail(where, Quoted(text) + " is not one of run, preflight, monitor, pairwise, sidecar, pod-preflight");
}

PreflightScope ParsePreflightScope(const std::string& text, const std::string& where) {
  for (const PreflightScope scope : {PreflightScope::kJob, PreflightScope::kPod}) {
    if (text == PreflightScopeName(scope)) {
      return scope;
    }
  }
  Fail(where, Quoted(text) + " is not one of Job, Pod");
}

std::string ShowBool(bool value) { return value ? "true" : "false"; }

const std::vector<Setting>& Settings() {
  using C = SidecarConfig;
  using S = const std::string&;
  static const std::vector<Setting> settings = {
      {"job-name", cenv::kJobName, "NAME", "the TrainingJob's name", true,
       [](S text, S where, C& c) { c.job_name = Word(text, "a job name", where); },
       [](const C& c) { return c.job_name; }},
      {"job-namespace", cenv::kJobNamespace, "NS", "the TrainingJob's namespace", true,
       [](S text, S where, C& c) { c.job_namespace = Namespace(text, where); },
       [](const C& c) { return c.job_namespace; }},
      {"job-uid", cenv::kJobUid, "UID", "the TrainingJob's uid", false,
       [](S text, S where, C& c) { c.job_uid = Word(text, "a uid", where); },
       [](const C& c) { return c.job_uid; }},
      {"rank", cenv::kSidecarRank, "N", "this replica's rank, below the replica count", true,
       [](S text, S where, C& c) { c.rank = IntIn(text, 0, kReplicaLimit - 1, where); },
       [](const C&) { return std::string(); }},
      {"replicas", cenv::kReplicas, "N", "replicas in the job (the sidecars' world size)", true,
       [](S text, S where, C& c) { c.replicas = IntIn(text, 1, kReplicaLimit, where); },
       [](const C&) { return std::string(); }},
      {"max-replicas", cenv::kMaxReplicas, "N",
       "an elastic job's most replicas, at least the replica count; rank 0's store accepts ranks "
       "below it (default: the replica count, a rigid job)", false,
       [](S text, S where, C& c) {
         c.max_replicas = IntIn(text, 1, kReplicaLimit, where);
         c.elastic = true;
       },
       [](const C&) { return std::string(); }},
      {"preflight-scope", cenv::kPreflightScope, "Job|Pod",
       "Job: every Pod of the attempt meets in one world; Pod: this Pod's own ranks, and a round "
       "trip to rank 0's store (a Pod joining an elastic job's running world)", false,
       [](S text, S where, C& c) { c.preflight_scope = ParsePreflightScope(text, where); },
       [](const C& c) { return std::string(PreflightScopeName(c.preflight_scope)); }},
      {"attempt", cenv::kAttempt, "N",
       "the gang attempt this Pod was created for; rank 0's store must serve it", false,
       [](S text, S where, C& c) {
         c.attempt = IntIn(text, 0, std::numeric_limits<int>::max(), where);
       },
       [](const C& c) { return std::to_string(c.attempt); }},
      {"gpus-per-replica", cenv::kGpusPerReplica, "N", "GPUs each replica holds", false,
       [](S text, S where, C& c) {
         c.gpus_per_replica = IntIn(text, 0, kMaxGpusPerReplica, where);
       },
       [](const C& c) { return std::to_string(c.gpus_per_replica); }},
      {"local-ranks", env::kLocalRanks, "N",
       "ranks this sidecar probes with, one thread each; 0: one per GPU with nccl, 1 with gloo",
       false,
       [](S text, S where, C& c) { c.local_ranks = IntIn(text, 0, kMaxGpusPerReplica, where); },
       [](const C& c) { return std::to_string(c.local_ranks); }},
      {"rendezvous-addr", cenv::kRendezvousAddr, "HOST", "rank 0's address for rendezvous", true,
       [](S text, S where, C& c) { c.rendezvous_addr = Host(text, where); },
       [](const C& c) { return c.rendezvous_addr; }},
      {"rendezvous-port", cenv::kRendezvousPort, "PORT", "the rendezvous store's port", true,
       [](S text, S where, C& c) { c.rendezvous_port = IntIn(text, 1, 65535, where); },
       [](const C&) { return std::string(); }},
      {"trainer-store-port", cenv::kTrainerStorePort, "PORT",
       "rank 0 serves the trainers' store (PyTorch's TCPStore protocol) here; unset: not served",
       false,
       [](S text, S where, C& c) { c.trainer_store_port = IntIn(text, 1, 65535, where); },
       [](const C&) { return std::string(); }},
      {"rendezvous-timeout-seconds", env::kRendezvousTimeoutSeconds, "SECONDS",
       "how long to wait for every rank to join", false,
       [](S text, S where, C& c) { c.rendezvous_timeout = Seconds(text, where); },
       [](const C& c) { return std::to_string(c.rendezvous_timeout.count()); }},
      {"metrics-port", cenv::kMetricsPort, "PORT",
       "port of /metrics, /healthz, /readyz and /summary (0 picks a free one)", true,
       [](S text, S where, C& c) { c.metrics_port = IntIn(text, 0, 65535, where); },
       [](const C&) { return std::string(); }},
      {"metrics-bind-address", env::kMetricsBindAddress, "HOST",
       "address the endpoints listen on; default every address", false,
       [](S text, S where, C& c) { c.metrics_bind_address = Host(text, where); },
       [](const C& c) { return c.metrics_bind_address; }},
      {"backend", cenv::kBackend, "gloo|nccl|auto", "collective backend; auto: nccl with GPUs",
       false, [](S text, S where, C& c) { c.backend = ParseBackend(text, where); },
       [](const C& c) { return std::string(BackendName(c.backend)); }},
      {"mode", env::kMode, "run|preflight|monitor|pairwise|sidecar|pod-preflight",
       "run: preflight then monitor; pairwise: measure this rank's edges once; sidecar and "
       "pod-preflight: the two halves of an operator-made Pod", false,
       [](S text, S where, C& c) { c.mode = ParseMode(text, where); },
       [](const C& c) { return std::string(ModeName(c.mode)); }},
      {"preflight-enabled", cenv::kPreflightEnabled, "true|false",
       "sweep the fabric before the trainers start", false,
       [](S text, S where, C& c) { c.preflight_enabled = Bool(text, where); },
       [](const C& c) { return ShowBool(c.preflight_enabled); }},
      {"preflight-min-bytes", cenv::kPreflightMinBytes, "BYTES", "smallest message of the sweep",
       false,
       [](S text, S where, C& c) {
         c.preflight_min_bytes = Bytes(text, kMinMessageBytes, kMaxPreflightBytes, where);
       },
       [](const C& c) { return std::to_string(c.preflight_min_bytes); }},
      {"preflight-max-bytes", cenv::kPreflightMaxBytes, "BYTES", "largest message of the sweep",
       false,
       [](S text, S where, C& c) {
         c.preflight_max_bytes = Bytes(text, kMinMessageBytes, kMaxPreflightBytes, where);
       },
       [](const C& c) { return std::to_string(c.preflight_max_bytes); }},
      {"preflight-step-factor", cenv::kPreflightStepFactor, "N",
       "each message of the sweep is this many times the last", false,
       [](S text, S where, C& c) { c.preflight_step_factor = IntIn(text, 2, 1024, where); },
       [](const C& c) { return std::to_string(c.preflight_step_factor); }},
      {"preflight-min-bus-bandwidth", cenv::kPreflightMinBusBandwidth, "BYTES_PER_SECOND",
       "all-reduce bus bandwidth floor at the largest size; 0: no floor", false,
       [](S text, S where, C& c) {
         c.preflight_min_bus_bandwidth = Bytes(text, 0, kMaxBusBandwidth, where);
       },
       [](const C& c) { return std::to_string(c.preflight_min_bus_bandwidth); }},
      {"preflight-warmup-iterations", env::kPreflightWarmupIterations, "N",
       "untimed calls before each size", false,
       [](S text, S where, C& c) {
         c.preflight_warmup_iterations = IntIn(text, 0, kMaxIterations, where);
       },
       [](const C& c) { return std::to_string(c.preflight_warmup_iterations); }},
      {"preflight-iterations", env::kPreflightIterations, "N", "timed calls at each size", false,
       [](S text, S where, C& c) {
         c.preflight_iterations = IntIn(text, 1, kMaxIterations, where);
       },
       [](const C& c) { return std::to_string(c.preflight_iterations); }},
      {"preflight-timeout-seconds", cenv::kPreflightTimeoutSeconds, "SECONDS",
       "the whole preflight's time limit", false,
       [](S text, S where, C& c) { c.preflight_timeout = Seconds(text, where); },
       [](const C& c) { return std::to_string(c.preflight_timeout.count()); }},
      {"monitor-enabled", cenv::kMonitorEnabled, "true|false",
       "probe the fabric periodically while training runs", false,
       [](S text, S where, C& c) { c.monitor_enabled = Bool(text, where); },
       [](const C& c) { return ShowBool(c.monitor_enabled); }},
      {"monitor-interval-seconds", cenv::kMonitorIntervalSeconds, "SECONDS",
       "time between monitor probes", false,
       [](S text, S where, C& c) { c.monitor_interval = Seconds(text, where); },
       [](const C& c) { return std::to_string(c.monitor_interval.count()); }},
      {"monitor-message-bytes", cenv::kMonitorMessageBytes, "BYTES", "message size of a probe",
       false,
       [](S text, S where, C& c) {
         c.monitor_message_bytes = Bytes(text, kMinMessageBytes, kMaxMonitorBytes, where);
       },
       [](const C& c) { return std::to_string(c.monitor_message_bytes); }},
      {"token-file", cenv::kTokenFile, "PATH", "the job token (at most 4096 bytes)", false,
       [](S text, S where, C& c) { c.token_file = Path(text, where); },
       [](const C& c) { return c.token_file; }},
      {"run-dir", cenv::kRunDir, "DIR", "directory shared with the trainers", false,
       [](S text, S where, C& c) { c.run_dir = Path(text, where); },
       [](const C& c) { return c.run_dir; }},
      {"contract-file", cenv::kContractFile, "PATH",
       "where the resolved contract is written; default RUN_DIR/contract.json", false,
       [](S text, S where, C& c) { c.contract_file = Path(text, where); },
       [](const C&) { return std::string(); }},
      {"telemetry-enabled", cenv::kTelemetryEnabled, "true|false",
       "copy the NCCL profiler plugin for the trainers and take its snapshots; only \"false\" "
       "turns it off", false,
       [](S text, S, C& c) { c.telemetry_enabled = text != "false"; },
       [](const C& c) { return ShowBool(c.telemetry_enabled); }},
      {"profiler-socket", cenv::kProfilerSocket, "PATH",
       "Unix socket the trainers' profiler plugin sends to; default RUN_DIR/profiler.sock", false,
       [](S text, S where, C& c) { c.profiler_socket = Path(text, where); },
       [](const C&) { return std::string(); }},
      {"profiler-plugin-dir", cenv::kProfilerPluginDir, "DIR",
       "where the profiler plugin is copied for the trainers", false,
       [](S text, S where, C& c) { c.profiler_plugin_dir = Path(text, where); },
       [](const C& c) { return c.profiler_plugin_dir; }},
      {"profiler-interval-ms", cenv::kProfilerIntervalMs, "MS",
       "the plugin's snapshot interval; the sidecar reports its Pod's collectives as often", false,
       [](S text, S where, C& c) {
         c.profiler_interval = std::chrono::milliseconds(IntIn(text, 10, 600000, where));
       },
       [](const C& c) { return std::to_string(c.profiler_interval.count()); }},
      {"stall-seconds", cenv::kStallSeconds, "SECONDS",
       "rank 0 names a collective some ranks never entered once the others waited this long "
       "(the CRD asks at least 10; tests go lower)",
       false,
       [](S text, S where, C& c) { c.stall_seconds = std::chrono::seconds(IntIn(text, 1, 86400, where)); },
       [](const C& c) { return std::to_string(c.stall_seconds.count()); }},
      {"pod-name", cenv::kPodName, "NAME", "this Pod's name", false,
       [](S text, S where, C& c) { c.pod_name = Word(text, "a Pod name", where); },
       [](const C& c) { return c.pod_name; }},
      {"pod-ip", cenv::kPodIp, "IP", "this Pod's IP address", false,
       [](S text, S where, C& c) { c.pod_ip = IpAddress(text, where); },
       [](const C& c) { return c.pod_ip; }},
      {"node-name", cenv::kNodeName, "NAME", "the node this Pod runs on", false,
       [](S text, S where, C& c) { c.node_name = Word(text, "a node name", where); },
       [](const C& c) { return c.node_name; }},
      {"rdma-resources", cenv::kRdmaResources, "NAME,...",
       "RDMA resources this container was given; NCCL over sockets is then reported", false,
       [](S text, S where, C& c) {
         if (text.size() > 1024) {
           Fail(where, "longer than 1024 characters");
         }
         c.rdma_resources = text;
       },
       [](const C& c) { return c.rdma_resources; }},
  };
  return settings;
}

const Setting* FindFlag(std::string_view flag) {
  for (const Setting& setting : Settings()) {
    if (setting.flag == flag) {
      return &setting;
    }
  }
  return nullptr;
}

// The flags' values by setting; a repeated flag keeps its last value.
std::map<const Setting*, std::string> SplitArgs(const std::vector<std::string>& args) {
  std::map<const Setting*, std::string> flags;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg.size() <= 2 || arg.compare(0, 2, "--") != 0) {
      throw SidecarConfigError("unexpected argument \"" + arg + "\" (flags start with --)");
    }
    const std::size_t equals = arg.find('=');
    const std::string name =
        arg.substr(2, equals == std::string::npos ? std::string::npos : equals - 2);
    const Setting* setting = FindFlag(name);
    if (setting == nullptr) {
      throw SidecarConfigError("unknown flag --" + name + " (see --help)");
    }
    if (equals != std::string::npos) {
      flags[setting] = arg.substr(equals + 1);
    } else if (i + 1 < args.size() && args[i + 1].compare(0, 2, "--") != 0) {
      flags[setting] = args[++i];
    } else {
      throw SidecarConfigError("--" + name + ": missing value");
    }
  }
  return flags;
}

std::string ErrnoText(int error) { return std::strerror(error); }

// The token file's content less one trailing newline; throws naming `where` and the path.
std::string ReadToken(const std::string& path, const std::string& where) {
  const std::string prefix = where + ": " + path + ": ";
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    throw SidecarConfigError(prefix + "cannot read: " + ErrnoText(errno));
  }
  std::string token;
  char buffer[1024];
  while (token.size() <= kMaxTokenBytes) {
    const ssize_t got = ::read(fd, buffer, sizeof(buffer));
    if (got < 0 && errno == EINTR) {
      continue;
    }
    if (got < 0) {
      const int error = errno;
      ::close(fd);
      throw SidecarConfigError(prefix + "cannot read: " + ErrnoText(error));
    }
    if (got == 0) {
      break;
    }
    token.append(buffer, static_cast<std::size_t>(got));
  }
  ::close(fd);
  if (token.size() > kMaxTokenBytes) {
    throw SidecarConfigError(prefix + "is larger than " + std::to_string(kMaxTokenBytes) +
                             " bytes");
  }
  if (!token.empty() && token.back() == '\n') {
    token.pop_back();
  }
  if (token.empty()) {
    throw SidecarConfigError(prefix + "is empty");
  }
  return token;
}

}  // namespace

std::string_view BackendName(Backend backend) {
  switch (backend) {
    case Backend::kAuto: return "auto";
    case Backend::kGloo: return "gloo";
    case Backend::kNccl: return "nccl";
  }
  return "auto";
}

std::string_view PreflightScopeName(PreflightScope scope) {
  return scope == PreflightScope::kPod ? "Pod" : "Job";
}

std::string_view ModeName(Mode mode) {
  switch (mode) {
    case Mode::kRun: return "run";
    case Mode::kPreflight: return "preflight";
    case Mode::kMonitor: return "monitor";
    case Mode::kPairwise: return "pairwise";
    case Mode::kSidecar: return contract::mode::kSidecar;
    case Mode::kPodPreflight: return contract::mode::kPodPreflight;
  }
  return "run";
}

EnvLookup ProcessEnvironment() {
  return [](std::string_view name) -> std::optional<std::string> {
    const char* value = std::getenv(std::string(name).c_str());
    if (value == nullptr) {
      return std::nullopt;
    }
    return std::string(value);
  };
}

EnvLookup MapEnvironment(std::map<std::string, std::string> values) {
  return [values = std::move(values)](std::string_view name) -> std::optional<std::string> {
    const auto it = values.find(std::string(name));
    if (it == values.end()) {
      return std::nullopt;
    }
    return it->second;
  };
}

SidecarConfig ParseSidecarConfig(const std::vector<std::string>& args, const EnvLookup& lookup) {
  const std::map<const Setting*, std::string> flags = SplitArgs(args);
  SidecarConfig config;
  // Where each setting's value came from, for errors that involve two settings.
  std::map<std::string_view, std::string> sources;
  bool contract_file_given = false;
  bool profiler_socket_given = false;
  bool rendezvous_timeout_given = false;
  for (const Setting& setting : Settings()) {
    std::string where;
    std::string text;
    if (const auto flag = flags.find(&setting); flag != flags.end()) {
      where = "--" + std::string(setting.flag);
      text = flag->second;
    } else if (std::optional<std::string> value = lookup(setting.env); value && !value->empty()) {
      where = std::string(setting.env);
      text = std::move(*value);
    } else {
      if (setting.required) {
        throw SidecarConfigError(std::string(setting.env) + ": not set (the operator injects it; "
                                 "or pass --" + std::string(setting.flag) + ")");
      }
      sources[setting.flag] = std::string(setting.env);
      continue;
    }
    setting.apply(text, where, config);
    sources[setting.flag] = where;
    contract_file_given = contract_file_given || setting.flag == "contract-file";
    profiler_socket_given = profiler_socket_given || setting.flag == "profiler-socket";
    rendezvous_timeout_given = rendezvous_timeout_given || setting.flag == "rendezvous-timeout-seconds";
  }
  if (!contract_file_given) {
    config.contract_file = config.run_dir + "/contract.json";
  }
  if (!profiler_socket_given) {
    config.profiler_socket = config.run_dir + "/profiler.sock";
  }
  // The CRD's preflight.timeoutSeconds is the deadline for rendezvous too, and the operator
  // injects only that one.
  if (!rendezvous_timeout_given) {
    config.rendezvous_timeout = config.preflight_timeout;
  }

  if (config.rank >= config.replicas) {
    Fail(sources["rank"], std::to_string(config.rank) + " is not below " + sources["replicas"] +
                              " (" + std::to_string(config.replicas) + ")");
  }
  if (!config.elastic) {
    config.max_replicas = config.replicas;
  } else if (config.max_replicas < config.replicas) {
    Fail(sources["max-replicas"], std::to_string(config.max_replicas) + " is below " +
                                      sources["replicas"] + " (" +
                                      std::to_string(config.replicas) + ")");
  }
  if (config.preflight_scope == PreflightScope::kPod) {
    // Rank 0's failure restarts the gang, so rank 0 always starts a world: scope Job.
    if (config.rank == 0) {
      Fail(sources["preflight-scope"], "Pod, but " + sources["rank"] +
                                           " is 0: rank 0 serves the store and always runs the "
                                           "Job-scope preflight");
    }
    if (!config.elastic) {
      Fail(sources["preflight-scope"], "Pod, but " + sources["max-replicas"] +
                                           " is not set: only an elastic job's Pods join a "
                                           "running world");
    }
    if (config.mode != Mode::kPodPreflight && config.mode != Mode::kSidecar) {
      Fail(sources["preflight-scope"],
           "Pod, but " + sources["mode"] + " is " + std::string(ModeName(config.mode)) +
               ": only an operator-made Pod's containers (sidecar, pod-preflight) join a running "
               "world");
    }
  }
  if (config.trainer_store_port != 0 && config.trainer_store_port == config.rendezvous_port) {
    Fail(sources["trainer-store-port"], std::to_string(config.trainer_store_port) + " is " +
                                            sources["rendezvous-port"] +
                                            " too: the two stores need ports of their own");
  }
  if (config.trainer_store_port != 0 && config.trainer_store_port == config.metrics_port) {
    Fail(sources["trainer-store-port"], std::to_string(config.trainer_store_port) + " is " +
                                            sources["metrics-port"] + " too");
  }
  if (config.preflight_min_bytes > config.preflight_max_bytes) {
    Fail(sources["preflight-max-bytes"],
         std::to_string(config.preflight_max_bytes) + " is below " +
             sources["preflight-min-bytes"] + " (" + std::to_string(config.preflight_min_bytes) +
             ")");
  }
  if (config.backend == Backend::kNccl && config.gpus_per_replica == 0) {
    Fail(sources["backend"], "nccl needs GPUs, but " + sources["gpus-per-replica"] + " is 0");
  }
  // With nccl, local rank l drives device l of the replica's GPUs.
  if (config.backend != Backend::kGloo && config.gpus_per_replica > 0 &&
      config.local_ranks > config.gpus_per_replica) {
    Fail(sources["local-ranks"], std::to_string(config.local_ranks) + " exceeds " +
                                     sources["gpus-per-replica"] + " (" +
                                     std::to_string(config.gpus_per_replica) + ")");
  }
  if (config.mode == Mode::kPreflight && !config.preflight_enabled) {
    Fail(sources["mode"], "preflight, but " + sources["preflight-enabled"] + " is false");
  }
  if (config.mode == Mode::kMonitor && !config.monitor_enabled) {
    Fail(sources["mode"], "monitor, but " + sources["monitor-enabled"] + " is false");
  }
  config.token = ReadToken(config.token_file, sources["token-file"]);
  return config;
}

bool HelpRequested(const std::vector<std::string>& args) {
  return std::any_of(args.begin(), args.end(),
                     [](const std::string& arg) { return arg == "--help" || arg == "-h"; });
}

std::string SidecarConfigUsage() {
  const SidecarConfig defaults;
  std::ostringstream out;
  out << "Flags win over the environment variable named after each; the operator injects the\n"
         "variables. Each flag is --flag VALUE or --flag=VALUE.\n";
  for (const Setting& setting : Settings()) {
    std::string left = "  --" + std::string(setting.flag) + " " + std::string(setting.value_name);
    left.resize(std::max<std::size_t>(left.size() + 1, 48), ' ');
    out << left << setting.env << "\n" << std::string(6, ' ') << setting.help;
    if (setting.required) {
      out << " (required)";
    } else if (const std::string shown = setting.show(defaults); !shown.empty()) {
      out << " (default " << shown << ")";
    }
    out << "\n";
  }
  out << "  --help\n      this text\n";
  return out.str();
}

}  // namespace ringleader::sidecar
