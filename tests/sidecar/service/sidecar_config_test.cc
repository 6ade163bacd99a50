// The sidecar's settings: the operator's environment, flags over it, the token file, and errors
// that name the variable or flag holding the bad value.
#include "sidecar/service/sidecar_config.h"

#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace ringleader::sidecar {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;
using Env = std::map<std::string, std::string>;

// Writes `text` to a fresh file under the test's temp dir and returns its path.
// This process's own scratch directory: ctest runs each test as a process, several at once.
// Removed when the process exits.
struct Scratch {
  std::string path = ::testing::TempDir() + "/sidecar-config-test-" + std::to_string(::getpid());
  Scratch() { std::filesystem::create_directories(path); }
  ~Scratch() {
    std::error_code ignored;
    std::filesystem::remove_all(path, ignored);
  }
};

const std::string& ScratchDir() {
  static const Scratch scratch;
  return scratch.path;
}

std::string WriteFile(const std::string& name, const std::string& text) {
  const std::string path = ScratchDir() + "/" + name;
  std::ofstream out(path, std::ios::trunc | std::ios::binary);
  out << text;
  return path;
}

// What the operator injects for rank 1 of 4 (pod_builder.cc), with a readable token file.
Env OperatorEnv() {
  return {
      {"RINGLEADER_JOB_NAME", "llama"},
      {"RINGLEADER_JOB_NAMESPACE", "team-a"},
      {"RINGLEADER_JOB_UID", "6f1c-42"},
      {"RINGLEADER_RANK", "1"},
      {"RINGLEADER_REPLICAS", "4"},
      {"RINGLEADER_ATTEMPT", "2"},
      {"RINGLEADER_GPUS_PER_REPLICA", "8"},
      {"RINGLEADER_RENDEZVOUS_ADDR", "llama-0.llama.team-a.svc"},
      {"RINGLEADER_RENDEZVOUS_PORT", "61001"},
      {"RINGLEADER_METRICS_PORT", "61002"},
      {"RINGLEADER_BACKEND", "nccl"},
      {"RINGLEADER_PREFLIGHT_ENABLED", "true"},
      {"RINGLEADER_PREFLIGHT_MIN_BYTES", "1048576"},
      {"RINGLEADER_PREFLIGHT_MAX_BYTES", "67108864"},
      {"RINGLEADER_PREFLIGHT_STEP_FACTOR", "2"},
      {"RINGLEADER_PREFLIGHT_MIN_BUS_BANDWIDTH", "0"},
      {"RINGLEADER_PREFLIGHT_TIMEOUT_SECONDS", "300"},
      {"RINGLEADER_MONITOR_ENABLED", "true"},
      {"RINGLEADER_MONITOR_INTERVAL_SECONDS", "60"},
      {"RINGLEADER_MONITOR_MESSAGE_BYTES", "16777216"},
      {"RINGLEADER_TOKEN_FILE", WriteFile("token", "s3cret\n")},
      {"RINGLEADER_RUN_DIR", "/var/run/ringleader/run"},
      {"RINGLEADER_POD_NAME", "llama-1"},
      {"RINGLEADER_POD_IP", "10.0.3.7"},
      {"RINGLEADER_NODE_NAME", "gpu-node-12"},
  };
}

SidecarConfig Parse(const Env& env, const std::vector<std::string>& args = {}) {
  return ParseSidecarConfig(args, MapEnvironment(env));
}

// The error ParseSidecarConfig throws, or "" when it accepts the input.
std::string ErrorFor(const Env& env, const std::vector<std::string>& args = {}) {
  try {
    Parse(env, args);
  } catch (const SidecarConfigError& error) {
    return error.what();
  }
  return "";
}

Env With(Env env, const std::string& name, const std::string& value) {
  env[name] = value;
  return env;
}

Env Without(Env env, const std::string& name) {
  env.erase(name);
  return env;
}

TEST(SidecarConfigTest, ReadsWhatTheOperatorInjects) {
  const SidecarConfig config = Parse(OperatorEnv());
  EXPECT_EQ(config.job_name, "llama");
  EXPECT_EQ(config.job_namespace, "team-a");
  EXPECT_EQ(config.job_uid, "6f1c-42");
  EXPECT_EQ(config.rank, 1);
  EXPECT_EQ(config.replicas, 4);
  EXPECT_EQ(config.world_size(), 4);
  EXPECT_EQ(config.attempt, 2);
  EXPECT_EQ(config.gpus_per_replica, 8);
  EXPECT_EQ(config.rendezvous_addr, "llama-0.llama.team-a.svc");
  EXPECT_EQ(config.rendezvous_port, 61001);
  EXPECT_EQ(config.metrics_port, 61002);
  EXPECT_EQ(config.metrics_bind_address, "");
  EXPECT_EQ(config.backend, Backend::kNccl);
  EXPECT_EQ(config.mode, Mode::kRun);
  EXPECT_TRUE(config.preflight_enabled);
  EXPECT_EQ(config.preflight_min_bytes, 1 << 20);
  EXPECT_EQ(config.preflight_max_bytes, 64 << 20);
  EXPECT_EQ(config.preflight_step_factor, 2);
  EXPECT_EQ(config.preflight_min_bus_bandwidth, 0);
  EXPECT_EQ(config.preflight_warmup_iterations, 5);
  EXPECT_EQ(config.preflight_iterations, 20);
  EXPECT_EQ(config.preflight_timeout, std::chrono::seconds(300));
  EXPECT_EQ(config.rendezvous_timeout, std::chrono::seconds(300));
  EXPECT_TRUE(config.monitor_enabled);
  EXPECT_EQ(config.monitor_interval, std::chrono::seconds(60));
  EXPECT_EQ(config.monitor_message_bytes, 16 << 20);
  EXPECT_EQ(config.token_file, ScratchDir() + "/token");
  EXPECT_EQ(config.token, "s3cret");
  EXPECT_EQ(config.run_dir, "/var/run/ringleader/run");
  EXPECT_EQ(config.contract_file, "/var/run/ringleader/run/contract.json");
  EXPECT_EQ(config.pod_name, "llama-1");
  EXPECT_EQ(config.pod_ip, "10.0.3.7");
  EXPECT_EQ(config.node_name, "gpu-node-12");
}

