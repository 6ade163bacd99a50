// Tests for the Pod network: real namespaces, real TCP between them, faults, and cleanup.
// They need root and skip otherwise; each test process uses its own prefix ("rlt<pid>").
#include "tests/devcluster/kubelet/pod_network.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <memory>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace ringleader::devcluster::kubelet {
namespace {

constexpr int kTimeoutMs = 2000;

class UniqueFd {
 public:
  explicit UniqueFd(int fd = -1) : fd_(fd) {}
  UniqueFd(UniqueFd&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  UniqueFd& operator=(UniqueFd&& other) noexcept {
    std::swap(fd_, other.fd_);
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd() {
    if (fd_ >= 0) {
      close(fd_);
    }
  }
  int get() const { return fd_; }

 private:
  int fd_;
};

sockaddr_in Address(const std::string& ip, int port) {
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<std::uint16_t>(port));
  if (inet_pton(AF_INET, ip.c_str(), &address.sin_addr) != 1) {
    throw std::invalid_argument("bad ip " + ip);
  }
  return address;
}

struct Listener {
  UniqueFd fd;
  int port = 0;
};

// A TCP listener on ip:<any port>, opened inside `netns`.
Listener Listen(const std::string& netns, const std::string& ip) {
  return RunInNetns(netns, [&ip] {
    Listener listener{UniqueFd(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)), 0};
    sockaddr_in address = Address(ip, 0);
    if (listener.fd.get() < 0 || bind(listener.fd.get(), reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0 ||
        listen(listener.fd.get(), 8) != 0) {
      throw std::runtime_error("listen on " + ip + ": " + std::strerror(errno));
    }
    socklen_t length = sizeof(address);
    getsockname(listener.fd.get(), reinterpret_cast<sockaddr*>(&address), &length);
    listener.port = ntohs(address.sin_port);
    return listener;
  });
}

struct Connection {
  int error = 0;  // 0 when connected, else the errno
  UniqueFd fd;
};

// Connects from inside `netns` to ip:port, waiting at most kTimeoutMs.
Connection Connect(const std::string& netns, const std::string& ip, int port) {
  return RunInNetns(netns, [&ip, port] {
    Connection connection{0, UniqueFd(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0))};
    sockaddr_in address = Address(ip, port);
    if (connect(connection.fd.get(), reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0) {
      return connection;
    }
    if (errno != EINPROGRESS) {
      connection.error = errno;
      return connection;
    }
    pollfd waiting{connection.fd.get(), POLLOUT, 0};
    if (poll(&waiting, 1, kTimeoutMs) != 1) {
      connection.error = ETIMEDOUT;
      return connection;
    }
    socklen_t length = sizeof(connection.error);
    getsockopt(connection.fd.get(), SOL_SOCKET, SO_ERROR, &connection.error, &length);
    return connection;
  });
}

// Accepts one connection (waiting at most kTimeoutMs) and returns the peer's address.
std::string AcceptPeer(const Listener& listener) {
  pollfd waiting{listener.fd.get(), POLLIN, 0};
  if (poll(&waiting, 1, kTimeoutMs) != 1) {
    return "(nothing accepted)";
  }
  sockaddr_in peer{};
  socklen_t length = sizeof(peer);
  UniqueFd accepted(accept4(listener.fd.get(), reinterpret_cast<sockaddr*>(&peer), &length, SOCK_CLOEXEC));
  if (accepted.get() < 0) {
    return std::string("(accept failed: ") + std::strerror(errno) + ")";
  }
  char text[INET_ADDRSTRLEN] = {};
  inet_ntop(AF_INET, &peer.sin_addr, text, sizeof(text));
  return text;
}

// `from` opens a TCP connection to `to`'s address and `to` sees it coming from `from`'s address.
void ExpectTcp(const Endpoint& from, const Endpoint& to) {
  Listener listener = Listen(to.netns, to.ip);
  Connection connection = Connect(from.netns, to.ip, listener.port);
  ASSERT_EQ(connection.error, 0) << from.netns << " -> " << to.ip << ": " << std::strerror(connection.error);
  EXPECT_EQ(AcceptPeer(listener), from.ip) << from.netns << " -> " << to.netns;
}

std::vector<std::string> NetnsWithPrefix(const std::string& prefix) {
  std::vector<std::string> names;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator("/run/netns", error)) {
    std::string name = entry.path().filename().string();
    if (name.rfind(prefix + "-", 0) == 0) {
      names.push_back(name);
    }
  }
  std::sort(names.begin(), names.end());
  return names;
}

bool NetnsExists(const std::string& name) { return std::filesystem::exists("/run/netns/" + name); }

// Interface names inside `netns` ("" = this test's own namespace).
std::vector<std::string> LinkNames(const std::string& netns) {
  return RunInNetns(netns, [] {
    std::vector<std::string> names;
    struct if_nameindex* interfaces = if_nameindex();
    for (struct if_nameindex* i = interfaces; i != nullptr && i->if_index != 0; ++i) {
      names.emplace_back(i->if_name);
    }
    if_freenameindex(interfaces);
    return names;
  });
}

// Mounts a fresh namespace at /run/netns/<name> the way `ip netns add` does, without the
// network's help, as another program or an older run would have left it.
void AddNetnsByHand(const std::string& name) {
  std::filesystem::create_directories("/run/netns");
  std::string path = "/run/netns/" + name;
  UniqueFd file(open(path.c_str(), O_RDONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0));
  ASSERT_GE(file.get(), 0) << path << ": " << std::strerror(errno);
  std::thread([&path] {
    ASSERT_EQ(unshare(CLONE_NEWNET), 0) << std::strerror(errno);
    ASSERT_EQ(mount("/proc/thread-self/ns/net", path.c_str(), "none", MS_BIND, nullptr), 0) << std::strerror(errno);
  }).join();
}

void RemoveNetnsByHand(const std::string& name) {
  std::string path = "/run/netns/" + name;
  umount2(path.c_str(), MNT_DETACH);
  unlink(path.c_str());
}

class PodNetworkTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!PodNetwork::Supported(&why)) {
      GTEST_SKIP() << "pod network not supported here: " << why;
    }
    options_.prefix = "rlt" + std::to_string(getpid());
  }

  NetworkOptions options_;
};

