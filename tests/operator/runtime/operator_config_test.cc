// `ringleader-operator run` settings: defaults, flags, the YAML file under them, and errors that
// name the flag or field holding the bad value.
#include "operator/runtime/operator_config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

namespace ringleader::runtime {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

// Writes `text` to a fresh file under the test's temp dir and returns its path.
std::string WriteFile(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + "/" + name;
  std::ofstream out(path, std::ios::trunc);
  out << text;
  return path;
}

// The error ParseOperatorConfig throws for `args`, or "" when it accepts them.
std::string ErrorFor(const std::vector<std::string>& args) {
  try {
    ParseOperatorConfig(args);
  } catch (const OperatorConfigError& error) {
    return error.what();
  }
  return "";
}

TEST(OperatorConfigTest, NoArgumentsGiveTheDocumentedDefaults) {
  const OperatorConfig config = ParseOperatorConfig({});
  EXPECT_EQ(config.kubeconfig, "");  // the caller decides on $KUBECONFIG or in-cluster
  EXPECT_TRUE(config.namespaces.empty());
  EXPECT_EQ(config.port_range, (ports::PortRange{61000, 65535}));
  EXPECT_EQ(config.sidecar_image, "ringleader/sidecar:0.1.0");
  EXPECT_FALSE(config.default_host_network);
  EXPECT_TRUE(config.network_policies);
  EXPECT_TRUE(config.leader_election);
  EXPECT_EQ(config.lease_duration, std::chrono::seconds(15));
  EXPECT_EQ(config.renew_deadline, std::chrono::seconds(10));
  EXPECT_EQ(config.retry_period, std::chrono::seconds(2));
  EXPECT_EQ(config.metrics_bind_address, ":8080");
  EXPECT_EQ(config.health_bind_address, ":8081");
  EXPECT_EQ(config.workers, 4);
  EXPECT_TRUE(config.json_logs);
  EXPECT_EQ(config.liveness_reconcile_timeout, std::chrono::seconds(600));
  EXPECT_EQ(config.liveness_informer_timeout, std::chrono::seconds(600));
  EXPECT_EQ(config.liveness_queue_timeout, std::chrono::seconds(60));
}

TEST(OperatorConfigTest, ReadsEveryFlag) {
  const OperatorConfig config = ParseOperatorConfig({
      "--kubeconfig", "/home/me/.kube/config", "--context", "lab", "--namespace", "team-a",
      "--port-range", "40000-40099", "--sidecar-image", "registry.local/sidecar:2",
      "--cluster-domain", "corp.local", "--default-host-network", "true", "--network-policies", "false", "--leader-elect", "false", "--leader-election-namespace",
      "ops", "--leader-election-id", "rl-lock", "--identity", "replica-1", "--lease-duration", "30",
      "--renew-deadline", "20", "--retry-period", "5", "--metrics-bind-address", "127.0.0.1:9090",
      "--health-probe-bind-address", ":9091", "--workers", "8", "--kube-api-qps", "12.5",
      "--kube-api-burst", "40", "--resync-period", "600", "--summary-interval", "15", "--log-format", "text",
      "--liveness-reconcile-timeout", "900", "--liveness-informer-timeout", "0",
      "--liveness-queue-timeout", "30"});
  EXPECT_EQ(config.kubeconfig, "/home/me/.kube/config");
  EXPECT_EQ(config.kube_context, "lab");
  EXPECT_EQ(config.namespaces, std::vector<std::string>{"team-a"});
  EXPECT_EQ(config.port_range, (ports::PortRange{40000, 40099}));
  EXPECT_EQ(config.sidecar_image, "registry.local/sidecar:2");
  EXPECT_EQ(config.cluster_domain, "corp.local");
  EXPECT_TRUE(config.default_host_network);
  EXPECT_FALSE(config.network_policies);
  EXPECT_FALSE(config.leader_election);
  EXPECT_EQ(config.leader_election_namespace, "ops");
  EXPECT_EQ(config.leader_election_id, "rl-lock");
  EXPECT_EQ(config.identity, "replica-1");
  EXPECT_EQ(config.lease_duration, std::chrono::seconds(30));
  EXPECT_EQ(config.renew_deadline, std::chrono::seconds(20));
  EXPECT_EQ(config.retry_period, std::chrono::seconds(5));
  EXPECT_EQ(config.metrics_bind_address, "127.0.0.1:9090");
  EXPECT_EQ(config.health_bind_address, ":9091");
  EXPECT_EQ(config.workers, 8);
  EXPECT_DOUBLE_EQ(config.kube_api_qps, 12.5);
  EXPECT_EQ(config.kube_api_burst, 40);
  EXPECT_EQ(config.resync_period, std::chrono::seconds(600));
  EXPECT_EQ(config.summary_interval, std::chrono::seconds(15));
  EXPECT_FALSE(config.json_logs);
  EXPECT_EQ(config.liveness_reconcile_timeout, std::chrono::seconds(900));
  EXPECT_EQ(config.liveness_informer_timeout, std::chrono::seconds(0));
  EXPECT_EQ(config.liveness_queue_timeout, std::chrono::seconds(30));
}

TEST(OperatorConfigTest, AcceptsFlagEqualsValue) {
  const OperatorConfig config = ParseOperatorConfig(
      {"--workers=2", "--leader-elect=false", "--metrics-bind-address=0", "--identity=a=b"});
  EXPECT_EQ(config.workers, 2);
  EXPECT_FALSE(config.leader_election);
  EXPECT_EQ(config.metrics_bind_address, "0");
  EXPECT_EQ(config.identity, "a=b");  // only the first '=' splits
}

TEST(OperatorConfigTest, NamespacesRepeatOrComeAsACommaList) {
  const OperatorConfig config = ParseOperatorConfig(
      {"--namespace", "team-a,team-b", "--namespace=team-c", "--namespace", " team-d , team-a"});
  EXPECT_EQ(config.namespaces, (std::vector<std::string>{"team-a", "team-b", "team-c", "team-d"}));
}

TEST(OperatorConfigTest, ReadsTheFileInCamelCase) {
  const std::string path = WriteFile("full.yaml", R"(
kubeconfig: /etc/kube/config
context: prod
namespaces: [team-a, team-b]
portRange: 50000-50399
sidecarImage: registry.local/sidecar:3
clusterDomain: example.org
leaderElect: false
leaderElectionNamespace: ops
leaderElectionId: lock
identity: pod-7
leaseDuration: 60
renewDeadline: 40
retryPeriod: 4
metricsBindAddress: "0"
healthProbeBindAddress: 127.0.0.1:8181
workers: 16
kubeApiQps: 50
kubeApiBurst: 100
resyncPeriod: 120
logFormat: text
)");
  const OperatorConfig config = ParseOperatorConfig({"--config", path});
  EXPECT_EQ(config.kubeconfig, "/etc/kube/config");
  EXPECT_EQ(config.kube_context, "prod");
  EXPECT_EQ(config.namespaces, (std::vector<std::string>{"team-a", "team-b"}));
  EXPECT_EQ(config.port_range, (ports::PortRange{50000, 50399}));
  EXPECT_EQ(config.sidecar_image, "registry.local/sidecar:3");
  EXPECT_EQ(config.cluster_domain, "example.org");
  EXPECT_FALSE(config.leader_election);
  EXPECT_EQ(config.leader_election_namespace, "ops");
  EXPECT_EQ(config.leader_election_id, "lock");
  EXPECT_EQ(config.identity, "pod-7");
  EXPECT_EQ(config.lease_duration, std::chrono::seconds(60));
  EXPECT_EQ(config.renew_deadline, std::chrono::seconds(40));
  EXPECT_EQ(config.retry_period, std::chrono::seconds(4));
  EXPECT_EQ(config.metrics_bind_address, "0");
  EXPECT_EQ(config.health_bind_address, "127.0.0.1:8181");
  EXPECT_EQ(config.workers, 16);
  EXPECT_DOUBLE_EQ(config.kube_api_qps, 50);
  EXPECT_EQ(config.kube_api_burst, 100);
  EXPECT_EQ(config.resync_period, std::chrono::seconds(120));
  EXPECT_FALSE(config.json_logs);
}

TEST(OperatorConfigTest, FlagsWinOverTheFileWhicheverComesFirst) {
  const std::string path = WriteFile("override.yaml",
                                     "workers: 16\nnamespaces: [team-a, team-b]\nsidecarImage: a:1\n"
                                     "metricsBindAddress: 0\n");
  const OperatorConfig config = ParseOperatorConfig(
      {"--workers", "3", "--namespace", "team-c", "--config", path, "--sidecar-image=b:2"});
  EXPECT_EQ(config.workers, 3);
  // The command line's namespaces replace the file's list instead of adding to it.
  EXPECT_EQ(config.namespaces, std::vector<std::string>{"team-c"});
  EXPECT_EQ(config.sidecar_image, "b:2");
  EXPECT_EQ(config.metrics_bind_address, "0");  // from the file (an integer there)
}

TEST(OperatorConfigTest, AnEmptyNamespaceFlagMeansAllNamespacesOverTheFile) {
  const std::string path = WriteFile("namespaces.yaml", "namespaces: [team-a]\n");
  EXPECT_TRUE(ParseOperatorConfig({"--config", path, "--namespace="}).namespaces.empty());
}

TEST(OperatorConfigTest, AnEmptyFileOrANullFieldSetsNothing) {
  EXPECT_EQ(ParseOperatorConfig({"--config", WriteFile("empty.yaml", "# nothing\n")}).workers, 4);
  EXPECT_EQ(ParseOperatorConfig({"--config", WriteFile("null.yaml", "workers:\n")}).workers, 4);
}

struct BadFlag {
  std::vector<std::string> args;
  std::string error;  // the whole message, or its start when it ends in "..."
};

TEST(OperatorConfigTest, EachBadFlagIsNamedInItsError) {
  const std::vector<BadFlag> cases = {
      {{"--workers", "0"}, "--workers: must be an integer >= 1, got \"0\""},
      {{"--workers=-3"}, "--workers: must be an integer >= 1, got \"-3\""},
      {{"--workers", "four"}, "--workers: must be an integer >= 1, got \"four\""},
      {{"--workers", "4x"}, "--workers: must be an integer >= 1, got \"4x\""},
      {{"--workers", "99999999999999999999"}, "--workers: must be an integer >= 1, got \"99999999999999999999\""},
      {{"--workers"}, "--workers: missing value"},
      {{"--workers", "--leader-elect", "true"}, "--workers: missing value"},
      {{"--kube-api-burst", "0"}, "--kube-api-burst: must be an integer >= 1, got \"0\""},
      {{"--kube-api-qps", "0"}, "--kube-api-qps: must be a number > 0, got \"0\""},
      {{"--kube-api-qps", "nan"}, "--kube-api-qps: must be a number > 0, got \"nan\""},
      {{"--kube-api-qps", "inf"}, "--kube-api-qps: must be a number > 0, got \"inf\""},
      {{"--lease-duration", "0"}, "--lease-duration: must be a whole number of seconds >= 1, got \"0\""},
      {{"--renew-deadline", "1.5"}, "--renew-deadline: must be a whole number of seconds >= 1, got \"1.5\""},
      {{"--retry-period", "2s"}, "--retry-period: must be a whole number of seconds >= 1, got \"2s\""},
      {{"--resync-period", ""}, "--resync-period: must be a whole number of seconds >= 1, got \"\""},
      {{"--liveness-queue-timeout", "-1"}, "--liveness-queue-timeout: must be a whole number of seconds >= 0, got \"-1\""},
      {{"--leader-elect", "yes"}, "--leader-elect: must be true or false, got \"yes\""},
      {{"--log-format", "xml"}, "--log-format: must be json or text, got \"xml\""},
      {{"--port-range", "9-1"}, "--port-range: ..."},
      {{"--port-range", "lots"}, "--port-range: port range must look like FIRST-LAST, got \"lots\""},
      {{"--namespace", "Team-A"}, "--namespace: must be a namespace name ..."},
      {{"--namespace", "a,,b"}, "--namespace: must be a namespace name ..."},
      {{"--leader-election-namespace", "Ops"}, "--leader-election-namespace: must be a namespace name, got \"Ops\""},
      {{"--sidecar-image", ""}, "--sidecar-image: must be an image reference, got \"\""},
      {{"--cluster-domain="}, "--cluster-domain: must be a DNS domain, got \"\""},
      {{"--leader-election-id", "a b"}, "--leader-election-id: must be a Lease name, got \"a b\""},
      {{"--metrics-bind-address", "localhost"}, "--metrics-bind-address: must be HOST:PORT, :PORT or PORT ..."},
      {{"--health-probe-bind-address", ":65536"}, "--health-probe-bind-address: must be HOST:PORT, :PORT or PORT ..."},
      {{"--config"}, "--config: missing value"},
      {{"--config="}, "--config: missing value"},
      {{"--config", "/nonexistent/ringleader.yaml"}, "/nonexistent/ringleader.yaml: cannot open file"},
      {{"--verbose", "1"}, "unknown flag --verbose"},
      {{"--help"}, "unknown flag --help"},
      {{"workers", "4"}, "unexpected argument \"workers\" (flags start with --)"},
      {{"-w", "4"}, "unexpected argument \"-w\" (flags start with --)"},
      {{"--renew-deadline", "15"}, "--renew-deadline: must be less than the lease-duration (15 s), got \"15\""},
      {{"--lease-duration", "5"}, "--lease-duration: must be greater than the renew-deadline (10 s), got \"5\""},
      {{"--lease-duration", "30", "--renew-deadline", "40"},
       "--renew-deadline: must be less than the lease-duration (30 s), got \"40\""},
      {{"--retry-period", "10"}, "--retry-period: must be less than the renew-deadline (10 s), got \"10\""},
  };
  for (const BadFlag& bad : cases) {
    const std::string error = ErrorFor(bad.args);
    if (bad.error.size() > 3 && bad.error.compare(bad.error.size() - 3, 3, "...") == 0) {
      EXPECT_THAT(error, StartsWith(bad.error.substr(0, bad.error.size() - 3))) << bad.args[0];
    } else {
      EXPECT_EQ(error, bad.error) << bad.args[0];
    }
  }
}

struct BadField {
  std::string yaml;
  std::string error;  // after "<path>: "
};

TEST(OperatorConfigTest, EachBadFileFieldIsNamedInItsError) {
  const std::vector<BadField> cases = {
      {"workers: 0\n", "workers: must be an integer >= 1, got \"0\""},
      {"workers: four\n", "workers: must be a number, got \"four\""},
      {"workers: 2.5\n", "workers: must be an integer >= 1, got \"2.5\""},
      {"kubeApiQps: -1\n", "kubeApiQps: must be a number > 0, got \"-1\""},
      {"leaderElect: yes please\n", "leaderElect: must be true or false, got \"yes please\""},
      {"sidecarImage: [a, b]\n", "sidecarImage: must be a string, got [\"a\",\"b\"]"},
      {"namespaces: team-a\n", "namespaces: must be a list such as [team-a, team-b], got \"team-a\""},
      {"namespaces: [team-a, Team-B]\n", "namespaces[1]: must be a namespace name"},
      {"namespaces: [team-a, 7]\n", "namespaces[1]: must be a string, got 7"},
      {"portRange: 1-2\n", "portRange: "},
      {"metricsBindAddress: {port: 1}\n", "metricsBindAddress: must be a string such as \":8080\""},
      {"healthProbeBindAddress: 70000\n", "healthProbeBindAddress: must be HOST:PORT, :PORT or PORT"},
      {"renewDeadline: 15\n", "renewDeadline: must be less than the lease-duration (15 s), got \"15\""},
      {"leaseDuration: 5\n", "leaseDuration: must be greater than the renew-deadline (10 s), got \"5\""},
      {"worker: 4\n", "worker: unknown field"},
      {"config: other.yaml\n", "config: unknown field"},
      {"logFormat: text\nlogFormat: json\n", ""},  // duplicate keys: a YAML error naming the file
  };
  int index = 0;
  for (const BadField& bad : cases) {
    const std::string path = WriteFile("bad-" + std::to_string(index++) + ".yaml", bad.yaml);
    const std::string error = ErrorFor({"--config", path});
    EXPECT_THAT(error, StartsWith(path + ": " + bad.error)) << bad.yaml;
  }
}

TEST(OperatorConfigTest, TheFileMustBeAMapping) {
  const std::string path = WriteFile("list.yaml", "- workers\n- 4\n");
  EXPECT_EQ(ErrorFor({"--config", path}),
            path + ": must be a mapping of settings such as \"workers: 4\"");
  const std::string broken = WriteFile("broken.yaml", "workers: [1\n");
  EXPECT_THAT(ErrorFor({"--config", broken}), StartsWith(broken + ": "));
}

TEST(OperatorConfigTest, AFlagFixesABadTimingFromTheFile) {
  const std::string path = WriteFile("timing.yaml", "renewDeadline: 20\n");
  EXPECT_EQ(ParseOperatorConfig({"--config", path, "--lease-duration", "30"}).renew_deadline,
            std::chrono::seconds(20));
}

TEST(OperatorConfigTest, UsageListsEveryFlagWithItsDefault) {
  const std::string usage = OperatorConfigUsage();
  for (const char* flag :
       {"--config FILE", "--kubeconfig PATH", "--context NAME", "--namespace NS", "--port-range",
        "--sidecar-image", "--cluster-domain", "--leader-elect", "--leader-election-namespace",
        "--leader-election-id", "--identity", "--lease-duration", "--renew-deadline",
        "--retry-period", "--metrics-bind-address", "--health-probe-bind-address", "--workers",
        "--kube-api-qps", "--kube-api-burst", "--resync-period", "--summary-interval", "--log-format",
        "--liveness-reconcile-timeout", "--liveness-informer-timeout", "--liveness-queue-timeout"}) {
    EXPECT_THAT(usage, HasSubstr(flag));
  }
  EXPECT_THAT(usage, HasSubstr("(default 61000-65535)"));
  EXPECT_THAT(usage, HasSubstr("(default ringleader/sidecar:0.1.0)"));
  EXPECT_THAT(usage, HasSubstr("(default :8080)"));
  EXPECT_THAT(usage, HasSubstr("(default 20)"));
  EXPECT_THAT(usage, HasSubstr("(default json)"));
  EXPECT_EQ(usage.back(), '\n');
}

TEST(ParseBindAddressTest, ReadsEachForm) {
  const BindAddress full = ParseBindAddress("10.0.0.5:8080", "--x");
  EXPECT_EQ(full.host, "10.0.0.5");
  EXPECT_EQ(full.port, 8080);
  const BindAddress any = ParseBindAddress(":8081", "--x");
  EXPECT_EQ(any.host, "");
  EXPECT_EQ(any.port, 8081);
  const BindAddress bare = ParseBindAddress("9090", "--x");
  EXPECT_EQ(bare.host, "");
  EXPECT_EQ(bare.port, 9090);
  EXPECT_EQ(ParseBindAddress("0", "--x").port, 0);
  const BindAddress v6 = ParseBindAddress("[::1]:65535", "--x");
  EXPECT_EQ(v6.host, "::1");
  EXPECT_EQ(v6.port, 65535);
  EXPECT_EQ(ParseBindAddress("localhost:1", "--x").host, "localhost");
}

TEST(ParseBindAddressTest, RefusesOtherTextNamingWhat) {
  for (const char* text : {"", ":", "host:", "65536", ":-1", "::1:80", "[::1]", "[]:80", "a b:80",
                           "http://x:80", ":80 ", "123456"}) {
    try {
      ParseBindAddress(text, "config.yaml: metricsBindAddress");
      ADD_FAILURE() << "accepted \"" << text << "\"";
    } catch (const OperatorConfigError& error) {
      EXPECT_EQ(std::string(error.what()),
                std::string("config.yaml: metricsBindAddress: must be HOST:PORT, :PORT or PORT "
                            "with a port in 0-65535, got \"") + text + "\"");
    }
  }
}

}  // namespace
}  // namespace ringleader::runtime