TEST(SidecarConfigTest, ReadsTheSidecarOnlyVariables) {
  Env env = OperatorEnv();
  env["RINGLEADER_MODE"] = "pairwise";
  env["RINGLEADER_METRICS_BIND_ADDRESS"] = "10.0.3.7";
  env["RINGLEADER_PREFLIGHT_WARMUP_ITERATIONS"] = "0";
  env["RINGLEADER_PREFLIGHT_ITERATIONS"] = "50";
  env["RINGLEADER_RENDEZVOUS_TIMEOUT_SECONDS"] = "900";
  env["RINGLEADER_CONTRACT_FILE"] = "/tmp/c.json";
  const SidecarConfig config = Parse(env);
  EXPECT_EQ(config.mode, Mode::kPairwise);
  EXPECT_EQ(config.metrics_bind_address, "10.0.3.7");
  EXPECT_EQ(config.preflight_warmup_iterations, 0);
  EXPECT_EQ(config.preflight_iterations, 50);
  EXPECT_EQ(config.rendezvous_timeout, std::chrono::seconds(900));
  EXPECT_EQ(config.contract_file, "/tmp/c.json");
}

// The CRD documents preflight.timeoutSeconds as the deadline for rendezvous too; the operator
// injects only that variable, so a job's rendezvous must not wait the 300 s default instead.
TEST(SidecarConfigTest, RendezvousTimeoutDefaultsToThePreflightTimeout) {
  Env env = OperatorEnv();
  env["RINGLEADER_PREFLIGHT_TIMEOUT_SECONDS"] = "15";
  EXPECT_EQ(Parse(env).rendezvous_timeout, std::chrono::seconds(15));
  env["RINGLEADER_RENDEZVOUS_TIMEOUT_SECONDS"] = "40";
  EXPECT_EQ(Parse(env).rendezvous_timeout, std::chrono::seconds(40));
}

TEST(SidecarConfigTest, OnlyTheRequiredVariablesGiveTheDefaults) {
  Env env;
  for (const char* name :
       {"RINGLEADER_JOB_NAME", "RINGLEADER_JOB_NAMESPACE", "RINGLEADER_RANK", "RINGLEADER_REPLICAS",
        "RINGLEADER_RENDEZVOUS_ADDR", "RINGLEADER_RENDEZVOUS_PORT", "RINGLEADER_METRICS_PORT"}) {
    env[name] = OperatorEnv()[name];
  }
  // The default token path does not exist here; point at a real one.
  const SidecarConfig config = Parse(env, {"--token-file", OperatorEnv()["RINGLEADER_TOKEN_FILE"]});
  EXPECT_EQ(config.backend, Backend::kAuto);
  EXPECT_EQ(config.gpus_per_replica, 0);
  EXPECT_EQ(config.attempt, 0);
  EXPECT_EQ(config.job_uid, "");
  EXPECT_EQ(config.run_dir, "/var/run/ringleader/run");
  EXPECT_EQ(config.contract_file, "/var/run/ringleader/run/contract.json");
  EXPECT_EQ(config.pod_ip, "");
  EXPECT_EQ(SidecarConfig().token_file, "/var/run/ringleader/token/token");
}