TEST_F(PodNetworkTest, PodsOnDifferentNodesConnectOverTcp) {
  auto network = PodNetwork::Create(options_);
  network->AddNode("node-a");
  network->AddNode("node-b");
  Endpoint a = network->AddPod("default/demo-0/uid-a");
  Endpoint b = network->AddPod("default/demo-1/uid-b");
  ExpectTcp(a, b);
  ExpectTcp(b, a);
}

TEST_F(PodNetworkTest, NodesPodsAndFabricReachEachOther) {
  auto network = PodNetwork::Create(options_);
  Endpoint node = network->AddNode("node-a");
  Endpoint pod = network->AddPod("default/demo-0/uid-a");
  Endpoint fabric = network->Fabric();
  ExpectTcp(node, pod);
  ExpectTcp(pod, node);
  ExpectTcp(fabric, pod);
  ExpectTcp(fabric, node);
  ExpectTcp(pod, fabric);
}

TEST_F(PodNetworkTest, ConnectHostLetsThisNamespaceReachPodsUntilDestroy) {
  auto network = PodNetwork::Create(options_);
  Endpoint pod = network->AddPod("default/demo-0/uid-a");
  const Endpoint host = network->ConnectHost();
  EXPECT_EQ(host.netns, "");
  EXPECT_EQ(network->ConnectHost().ip, host.ip);
  ExpectTcp(host, pod);
  ExpectTcp(pod, host);
  network->Destroy();
  for (const std::string& link : LinkNames("")) {
    EXPECT_NE(link.rfind(options_.prefix, 0), 0u) << link;
  }
}

