// devcluster's Pod network: one network namespace per node and per Pod, all joined by a Linux
// bridge in a "fabric" namespace, so local processes get distinct addresses like Pods in a cluster.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <shared_mutex>
#include <string>
#include <type_traits>
#include <utility>

namespace ringleader::devcluster::kubelet {

struct NetworkOptions {
  // Every namespace is named "<prefix>-..."; lower-case letters and digits only (no '-', so one
  // prefix is never a prefix of another's names), at most 16 characters.
  std::string prefix = "rl";
  // IPv4 subnet (/8 to /29) that the fabric, node and Pod addresses come from; "auto" picks the
  // first 10.N.0.0/16 (N from 200) that no route of the caller's namespace overlaps, under a
  // machine-wide lock, so networks built side by side (parallel tests) never share one.
  std::string subnet = "10.244.0.0/16";
  // Connect the caller's namespace (ConnectHost) as part of Create, inside that lock.
  bool connect_host = false;
};

// A place to run processes or open sockets: a namespace under /run/netns and its address there.
struct Endpoint {
  std::string netns;  // "" = none (the caller's namespace)
  std::string ip;
};

// Owns the namespaces it creates. Each veth pair is created with one end in the fabric and the
// other in its node or Pod namespace (or, after ConnectHost, in the caller's namespace), so
// deleting the namespaces removes everything. One PodNetwork per prefix at a time. Thread-safe.
class PodNetwork {
  // Only Create can name it, so only Create constructs.
  struct PassKey {
    explicit PassKey() = default;
  };

 public:
  // Whether this process can build the network (root, `ip` found, `ip netns add` and a bridge in
  // it work); `why` (optional) says what is missing. The answer is computed once per process.
  static bool Supported(std::string* why);

  // Builds the fabric namespace with its bridge, after removing every namespace left with the
  // same prefix by an earlier run (a crashed devcluster). Throws std::invalid_argument for bad
  // options and std::runtime_error naming the step and `ip`'s stderr when a step fails.
  static std::unique_ptr<PodNetwork> Create(const NetworkOptions& options);

  PodNetwork(PassKey, std::string prefix, std::uint32_t network, int prefix_length);
  PodNetwork(const PodNetwork&) = delete;
  PodNetwork& operator=(const PodNetwork&) = delete;
  ~PodNetwork();

  // Removes every namespace this network created; later calls (and the destructor) do nothing.
  // Add* after Destroy throws. Processes still inside a Pod's namespace lose its network.
  void Destroy();

  // A node's namespace on the bridge with its own address; hostNetwork Pods run in it.
  // Calling it again for the same node returns the same endpoint.
  Endpoint AddNode(const std::string& node_name);
  // A Pod's own namespace on the bridge with its own address and loopback up. `pod_key` is any
  // string (e.g. "default/demo-0/<uid>"); calling again for the same key returns the same endpoint.
  Endpoint AddPod(const std::string& pod_key);
  // Removes the Pod's namespace and its link; an unknown key does nothing.
  void RemovePod(const std::string& pod_key);

  // Test faults: inside `from`, traffic to `ip` fails at once (a blackhole route), and back.
  // Blocking twice is fine; unblocking a route that is not blocked does nothing.
  void BlockRoute(const Endpoint& from, const std::string& ip);
  void UnblockRoute(const Endpoint& from, const std::string& ip);

  // The fabric namespace, with the bridge's address: run a prober or Prometheus here to reach
  // every node and Pod.
  Endpoint Fabric() const;

  // Puts the caller's namespace on the bridge too (a veth "<prefix>-host" with an address from
  // the subnet, so the kernel routes the subnet through it): an operator, a test or Prometheus
  // running here reaches every Pod, as in a cluster. Returns this side's address; calling it
  // again returns the same. The link goes with the fabric namespace.
  Endpoint ConnectHost();

  // Forgets every namespace without removing it, as if the process had crashed; the next
  // Create with the same prefix must clean up.
  void AbandonForTest();

 private:
  struct Member {
    Endpoint endpoint;
    std::string fabric_link;  // the veth end on the bridge, in the fabric namespace
    std::uint32_t address = 0;
    bool ready = false;  // false while being built by some thread
  };
  void Build();
  // Adds one member (kind "n" for a node, "p" for a Pod) under `key` in `members`.
  Endpoint Add(std::map<std::string, Member>& members, const std::string& key, const char* kind,
               const std::string& name_hint);
  // Builds the member's namespace and link; on failure removes what it made and throws.
  void Attach(const Member& member, const std::string& netns_kind);
  std::uint32_t AllocateAddressLocked();
  std::string AddressString(std::uint32_t address) const;

  const std::string prefix_;
  const std::uint32_t network_;  // host byte order
  const int prefix_length_;
  const std::string fabric_netns_;
  std::string fabric_ip_;

  // Add/Remove hold it shared for their whole run, Destroy exclusively, so nothing is being
  // built while Destroy removes namespaces.
  std::shared_mutex lifecycle_mu_;
  // Guards everything below.
  mutable std::mutex mu_;
  std::condition_variable member_ready_;
  bool destroyed_ = false;
  std::uint64_t next_id_ = 1;
  std::uint32_t next_host_ = 2;  // host part of the next address to try (1 is the fabric)
  std::set<std::uint32_t> used_addresses_;
  std::map<std::string, Member> nodes_;
  std::map<std::string, Member> pods_;
  std::string host_ip_;  // set by ConnectHost
};

namespace detail {
// Runs fn on a new thread that has joined `netns` and waits for it; exceptions (including a
// failure to join) come back to the caller.
void RunInNetnsThread(const std::string& netns, const std::function<void()>& fn);
}  // namespace detail

// Runs `fn` on a new thread inside the namespace /run/netns/<netns> and returns its result or
// rethrows its exception; "" runs it (on a new thread) in the caller's namespace. Sockets opened
// there stay in that namespace and may be used from any thread afterwards.
template <typename Fn>
std::invoke_result_t<Fn&> RunInNetns(const std::string& netns, Fn&& fn) {
  using Result = std::invoke_result_t<Fn&>;
  if constexpr (std::is_void_v<Result>) {
    detail::RunInNetnsThread(netns, [&fn] { fn(); });
  } else {
    std::optional<Result> result;
    detail::RunInNetnsThread(netns, [&fn, &result] { result.emplace(fn()); });
    return std::move(*result);
  }
}

}  // namespace ringleader::devcluster::kubelet