TEST(SidecarConfigTest, FlagsWinOverTheEnvironment) {
  const std::string other_token = WriteFile("other-token", "flag-token");
  const SidecarConfig config = Parse(
      OperatorEnv(),
      {"--job-name", "gpt", "--job-namespace=team-b", "--job-uid", "u2", "--rank", "2",
       "--replicas", "3", "--gpus-per-replica", "0", "--rendezvous-addr", "[fd00::1]",
       "--rendezvous-port", "7000", "--rendezvous-timeout-seconds", "30", "--metrics-port", "0",
       "--metrics-bind-address", "127.0.0.1", "--backend", "gloo", "--mode", "preflight",
       "--preflight-enabled", "true", "--preflight-min-bytes", "4Ki", "--preflight-max-bytes",
       "1Mi", "--preflight-step-factor", "4", "--preflight-min-bus-bandwidth", "10G",
       "--preflight-warmup-iterations", "1", "--preflight-iterations", "3",
       "--preflight-timeout-seconds", "60", "--monitor-enabled", "false",
       "--monitor-interval-seconds", "5", "--monitor-message-bytes", "4096", "--token-file",
       other_token, "--run-dir", "/run/rl", "--contract-file", "/run/rl/c.json", "--pod-name",
       "gpt-2", "--pod-ip", "fd00::7", "--node-name", "n2"});
  EXPECT_EQ(config.job_name, "gpt");
  EXPECT_EQ(config.job_namespace, "team-b");
  EXPECT_EQ(config.job_uid, "u2");
  EXPECT_EQ(config.rank, 2);
  EXPECT_EQ(config.replicas, 3);
  EXPECT_EQ(config.gpus_per_replica, 0);
  EXPECT_EQ(config.rendezvous_addr, "fd00::1");
  EXPECT_EQ(config.rendezvous_port, 7000);
  EXPECT_EQ(config.rendezvous_timeout, std::chrono::seconds(30));
  EXPECT_EQ(config.metrics_port, 0);
  EXPECT_EQ(config.metrics_bind_address, "127.0.0.1");
  EXPECT_EQ(config.backend, Backend::kGloo);
  EXPECT_EQ(config.mode, Mode::kPreflight);
  EXPECT_EQ(config.preflight_min_bytes, 4096);
  EXPECT_EQ(config.preflight_max_bytes, 1 << 20);
  EXPECT_EQ(config.preflight_step_factor, 4);
  EXPECT_EQ(config.preflight_min_bus_bandwidth, 10'000'000'000);
  EXPECT_EQ(config.preflight_warmup_iterations, 1);
  EXPECT_EQ(config.preflight_iterations, 3);
  EXPECT_EQ(config.preflight_timeout, std::chrono::seconds(60));
  EXPECT_FALSE(config.monitor_enabled);
  EXPECT_EQ(config.monitor_interval, std::chrono::seconds(5));
  EXPECT_EQ(config.monitor_message_bytes, 4096);
  EXPECT_EQ(config.token, "flag-token");
  EXPECT_EQ(config.run_dir, "/run/rl");
  EXPECT_EQ(config.contract_file, "/run/rl/c.json");
  EXPECT_EQ(config.pod_name, "gpt-2");
  EXPECT_EQ(config.pod_ip, "fd00::7");
  EXPECT_EQ(config.node_name, "n2");
}

TEST(SidecarConfigTest, ARepeatedFlagKeepsItsLastValue) {
  EXPECT_EQ(Parse(OperatorEnv(), {"--rank", "0", "--rank=3"}).rank, 3);
}

TEST(SidecarConfigTest, AcceptsTheBandwidthFloorAsTheOperatorWritesIt) {
  // pod_builder.cc writes std::to_string of the quantity's bytes per second.
  const SidecarConfig config =
      Parse(With(OperatorEnv(), "RINGLEADER_PREFLIGHT_MIN_BUS_BANDWIDTH", "12500000000"));
  EXPECT_EQ(config.preflight_min_bus_bandwidth, 12'500'000'000);
  EXPECT_EQ(Parse(With(OperatorEnv(), "RINGLEADER_PREFLIGHT_MIN_BUS_BANDWIDTH", "1125899906842624"))
                .preflight_min_bus_bandwidth,
            std::int64_t{1} << 50);  // the operator's largest
}

TEST(SidecarConfigTest, TheContractFileFollowsTheRunDirUnlessSet) {
  EXPECT_EQ(Parse(With(OperatorEnv(), "RINGLEADER_RUN_DIR", "/scratch/run")).contract_file,
            "/scratch/run/contract.json");
  EXPECT_EQ(Parse(OperatorEnv(), {"--run-dir", "/x"}).contract_file, "/x/contract.json");
  EXPECT_EQ(Parse(With(OperatorEnv(), "RINGLEADER_CONTRACT_FILE", "/y/c.json"), {"--run-dir", "/x"})
                .contract_file,
            "/y/c.json");
}

TEST(SidecarConfigTest, TheProfilerSettingsDefaultToThePodsPathsAndFollowTheRunDir) {
  const SidecarConfig defaults = Parse(OperatorEnv());
  EXPECT_TRUE(defaults.telemetry_enabled);
  EXPECT_EQ(defaults.profiler_socket, contract::path::kProfilerSocket);
  EXPECT_EQ(defaults.profiler_plugin_dir, contract::path::kProfilerPluginDir);
  EXPECT_EQ(defaults.profiler_interval, std::chrono::milliseconds(5000));
  EXPECT_EQ(Parse(OperatorEnv(), {"--run-dir", "/x"}).profiler_socket, "/x/profiler.sock");
  const SidecarConfig set = Parse(OperatorEnv(), {"--profiler-socket", "/s/p.sock",
                                                  "--profiler-plugin-dir", "/plugins",
                                                  "--profiler-interval-ms", "250"});
  EXPECT_EQ(set.profiler_socket, "/s/p.sock");
  EXPECT_EQ(set.profiler_plugin_dir, "/plugins");
  EXPECT_EQ(set.profiler_interval, std::chrono::milliseconds(250));
}

TEST(SidecarConfigTest, StallSecondsDefaultsTo120AndIsReadFromTheOperatorsVariable) {
  EXPECT_EQ(Parse(OperatorEnv()).stall_seconds, std::chrono::seconds(120));
  EXPECT_EQ(Parse(With(OperatorEnv(), "RINGLEADER_STALL_SECONDS", "10")).stall_seconds,
            std::chrono::seconds(10));
  EXPECT_EQ(Parse(OperatorEnv(), {"--stall-seconds", "86400"}).stall_seconds, std::chrono::seconds(86400));
}

TEST(SidecarConfigTest, TheTrainerStorePortIsReadWhenSetAndCheckedAgainstTheOtherPorts) {
  EXPECT_EQ(Parse(OperatorEnv()).trainer_store_port, 0);  // unset: not served
  EXPECT_EQ(Parse(With(OperatorEnv(), "RINGLEADER_TRAINER_STORE_PORT", "61000")).trainer_store_port,
            61000);
  EXPECT_EQ(Parse(OperatorEnv(), {"--trainer-store-port", "29500"}).trainer_store_port, 29500);
  EXPECT_EQ(ErrorFor(With(OperatorEnv(), "RINGLEADER_TRAINER_STORE_PORT", "0")),
            "RINGLEADER_TRAINER_STORE_PORT: 0 is not between 1 and 65535");
  EXPECT_EQ(ErrorFor(With(OperatorEnv(), "RINGLEADER_TRAINER_STORE_PORT", "61001")),
            "RINGLEADER_TRAINER_STORE_PORT: 61001 is RINGLEADER_RENDEZVOUS_PORT too: the two "
            "stores need ports of their own");
  EXPECT_EQ(ErrorFor(OperatorEnv(), {"--trainer-store-port", "61002"}),
            "--trainer-store-port: 61002 is RINGLEADER_METRICS_PORT too");
}

TEST(SidecarConfigTest, OnlyFalseTurnsTelemetryOffAsTheContractSays) {
  EXPECT_FALSE(Parse(With(OperatorEnv(), "RINGLEADER_TELEMETRY_ENABLED", "false")).telemetry_enabled);
  for (const char* on : {"true", "yes", "1", "False"}) {
    EXPECT_TRUE(Parse(With(OperatorEnv(), "RINGLEADER_TELEMETRY_ENABLED", on)).telemetry_enabled) << on;
  }
}

TEST(SidecarConfigTest, AnEmptyVariableCountsAsUnset) {
  EXPECT_EQ(Parse(With(OperatorEnv(), "RINGLEADER_BACKEND", "")).backend, Backend::kAuto);
  EXPECT_EQ(Parse(With(OperatorEnv(), "RINGLEADER_POD_IP", "")).pod_ip, "");
  EXPECT_EQ(ErrorFor(With(OperatorEnv(), "RINGLEADER_RANK", "")),
            "RINGLEADER_RANK: not set (the operator injects it; or pass --rank)");
}

TEST(SidecarConfigTest, EveryRequiredVariableIsNamedWhenMissing) {
  const std::vector<std::pair<std::string, std::string>> required = {
      {"RINGLEADER_JOB_NAME", "--job-name"},
      {"RINGLEADER_JOB_NAMESPACE", "--job-namespace"},
      {"RINGLEADER_RANK", "--rank"},
      {"RINGLEADER_REPLICAS", "--replicas"},
      {"RINGLEADER_RENDEZVOUS_ADDR", "--rendezvous-addr"},
      {"RINGLEADER_RENDEZVOUS_PORT", "--rendezvous-port"},
      {"RINGLEADER_METRICS_PORT", "--metrics-port"}};
  for (const auto& [name, flag] : required) {
    EXPECT_EQ(ErrorFor(Without(OperatorEnv(), name)),
              name + ": not set (the operator injects it; or pass " + flag + ")");
    // The flag alone is enough.
    const Env env = Without(OperatorEnv(), name);
    EXPECT_EQ(ErrorFor(env, {flag, OperatorEnv()[name]}), "") << flag;
  }
}

struct BadValue {
  std::string name;
  std::string flag;
  std::string value;
  std::string message;  // after "NAME: "
};

TEST(SidecarConfigTest, EveryBadValueIsNamedWithItsVariableOrFlag) {
  const std::vector<BadValue> cases = {
      {"RINGLEADER_JOB_NAME", "--job-name", "my job", "\"my job\" is not a job name"},
      {"RINGLEADER_JOB_NAMESPACE", "--job-namespace", "Team_A",
       "\"Team_A\" is not a namespace name (lowercase letters, digits and '-', at most 63)"},
      {"RINGLEADER_JOB_UID", "--job-uid", "a b", "\"a b\" is not a uid"},
      {"RINGLEADER_RANK", "--rank", "x", "\"x\" is not an integer"},
      {"RINGLEADER_RANK", "--rank", "-1", "-1 is not between 0 and 16383"},
      {"RINGLEADER_RANK", "--rank", "1.0", "\"1.0\" is not an integer"},
      {"RINGLEADER_REPLICAS", "--replicas", "0", "0 is not between 1 and 16384"},
      {"RINGLEADER_ATTEMPT", "--attempt", "-1", "-1 is not between 0 and 2147483647"},
      {"RINGLEADER_REPLICAS", "--replicas", "99999999999999999999",
       "\"99999999999999999999\" is not an integer"},
      {"RINGLEADER_GPUS_PER_REPLICA", "--gpus-per-replica", "65", "65 is not between 0 and 64"},
      {"RINGLEADER_RENDEZVOUS_ADDR", "--rendezvous-addr", "http://x",
       "\"http://x\" is not a host name or IP address"},
      {"RINGLEADER_RENDEZVOUS_PORT", "--rendezvous-port", "0", "0 is not between 1 and 65535"},
      {"RINGLEADER_RENDEZVOUS_PORT", "--rendezvous-port", "65536",
       "65536 is not between 1 and 65535"},
      {"RINGLEADER_RENDEZVOUS_TIMEOUT_SECONDS", "--rendezvous-timeout-seconds", "0",
       "0 is not between 1 and 86400"},
      {"RINGLEADER_METRICS_PORT", "--metrics-port", "http", "\"http\" is not an integer"},
      {"RINGLEADER_METRICS_BIND_ADDRESS", "--metrics-bind-address", "a b",
       "\"a b\" is not a host name or IP address"},
      {"RINGLEADER_BACKEND", "--backend", "mpi", "\"mpi\" is not one of auto, gloo, nccl"},
      {"RINGLEADER_MODE", "--mode", "train",
       "\"train\" is not one of run, preflight, monitor, pairwise, sidecar, pod-preflight"},
      {"RINGLEADER_PREFLIGHT_ENABLED", "--preflight-enabled", "yes", "\"yes\" is not true or false"},
      {"RINGLEADER_PREFLIGHT_MIN_BYTES", "--preflight-min-bytes", "1MB",
       "\"1MB\" is not a byte count (an integer, optionally with Ki, Mi, Gi, Ti, k, M, G or T)"},
      {"RINGLEADER_PREFLIGHT_MIN_BYTES", "--preflight-min-bytes", "2",
       "\"2\" is not between 4 and 17179869184 bytes"},
      {"RINGLEADER_PREFLIGHT_MAX_BYTES", "--preflight-max-bytes", "17Gi",
       "\"17Gi\" is not between 4 and 17179869184 bytes"},
      {"RINGLEADER_PREFLIGHT_MAX_BYTES", "--preflight-max-bytes", "-4",
       "\"-4\" is not a byte count (an integer, optionally with Ki, Mi, Gi, Ti, k, M, G or T)"},
      {"RINGLEADER_PREFLIGHT_STEP_FACTOR", "--preflight-step-factor", "1",
       "1 is not between 2 and 1024"},
      {"RINGLEADER_PREFLIGHT_MIN_BUS_BANDWIDTH", "--preflight-min-bus-bandwidth", "10Gbps",
       "\"10Gbps\" is not a byte count (an integer, optionally with Ki, Mi, Gi, Ti, k, M, G or T)"},
      {"RINGLEADER_PREFLIGHT_MIN_BUS_BANDWIDTH", "--preflight-min-bus-bandwidth",
       "9999999999999999Ti", "\"9999999999999999Ti\" is not between 0 and 1125899906842624 bytes"},
      {"RINGLEADER_PREFLIGHT_WARMUP_ITERATIONS", "--preflight-warmup-iterations", "-1",
       "-1 is not between 0 and 100000"},
      {"RINGLEADER_PREFLIGHT_ITERATIONS", "--preflight-iterations", "0",
       "0 is not between 1 and 100000"},
      {"RINGLEADER_PREFLIGHT_TIMEOUT_SECONDS", "--preflight-timeout-seconds", "5m",
       "\"5m\" is not an integer"},
      {"RINGLEADER_MONITOR_ENABLED", "--monitor-enabled", "1", "\"1\" is not true or false"},
      {"RINGLEADER_MONITOR_INTERVAL_SECONDS", "--monitor-interval-seconds", "86401",
       "86401 is not between 1 and 86400"},
      {"RINGLEADER_MONITOR_MESSAGE_BYTES", "--monitor-message-bytes", "2Gi",
       "\"2Gi\" is not between 4 and 1073741824 bytes"},
      {"RINGLEADER_POD_NAME", "--pod-name", "a\tb", "\"a\tb\" is not a Pod name"},
      {"RINGLEADER_POD_IP", "--pod-ip", "10.0.3", "\"10.0.3\" is not an IP address"},
      {"RINGLEADER_NODE_NAME", "--node-name", "n 1", "\"n 1\" is not a node name"},
      {"RINGLEADER_PROFILER_INTERVAL_MS", "--profiler-interval-ms", "9",
       "9 is not between 10 and 600000"},
      {"RINGLEADER_PROFILER_INTERVAL_MS", "--profiler-interval-ms", "5s",
       "\"5s\" is not an integer"},
      {"RINGLEADER_STALL_SECONDS", "--stall-seconds", "0", "0 is not between 1 and 86400"},
      {"RINGLEADER_STALL_SECONDS", "--stall-seconds", "86401", "86401 is not between 1 and 86400"},
      {"RINGLEADER_STALL_SECONDS", "--stall-seconds", "2m", "\"2m\" is not an integer"},
  };
  for (const BadValue& bad : cases) {
    EXPECT_EQ(ErrorFor(With(OperatorEnv(), bad.name, bad.value)), bad.name + ": " + bad.message);
    // The same value from the flag names the flag, even with a good value in the environment.
    EXPECT_EQ(ErrorFor(OperatorEnv(), {bad.flag, bad.value}), bad.flag + ": " + bad.message);
  }
}

TEST(SidecarConfigTest, RankMustBeBelowReplicas) {
  EXPECT_EQ(ErrorFor(With(OperatorEnv(), "RINGLEADER_RANK", "4")),
            "RINGLEADER_RANK: 4 is not below RINGLEADER_REPLICAS (4)");
  EXPECT_EQ(ErrorFor(With(OperatorEnv(), "RINGLEADER_RANK", "8"), {"--replicas", "8"}),
            "RINGLEADER_RANK: 8 is not below --replicas (8)");
  EXPECT_EQ(ErrorFor(OperatorEnv(), {"--rank", "9"}),
            "--rank: 9 is not below RINGLEADER_REPLICAS (4)");
  EXPECT_EQ(ErrorFor(OperatorEnv(), {"--rank", "3"}), "");
}

TEST(SidecarConfigTest, MaxBytesMayNotBeBelowMinBytes) {
  EXPECT_EQ(ErrorFor(With(OperatorEnv(), "RINGLEADER_PREFLIGHT_MAX_BYTES", "1024")),
            "RINGLEADER_PREFLIGHT_MAX_BYTES: 1024 is below RINGLEADER_PREFLIGHT_MIN_BYTES (1048576)");
  EXPECT_EQ(ErrorFor(OperatorEnv(), {"--preflight-min-bytes", "1Gi"}),
            "RINGLEADER_PREFLIGHT_MAX_BYTES: 67108864 is below --preflight-min-bytes (1073741824)");
  EXPECT_EQ(ErrorFor(OperatorEnv(), {"--preflight-max-bytes", "1Mi"}), "");  // equal is a sweep of one
}

// With nccl, local rank l drives device l, so there are no more local ranks than GPUs; Gloo's
// local ranks are threads on the CPU and need none.
TEST(SidecarConfigTest, LocalRanksAreBoundedByTheGpusUnlessTheBackendIsGloo) {
  EXPECT_EQ(Parse(OperatorEnv()).local_ranks, 0);
  EXPECT_EQ(Parse(With(OperatorEnv(), "RINGLEADER_LOCAL_RANKS", "2")).local_ranks, 2);
  EXPECT_EQ(ErrorFor(With(With(OperatorEnv(), "RINGLEADER_GPUS_PER_REPLICA", "2"),
                          "RINGLEADER_LOCAL_RANKS", "3")),
            "RINGLEADER_LOCAL_RANKS: 3 exceeds RINGLEADER_GPUS_PER_REPLICA (2)");
  EXPECT_EQ(ErrorFor(With(OperatorEnv(), "RINGLEADER_GPUS_PER_REPLICA", "2"),
                     {"--backend", "auto", "--local-ranks", "4"}),
            "--local-ranks: 4 exceeds RINGLEADER_GPUS_PER_REPLICA (2)");
  EXPECT_EQ(ErrorFor(With(OperatorEnv(), "RINGLEADER_GPUS_PER_REPLICA", "2"),
                     {"--backend", "gloo", "--local-ranks", "4"}),
            "");
  EXPECT_EQ(ErrorFor(OperatorEnv(),
                     {"--gpus-per-replica", "0", "--backend", "auto", "--local-ranks", "4"}),
            "");
  EXPECT_EQ(ErrorFor(With(OperatorEnv(), "RINGLEADER_LOCAL_RANKS", "65")),
            "RINGLEADER_LOCAL_RANKS: 65 is not between 0 and 64");
}

TEST(SidecarConfigTest, NcclNeedsGpus) {
  EXPECT_EQ(ErrorFor(With(OperatorEnv(), "RINGLEADER_GPUS_PER_REPLICA", "0")),
            "RINGLEADER_BACKEND: nccl needs GPUs, but RINGLEADER_GPUS_PER_REPLICA is 0");
  EXPECT_EQ(ErrorFor(OperatorEnv(), {"--gpus-per-replica", "0", "--backend", "auto"}), "");
}

TEST(SidecarConfigTest, AModeNeedsItsPartEnabled) {
  EXPECT_EQ(ErrorFor(With(OperatorEnv(), "RINGLEADER_PREFLIGHT_ENABLED", "false"),
                     {"--mode", "preflight"}),
            "--mode: preflight, but RINGLEADER_PREFLIGHT_ENABLED is false");
  EXPECT_EQ(ErrorFor(OperatorEnv(), {"--mode", "monitor", "--monitor-enabled", "false"}),
            "--mode: monitor, but --monitor-enabled is false");
  // run with both off still starts: it serves its endpoints and reports ready.
  EXPECT_EQ(ErrorFor(OperatorEnv(), {"--preflight-enabled=false", "--monitor-enabled=false"}), "");
}

TEST(SidecarConfigTest, ArgumentsThatAreNotKnownFlagsAreErrors) {
  EXPECT_EQ(ErrorFor(OperatorEnv(), {"--ranks", "1"}), "unknown flag --ranks (see --help)");
  EXPECT_EQ(ErrorFor(OperatorEnv(), {"--rank"}), "--rank: missing value");
  EXPECT_EQ(ErrorFor(OperatorEnv(), {"--rank", "--replicas", "4"}), "--rank: missing value");
  EXPECT_EQ(ErrorFor(OperatorEnv(), {"run"}), "unexpected argument \"run\" (flags start with --)");
}

TEST(SidecarConfigTest, ARigidJobsMaxReplicasIsItsReplicasAndItsScopeJob) {
  const SidecarConfig config = Parse(OperatorEnv());
  EXPECT_EQ(config.max_replicas, 4);
  EXPECT_FALSE(config.elastic);
  EXPECT_EQ(config.preflight_scope, PreflightScope::kJob);
}

// What the operator adds for an elastic job's Pod of a scale-up: rank 4 of 5 joins alone.
Env ElasticScaleUpEnv() {
  Env env = With(With(OperatorEnv(), "RINGLEADER_RANK", "4"), "RINGLEADER_REPLICAS", "5");
  env["RINGLEADER_MAX_REPLICAS"] = "8";
  env["RINGLEADER_PREFLIGHT_SCOPE"] = "Pod";
  env["RINGLEADER_MONITOR_ENABLED"] = "false";
  env["RINGLEADER_MODE"] = "pod-preflight";
  return env;
}

TEST(SidecarConfigTest, ReadsAnElasticPodsMaxReplicasAndScope) {
  const SidecarConfig config = Parse(ElasticScaleUpEnv());
  EXPECT_EQ(config.rank, 4);
  EXPECT_EQ(config.replicas, 5);
  EXPECT_EQ(config.world_size(), 5);
  EXPECT_EQ(config.max_replicas, 8);
  EXPECT_TRUE(config.elastic);
  EXPECT_EQ(config.preflight_scope, PreflightScope::kPod);
  // Flags win, as for every setting.
  const SidecarConfig flagged =
      Parse(ElasticScaleUpEnv(), {"--max-replicas", "5", "--preflight-scope=Job"});
  EXPECT_EQ(flagged.max_replicas, 5);
  EXPECT_EQ(flagged.preflight_scope, PreflightScope::kJob);
}

TEST(SidecarConfigTest, MaxReplicasBelowTheReplicasOrNotANumberIsNamed) {
  EXPECT_EQ(ErrorFor(With(OperatorEnv(), "RINGLEADER_MAX_REPLICAS", "3")),
            "RINGLEADER_MAX_REPLICAS: 3 is below RINGLEADER_REPLICAS (4)");
  EXPECT_EQ(ErrorFor(OperatorEnv(), {"--max-replicas=2"}),
            "--max-replicas: 2 is below RINGLEADER_REPLICAS (4)");
  EXPECT_EQ(ErrorFor(With(OperatorEnv(), "RINGLEADER_MAX_REPLICAS", "many")),
            "RINGLEADER_MAX_REPLICAS: \"many\" is not an integer");
  EXPECT_EQ(ErrorFor(With(OperatorEnv(), "RINGLEADER_MAX_REPLICAS", "0")),
            "RINGLEADER_MAX_REPLICAS: 0 is not between 1 and 16384");
  EXPECT_EQ(ErrorFor(With(OperatorEnv(), "RINGLEADER_MAX_REPLICAS", "4")), "");
}

TEST(SidecarConfigTest, ABadPreflightScopeIsNamed) {
  EXPECT_EQ(ErrorFor(With(ElasticScaleUpEnv(), "RINGLEADER_PREFLIGHT_SCOPE", "pod")),
            "RINGLEADER_PREFLIGHT_SCOPE: \"pod\" is not one of Job, Pod");
  EXPECT_EQ(ErrorFor(ElasticScaleUpEnv(), {"--preflight-scope", "Node"}),
            "--preflight-scope: \"Node\" is not one of Job, Pod");
  // Rank 0 serves the store; its loss restarts the gang, so it never joins a running world.
  EXPECT_EQ(ErrorFor(With(ElasticScaleUpEnv(), "RINGLEADER_RANK", "0")),
            "RINGLEADER_PREFLIGHT_SCOPE: Pod, but RINGLEADER_RANK is 0: rank 0 serves the store "
            "and always runs the Job-scope preflight");
  EXPECT_THAT(ErrorFor(Without(ElasticScaleUpEnv(), "RINGLEADER_MAX_REPLICAS")),
              StartsWith("RINGLEADER_PREFLIGHT_SCOPE: Pod, but RINGLEADER_MAX_REPLICAS is not set"));
  EXPECT_THAT(ErrorFor(With(ElasticScaleUpEnv(), "RINGLEADER_MODE", "run")),
              StartsWith("RINGLEADER_PREFLIGHT_SCOPE: Pod, but RINGLEADER_MODE is run"));
  EXPECT_EQ(ErrorFor(With(ElasticScaleUpEnv(), "RINGLEADER_MODE", "sidecar")), "");
}

TEST(SidecarConfigTest, TheTokenLosesOneTrailingNewlineOnly) {
  const auto token = [](const std::string& content) {
    return Parse(With(OperatorEnv(), "RINGLEADER_TOKEN_FILE", WriteFile("t", content))).token;
  };
  EXPECT_EQ(token("abc"), "abc");
  EXPECT_EQ(token("abc\n"), "abc");
  EXPECT_EQ(token("abc\n\n"), "abc\n");
  EXPECT_EQ(token(" a b \r"), " a b \r");
  EXPECT_EQ(token(std::string(4096, 'k')), std::string(4096, 'k'));
  EXPECT_EQ(token(std::string("\0x", 2)), std::string("\0x", 2));
}

TEST(SidecarConfigTest, ABadTokenFileIsNamedWithItsVariable) {
  const std::string dir = ScratchDir();
  const auto error = [](const std::string& path, const std::vector<std::string>& args = {}) {
    return ErrorFor(With(OperatorEnv(), "RINGLEADER_TOKEN_FILE", path), args);
  };
  EXPECT_EQ(error(dir + "/no-such-token"),
            "RINGLEADER_TOKEN_FILE: " + dir + "/no-such-token: cannot read: No such file or directory");
  EXPECT_EQ(error(WriteFile("empty-token", "")),
            "RINGLEADER_TOKEN_FILE: " + dir + "/empty-token: is empty");
  EXPECT_EQ(error(WriteFile("newline-token", "\n")),
            "RINGLEADER_TOKEN_FILE: " + dir + "/newline-token: is empty");
  // 4 KiB plus the newline a Secret editor may add is still too long.
  EXPECT_EQ(error(WriteFile("big-token", std::string(4096, 'k') + "\n")),
            "RINGLEADER_TOKEN_FILE: " + dir + "/big-token: is larger than 4096 bytes");
  EXPECT_EQ(error(WriteFile("huge-token", std::string(1 << 20, 'k'))),
            "RINGLEADER_TOKEN_FILE: " + dir + "/huge-token: is larger than 4096 bytes");
  const std::string token_dir = dir + "/token-dir";
  std::filesystem::create_directories(token_dir);
  EXPECT_EQ(error(token_dir), "RINGLEADER_TOKEN_FILE: " + token_dir + ": cannot read: Is a directory");
  // From the flag, the flag is named.
  EXPECT_EQ(error(WriteFile("good-token", "t"), {"--token-file", dir + "/missing"}),
            "--token-file: " + dir + "/missing: cannot read: No such file or directory");
}

TEST(SidecarConfigTest, TheDefaultTokenPathIsNamedWhenItIsMissing) {
  // Nothing mounted at the contract's path on a build machine.
  if (std::filesystem::exists("/var/run/ringleader/token/token")) {
    GTEST_SKIP() << "a token is mounted here";
  }
  EXPECT_EQ(ErrorFor(Without(OperatorEnv(), "RINGLEADER_TOKEN_FILE")),
            "RINGLEADER_TOKEN_FILE: /var/run/ringleader/token/token: cannot read: No such file or "
            "directory");
}

TEST(SidecarConfigTest, MapEnvironmentAndProcessEnvironmentLookUpNames) {
  const EnvLookup lookup = MapEnvironment({{"A", "1"}});
  EXPECT_EQ(lookup("A"), std::optional<std::string>("1"));
  EXPECT_EQ(lookup("B"), std::nullopt);
  // Read-only: PATH is set wherever tests run, and this name is not.
  EXPECT_TRUE(ProcessEnvironment()("PATH").has_value());
  EXPECT_FALSE(ProcessEnvironment()("RINGLEADER_SURELY_UNSET_FOR_THIS_TEST").has_value());
}

TEST(SidecarConfigTest, HelpListsEveryFlagWithItsVariable) {
  EXPECT_TRUE(HelpRequested({"--rank", "1", "--help"}));
  EXPECT_TRUE(HelpRequested({"-h"}));
  EXPECT_FALSE(HelpRequested({"--rank", "1"}));
  const std::string usage = SidecarConfigUsage();
  const std::vector<std::pair<std::string, std::string>> pairs = {
      {"--job-name", "RINGLEADER_JOB_NAME"},
      {"--job-namespace", "RINGLEADER_JOB_NAMESPACE"},
      {"--job-uid", "RINGLEADER_JOB_UID"},
      {"--rank", "RINGLEADER_RANK"},
      {"--replicas", "RINGLEADER_REPLICAS"},
      {"--gpus-per-replica", "RINGLEADER_GPUS_PER_REPLICA"},
      {"--local-ranks", "RINGLEADER_LOCAL_RANKS"},
      {"--rendezvous-addr", "RINGLEADER_RENDEZVOUS_ADDR"},
      {"--rendezvous-port", "RINGLEADER_RENDEZVOUS_PORT"},
      {"--rendezvous-timeout-seconds", "RINGLEADER_RENDEZVOUS_TIMEOUT_SECONDS"},
      {"--metrics-port", "RINGLEADER_METRICS_PORT"},
      {"--metrics-bind-address", "RINGLEADER_METRICS_BIND_ADDRESS"},
      {"--backend", "RINGLEADER_BACKEND"},
      {"--mode", "RINGLEADER_MODE"},
      {"--preflight-enabled", "RINGLEADER_PREFLIGHT_ENABLED"},
      {"--preflight-min-bytes", "RINGLEADER_PREFLIGHT_MIN_BYTES"},
      {"--preflight-max-bytes", "RINGLEADER_PREFLIGHT_MAX_BYTES"},
      {"--preflight-step-factor", "RINGLEADER_PREFLIGHT_STEP_FACTOR"},
      {"--preflight-min-bus-bandwidth", "RINGLEADER_PREFLIGHT_MIN_BUS_BANDWIDTH"},
      {"--preflight-warmup-iterations", "RINGLEADER_PREFLIGHT_WARMUP_ITERATIONS"},
      {"--preflight-iterations", "RINGLEADER_PREFLIGHT_ITERATIONS"},
      {"--preflight-timeout-seconds", "RINGLEADER_PREFLIGHT_TIMEOUT_SECONDS"},
      {"--monitor-enabled", "RINGLEADER_MONITOR_ENABLED"},
      {"--monitor-interval-seconds", "RINGLEADER_MONITOR_INTERVAL_SECONDS"},
      {"--monitor-message-bytes", "RINGLEADER_MONITOR_MESSAGE_BYTES"},
      {"--token-file", "RINGLEADER_TOKEN_FILE"},
      {"--run-dir", "RINGLEADER_RUN_DIR"},
      {"--contract-file", "RINGLEADER_CONTRACT_FILE"},
      {"--pod-name", "RINGLEADER_POD_NAME"},
      {"--pod-ip", "RINGLEADER_POD_IP"},
      {"--node-name", "RINGLEADER_NODE_NAME"},
      {"--telemetry-enabled", "RINGLEADER_TELEMETRY_ENABLED"},
      {"--profiler-socket", "RINGLEADER_PROFILER_SOCKET"},
      {"--profiler-plugin-dir", "RINGLEADER_PROFILER_PLUGIN_DIR"},
      {"--profiler-interval-ms", "RINGLEADER_PROFILER_INTERVAL_MS"},
      {"--stall-seconds", "RINGLEADER_STALL_SECONDS"},
  };
  for (const auto& [flag, name] : pairs) {
    const std::size_t line_start = usage.find("  " + flag + " ");
    ASSERT_NE(line_start, std::string::npos) << flag;
    const std::string line = usage.substr(line_start, usage.find('\n', line_start) - line_start);
    EXPECT_THAT(line, HasSubstr(name)) << flag;
  }
  EXPECT_THAT(usage, HasSubstr("(default 300)"));
  EXPECT_THAT(usage, HasSubstr("(default /var/run/ringleader/token/token)"));
  EXPECT_THAT(usage, HasSubstr("--help"));
}

}  // namespace
}  // namespace ringleader::sidecar