TEST_F(PodNetworkTest, AutoSubnetsOfNetworksSideBySideDoNotOverlap) {
  NetworkOptions first = options_;
  first.subnet = "auto";
  first.connect_host = true;
  NetworkOptions second = first;
  second.prefix = options_.prefix + "b";
  auto a = PodNetwork::Create(first);
  auto b = PodNetwork::Create(second);
  const Endpoint pod_a = a->AddPod("default/a/uid-a");
  const Endpoint pod_b = b->AddPod("default/b/uid-b");
  EXPECT_EQ(pod_a.ip.rfind("10.", 0), 0u) << pod_a.ip;
  // Different /16s: the second octet differs.
  EXPECT_NE(pod_a.ip.substr(0, pod_a.ip.find('.', 3)), pod_b.ip.substr(0, pod_b.ip.find('.', 3)));
  ExpectTcp(Endpoint{"", a->ConnectHost().ip}, pod_a);
  ExpectTcp(Endpoint{"", b->ConnectHost().ip}, pod_b);
}

TEST_F(PodNetworkTest, EveryAddressIsUniqueAndInTheSubnet) {
  options_.subnet = "10.77.3.0/24";
  auto network = PodNetwork::Create(options_);
  std::vector<Endpoint> endpoints = {network->Fabric()};
  for (int i = 0; i < 3; ++i) {
    endpoints.push_back(network->AddNode("node-" + std::to_string(i)));
  }
  for (int i = 0; i < 5; ++i) {
    endpoints.push_back(network->AddPod("default/demo-" + std::to_string(i) + "/uid"));
  }
  std::set<std::string> ips;
  std::set<std::string> netns;
  for (const Endpoint& endpoint : endpoints) {
    EXPECT_EQ(endpoint.ip.rfind("10.77.3.", 0), 0u) << endpoint.ip;
    EXPECT_NE(endpoint.ip, "10.77.3.0");
    EXPECT_NE(endpoint.ip, "10.77.3.255");
    EXPECT_EQ(endpoint.netns.rfind(options_.prefix + "-", 0), 0u) << endpoint.netns;
    ips.insert(endpoint.ip);
    netns.insert(endpoint.netns);
  }
  EXPECT_EQ(ips.size(), endpoints.size());
  EXPECT_EQ(netns.size(), endpoints.size());
}

TEST_F(PodNetworkTest, LoopbackIsUpInEveryNamespace) {
  auto network = PodNetwork::Create(options_);
  for (const Endpoint& endpoint :
       {network->Fabric(), network->AddNode("node-a"), network->AddPod("default/demo-0/u")}) {
    ExpectTcp(Endpoint{endpoint.netns, "127.0.0.1"}, Endpoint{endpoint.netns, "127.0.0.1"});
  }
}

TEST_F(PodNetworkTest, BlockRouteFailsConnectsAndUnblockRouteRestoresThem) {
  auto network = PodNetwork::Create(options_);
  Endpoint a = network->AddPod("default/demo-0/uid-a");
  Endpoint b = network->AddPod("default/demo-1/uid-b");
  Endpoint c = network->AddPod("default/demo-2/uid-c");
  Listener listener = Listen(b.netns, b.ip);

  network->BlockRoute(a, b.ip);
  network->BlockRoute(a, b.ip);  // twice is fine
  int error = Connect(a.netns, b.ip, listener.port).error;
  EXPECT_TRUE(error == EHOSTUNREACH || error == ENETUNREACH || error == EINVAL) << std::strerror(error);
  ExpectTcp(c, b);  // only a's route is blocked
  ExpectTcp(a, c);  // and only to b

  network->UnblockRoute(a, b.ip);
  network->UnblockRoute(a, b.ip);  // unblocking an open route does nothing
  ASSERT_EQ(Connect(a.netns, b.ip, listener.port).error, 0);
  EXPECT_EQ(AcceptPeer(listener), a.ip);
}

TEST_F(PodNetworkTest, RemovePodRemovesItsNamespaceAndLink) {
  auto network = PodNetwork::Create(options_);
  Endpoint kept = network->AddPod("default/demo-0/uid-a");
  std::size_t fabric_links = LinkNames(network->Fabric().netns).size();
  Endpoint removed = network->AddPod("default/demo-1/uid-b");
  ASSERT_TRUE(NetnsExists(removed.netns));
  EXPECT_EQ(LinkNames(network->Fabric().netns).size(), fabric_links + 1);

  network->RemovePod("default/demo-1/uid-b");
  EXPECT_FALSE(NetnsExists(removed.netns));
  EXPECT_EQ(LinkNames(network->Fabric().netns).size(), fabric_links);
  network->RemovePod("default/demo-1/uid-b");  // unknown now: nothing to do
  ExpectTcp(network->Fabric(), kept);

  Endpoint again = network->AddPod("default/demo-1/uid-b");
  EXPECT_NE(again.netns, removed.netns);
  ExpectTcp(kept, again);
}

TEST_F(PodNetworkTest, DestroyLeavesNoNamespaceOrLink) {
  auto network = PodNetwork::Create(options_);
  network->AddNode("node-a");
  network->AddPod("default/demo-0/uid-a");
  network->AddPod("default/demo-1/uid-b");
  EXPECT_EQ(NetnsWithPrefix(options_.prefix).size(), 4u);

  network->Destroy();
  EXPECT_EQ(NetnsWithPrefix(options_.prefix), std::vector<std::string>{});
  for (const std::string& link : LinkNames("")) {
    EXPECT_NE(link.rfind(options_.prefix, 0), 0u) << link;
  }
  network->Destroy();  // idempotent, and so is the destructor after it
  EXPECT_THROW(network->AddPod("default/demo-2/uid-c"), std::runtime_error);
}

TEST_F(PodNetworkTest, CreateRemovesWhatACrashedRunLeft) {
  const std::string other_prefix_netns = options_.prefix + "x-keep";
  {
    auto crashed = PodNetwork::Create(options_);
    crashed->AddNode("node-a");
    crashed->AddPod("default/demo-0/uid-a");
    crashed->AbandonForTest();
  }
  AddNetnsByHand(options_.prefix + "-stale");
  AddNetnsByHand(other_prefix_netns);
  ASSERT_EQ(NetnsWithPrefix(options_.prefix).size(), 4u);

  auto network = PodNetwork::Create(options_);
  EXPECT_EQ(NetnsWithPrefix(options_.prefix), std::vector<std::string>{network->Fabric().netns});
  EXPECT_TRUE(NetnsExists(other_prefix_netns)) << "another prefix's namespace was removed";
  RemoveNetnsByHand(other_prefix_netns);

  network->AddNode("node-a");
  Endpoint a = network->AddPod("default/demo-0/uid-a");
  Endpoint b = network->AddPod("default/demo-1/uid-b");
  ExpectTcp(a, b);
  ExpectTcp(network->Fabric(), a);
}

TEST_F(PodNetworkTest, PodsAddedAndRemovedFromManyThreadsGetDistinctWorkingNamespaces) {
  auto network = PodNetwork::Create(options_);
  constexpr int kThreads = 4;
  constexpr int kPodsPerThread = 3;
  std::mutex mu;
  std::vector<Endpoint> kept;
  std::vector<std::string> failures;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      try {
        for (int i = 0; i < kPodsPerThread; ++i) {
          std::string key = "default/demo-" + std::to_string(t) + "-" + std::to_string(i) + "/uid";
          Endpoint endpoint = network->AddPod(key);
          EXPECT_EQ(network->AddPod(key).netns, endpoint.netns);
          if (i == 0) {
            network->RemovePod(key);
            continue;
          }
          std::lock_guard lock(mu);
          kept.push_back(endpoint);
        }
      } catch (const std::exception& e) {
        std::lock_guard lock(mu);
        failures.push_back(e.what());
      }
    });
  }
  for (std::thread& thread : threads) {
    thread.join();
  }
  ASSERT_EQ(failures, std::vector<std::string>{});
  ASSERT_EQ(kept.size(), std::size_t{kThreads * (kPodsPerThread - 1)});
  std::set<std::string> ips;
  for (const Endpoint& endpoint : kept) {
    ips.insert(endpoint.ip);
  }
  EXPECT_EQ(ips.size(), kept.size());
  EXPECT_EQ(NetnsWithPrefix(options_.prefix).size(), kept.size() + 1);
  ExpectTcp(kept.front(), kept.back());
}

TEST_F(PodNetworkTest, AnyPodKeyMapsToASafeNamespaceName) {
  auto network = PodNetwork::Create(options_);
  const std::string key = "Default/../We ird;$(rm -rf)\\Name-with-a-very-long-tail-beyond-limits/uid-1";
  Endpoint pod = network->AddPod(key);
  EXPECT_EQ(network->AddPod(key).netns, pod.netns);
  EXPECT_TRUE(NetnsExists(pod.netns));
  for (char c : pod.netns.substr(options_.prefix.size())) {
    EXPECT_TRUE((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-') << pod.netns;
  }
  EXPECT_EQ(network->AddNode("node a").netns, network->AddNode("node a").netns);
  EXPECT_NE(network->AddNode("node a").netns, network->AddNode("node_a").netns);
}

TEST_F(PodNetworkTest, AFailedStepNamesTheCommandAndItsStderr) {
  auto network = PodNetwork::Create(options_);
  try {
    network->BlockRoute(Endpoint{options_.prefix + "-missing", ""}, "10.244.0.9");
    FAIL() << "expected an error";
  } catch (const std::runtime_error& e) {
    std::string message = e.what();
    EXPECT_NE(message.find("blocking 10.244.0.9"), std::string::npos) << message;
    EXPECT_NE(message.find("route replace blackhole"), std::string::npos) << message;
    EXPECT_NE(message.find("No such file or directory"), std::string::npos) << message;
  }
  // Routes outside this network's namespaces are never touched.
  EXPECT_THROW(network->BlockRoute(Endpoint{"", ""}, "10.244.0.9"), std::invalid_argument);
  EXPECT_THROW(network->BlockRoute(network->Fabric(), "10.244.0.9/8"), std::invalid_argument);
}

TEST(PodNetworkOptionsTest, CreateRejectsBadPrefixesAndSubnets) {
  for (const char* prefix : {"", "rl-x", "Rl", "1rl", "rl/x", "abcdefghijklmnopq"}) {
    EXPECT_THROW(PodNetwork::Create(NetworkOptions{prefix, "10.244.0.0/16"}), std::invalid_argument) << prefix;
  }
  for (const char* subnet :
       {"", "10.244.0.0", "10.244.0.0/7", "10.244.0.0/30", "10.244.0/16", "banana/16", "10.244.0.0/1x", "::1/64"}) {
    EXPECT_THROW(PodNetwork::Create(NetworkOptions{"rlbad", subnet}), std::invalid_argument) << subnet;
  }
}

TEST(RunInNetnsTest, ReturnsTheResultOrRethrows) {
  EXPECT_EQ(RunInNetns("", [] { return 42; }), 42);
  bool ran = false;
  RunInNetns("", [&ran] { ran = true; });
  EXPECT_TRUE(ran);
  EXPECT_THROW(RunInNetns("", [] { throw std::logic_error("from the thread"); }), std::logic_error);
  EXPECT_THROW(RunInNetns("rlt-no-such-namespace", [] {}), std::runtime_error);
  EXPECT_THROW(RunInNetns("../etc", [] {}), std::invalid_argument);
}

}  // namespace
}  // namespace ringleader::devcluster::kubelet
