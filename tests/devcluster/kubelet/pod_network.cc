// Builds devcluster's Pod network with the `ip` command (run directly, never through a shell) and
// joins namespaces for sockets with setns.
#include "tests/devcluster/kubelet/pod_network.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <spawn.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <iostream>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <vector>

extern char** environ;

namespace ringleader::devcluster::kubelet {
namespace {

constexpr char kBridge[] = "br0";
constexpr char kPodLink[] = "eth0";
constexpr std::size_t kMaxPrefixLength = 16;
constexpr std::size_t kMaxHintLength = 24;

struct CommandResult {
  int exit_code = -1;
  std::string err;
  std::string out;
};

const std::string& IpBinary() {
  static const std::string path = [] {
    for (const char* candidate : {"/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip"}) {
      if (access(candidate, X_OK) == 0) {
        return std::string(candidate);
      }
    }
    return std::string();
  }();
  return path;
}

std::string Describe(const std::vector<std::string>& args) {
  std::string text = "ip";
  for (const std::string& arg : args) {
    text += " " + arg;
  }
  return text;
}

// Runs `ip args...` and collects its output; throws only if it cannot be started.
CommandResult RunIp(const std::vector<std::string>& args) {
  const std::string& binary = IpBinary();
  if (binary.empty()) {
    throw std::runtime_error("pod network: the `ip` command (iproute2) was not found");
  }
  std::vector<char*> argv;
  std::string arg0 = "ip";
  argv.push_back(arg0.data());
  std::vector<std::string> copies = args;
  for (std::string& arg : copies) {
    argv.push_back(arg.data());
  }
  argv.push_back(nullptr);

  std::array<int, 2> out_pipe{};
  std::array<int, 2> err_pipe{};
  if (pipe2(out_pipe.data(), O_CLOEXEC) != 0) {
    throw std::runtime_error(std::string("pod network: pipe: ") + std::strerror(errno));
  }
  if (pipe2(err_pipe.data(), O_CLOEXEC) != 0) {
    int saved = errno;
    close(out_pipe[0]);
    close(out_pipe[1]);
    throw std::runtime_error(std::string("pod network: pipe: ") + std::strerror(saved));
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], 1);
  posix_spawn_file_actions_adddup2(&actions, err_pipe[1], 2);
  // Other threads may be opening descriptors without O_CLOEXEC; `ip` needs none of them.
  posix_spawn_file_actions_addclosefrom_np(&actions, 3);
  pid_t pid = 0;
  int spawn_error = posix_spawn(&pid, binary.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(out_pipe[1]);
  close(err_pipe[1]);
  if (spawn_error != 0) {
    close(out_pipe[0]);
    close(err_pipe[0]);
    throw std::runtime_error("pod network: cannot run " + binary + ": " + std::strerror(spawn_error));
  }

  CommandResult result;
  std::array<pollfd, 2> fds{{{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}}};
  std::array<std::string*, 2> sinks{&result.out, &result.err};
  int open_count = 2;
  while (open_count > 0) {
    if (poll(fds.data(), fds.size(), -1) < 0) {
      if (errno == EINTR) {
        continue;
      }
      break;
    }
    for (std::size_t i = 0; i < fds.size(); ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) {
        continue;
      }
      std::array<char, 4096> buffer{};
      ssize_t n = read(fds[i].fd, buffer.data(), buffer.size());
      if (n > 0) {
        sinks[i]->append(buffer.data(), static_cast<std::size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open_count;
      }
    }
  }
  for (pollfd& fd : fds) {
    if (fd.fd >= 0) {
      close(fd.fd);
    }
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) {
      throw std::runtime_error(std::string("pod network: waitpid: ") + std::strerror(errno));
    }
  }
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  while (!result.err.empty() && (result.err.back() == '\n' || result.err.back() == ' ')) {
    result.err.pop_back();
  }
  return result;
}

// Runs `ip args...`; a failure throws, naming the step, the command and its stderr.
std::string RunIpOrThrow(const std::string& step, const std::vector<std::string>& args) {
  CommandResult result = RunIp(args);
  if (result.exit_code != 0) {
    throw std::runtime_error("pod network: " + step + " failed: `" + Describe(args) + "` exited " +
                             std::to_string(result.exit_code) + ": " + result.err);
  }
  return result.out;
}

// Names of the namespaces under /run/netns, as `ip netns list` prints them ("name (id: 3)").
std::vector<std::string> ListNetns() {
  std::string out = RunIpOrThrow("listing network namespaces", {"netns", "list"});
  std::vector<std::string> names;
  std::istringstream lines(out);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream words(line);
    std::string name;
    if (words >> name) {
      names.push_back(name);
    }
  }
  return names;
}

void RemoveNetnsWithPrefix(const std::string& prefix) {
  std::string errors;
  for (const std::string& name : ListNetns()) {
    if (name.rfind(prefix + "-", 0) != 0) {
      continue;
    }
    CommandResult result = RunIp({"netns", "delete", name});
    if (result.exit_code != 0) {
      errors += " " + name + ": " + result.err + ";";
    }
  }
  if (!errors.empty()) {
    throw std::runtime_error("pod network: removing namespaces failed:" + errors);
  }
}

void ValidatePrefix(const std::string& prefix) {
  bool ok = !prefix.empty() && prefix.size() <= kMaxPrefixLength && prefix[0] >= 'a' && prefix[0] <= 'z';
  for (char c : prefix) {
    ok = ok && ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'));
  }
  if (!ok) {
    throw std::invalid_argument("pod network: prefix \"" + prefix +
                                "\" must be 1 to 16 lower-case letters and digits, "
                                "starting with a letter");
  }
}

std::pair<std::uint32_t, int> ParseSubnet(const std::string& subnet) {
  auto bad = [&subnet] {
    return std::invalid_argument("pod network: subnet \"" + subnet +
                                 "\" must be an IPv4 a.b.c.d/N with N from 8 to 29");
  };
  std::size_t slash = subnet.find('/');
  if (slash == std::string::npos || slash + 1 >= subnet.size() || subnet.size() - slash > 3) {
    throw bad();
  }
  int length = 0;
  for (std::size_t i = slash + 1; i < subnet.size(); ++i) {
    if (subnet[i] < '0' || subnet[i] > '9') {
      throw bad();
    }
    length = length * 10 + (subnet[i] - '0');
  }
  in_addr address{};
  if (length < 8 || length > 29 || inet_pton(AF_INET, subnet.substr(0, slash).c_str(), &address) != 1) {
    throw bad();
  }
  std::uint32_t mask = ~std::uint32_t{0} << (32 - length);
  return {ntohl(address.s_addr) & mask, length};
}

// An exclusive flock on a file every PodNetwork of this machine opens; released on destruction.
class MachineLock {
 public:
  MachineLock() : fd_(::open("/run/ringleader-pod-network.lock", O_RDWR | O_CREAT | O_CLOEXEC, 0600)) {
    if (fd_ < 0 || ::flock(fd_, LOCK_EX) != 0) {
      throw std::runtime_error(std::string("pod network: locking /run/ringleader-pod-network.lock: ") +
                               std::strerror(errno));
    }
  }
  ~MachineLock() { ::close(fd_); }
  MachineLock(const MachineLock&) = delete;
  MachineLock& operator=(const MachineLock&) = delete;

 private:
  int fd_;
};

// The destinations of the caller's IPv4 routes as (network, prefix length); "default" left out.
std::vector<std::pair<std::uint32_t, int>> RoutedNetworks() {
  const CommandResult routes = RunIp({"-4", "route", "show", "table", "all"});
  std::vector<std::pair<std::uint32_t, int>> networks;
  std::size_t start = 0;
  while (start < routes.out.size()) {
    const std::size_t end = std::min(routes.out.find('\n', start), routes.out.size());
    std::istringstream line(routes.out.substr(start, end - start));
    start = end + 1;
    std::string destination;
    line >> destination;
    // A route type (local, broadcast, blackhole ...) comes before the destination.
    for (const char* type : {"local", "broadcast", "blackhole", "unreachable", "prohibit", "unicast", "anycast"}) {
      if (destination == type) {
        line >> destination;
        break;
      }
    }
    if (destination.empty() || destination == "default") {
      continue;
    }
    if (destination.find('/') == std::string::npos) {
      destination += "/32";
    }
    in_addr address{};
    const std::size_t slash = destination.find('/');
    if (inet_pton(AF_INET, destination.substr(0, slash).c_str(), &address) != 1) {
      continue;
    }
    const int length = std::stoi(destination.substr(slash + 1));
    const std::uint32_t mask = length == 0 ? 0 : ~std::uint32_t{0} << (32 - length);
    networks.emplace_back(ntohl(address.s_addr) & mask, length);
  }
  return networks;
}

// The first 10.N.0.0/16, N from 200 to 254, that no route overlaps.
std::pair<std::uint32_t, int> FreeSubnet() {
  const auto routed = RoutedNetworks();
  for (std::uint32_t n = 200; n <= 254; ++n) {
    const std::uint32_t candidate = (10U << 24) | (n << 16);
    const bool taken = std::any_of(routed.begin(), routed.end(), [&](const auto& route) {
      const int shorter = std::min(route.second, 16);
      const std::uint32_t mask = shorter == 0 ? 0 : ~std::uint32_t{0} << (32 - shorter);
      return route.second > 0 && (route.first & mask) == (candidate & mask);
    });
    if (!taken) {
      return {candidate, 16};
    }
  }
  throw std::runtime_error("pod network: every 10.200-254.0.0/16 is already routed here");
}

// A readable, safe fragment of a node name or Pod key for a namespace name; uniqueness comes
// from the id placed before it.
std::string NameHint(const std::string& text) {
  std::string hint;
  for (char c : text) {
    if (hint.size() >= kMaxHintLength) {
      break;
    }
    if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')) {
      hint += c;
    } else if (c >= 'A' && c <= 'Z') {
      hint += static_cast<char>(c - 'A' + 'a');
    } else if (!hint.empty() && hint.back() != '-') {
      hint += '-';
    }
  }
  while (!hint.empty() && hint.back() == '-') {
    hint.pop_back();
  }
  return hint;
}

// The Pod's name from "namespace/name/uid" (or the whole key if it has another shape).
std::string PodNameOf(const std::string& pod_key) {
  std::size_t first = pod_key.find('/');
  std::size_t last = pod_key.rfind('/');
  if (first == std::string::npos || first == last) {
    return pod_key;
  }
  return pod_key.substr(first + 1, last - first - 1);
}

void CheckIp(const std::string& ip) {
  in_addr address{};
  if (inet_pton(AF_INET, ip.c_str(), &address) != 1) {
    throw std::invalid_argument("pod network: \"" + ip + "\" is not an IPv4 address");
  }
}

struct SupportResult {
  bool supported = false;
  std::string why;
};

SupportResult CheckSupport() {
  if (geteuid() != 0) {
    return {false, "needs root to create network namespaces"};
  }
  if (IpBinary().empty()) {
    return {false, "the `ip` command (iproute2) was not found"};
  }
  // Not under any prefix's "<prefix>-" names, so it never collides with a network's cleanup.
  const std::string probe = "rlprobe" + std::to_string(getpid());
  try {
    RunIpOrThrow("creating a probe namespace", {"netns", "add", probe});
  } catch (const std::exception& e) {
    return {false, e.what()};
  }
  SupportResult result{true, ""};
  try {
    RunIpOrThrow("creating a bridge", {"-n", probe, "link", "add", "probe0", "type", "bridge"});
    RunIpOrThrow("creating a veth pair",
                 {"-n", probe, "link", "add", "probe1", "type", "veth", "peer", "name", "probe2"});
  } catch (const std::exception& e) {
    result = {false, e.what()};
  }
  RunIp({"netns", "delete", probe});
  return result;
}

}  // namespace

bool PodNetwork::Supported(std::string* why) {
  static const SupportResult result = CheckSupport();
  if (why != nullptr) {
    *why = result.why;
  }
  return result.supported;
}

PodNetwork::PodNetwork(PassKey, std::string prefix, std::uint32_t network, int prefix_length)
    : prefix_(std::move(prefix)), network_(network), prefix_length_(prefix_length), fabric_netns_(prefix_ + "-fabric") {
  fabric_ip_ = AddressString(network_ + 1);
}

std::unique_ptr<PodNetwork> PodNetwork::Create(const NetworkOptions& options) {
  ValidatePrefix(options.prefix);
  // Held while a subnet is chosen and routed, so that two networks never pick the same one.
  const MachineLock lock;
  auto [network, length] = options.subnet == "auto" ? FreeSubnet() : ParseSubnet(options.subnet);
  auto pod_network = std::make_unique<PodNetwork>(PassKey(), options.prefix, network, length);
  pod_network->Build();
  if (options.connect_host) {
    pod_network->ConnectHost();
  }
  return pod_network;
}

void PodNetwork::Build() {
  try {
    // A crashed run leaves its namespaces mounted under /run/netns; their links go with them.
    RemoveNetnsWithPrefix(prefix_);
    // Namespaces are torn down in the background: a stale host link could outlive that a while.
    RunIp({"link", "delete", prefix_ + "-host"});
    RunIpOrThrow("creating the fabric namespace", {"netns", "add", fabric_netns_});
    RunIpOrThrow("bringing up the fabric's loopback", {"-n", fabric_netns_, "link", "set", "lo", "up"});
    RunIpOrThrow("creating the bridge",
                 {"-n", fabric_netns_, "link", "add", kBridge, "up", "type", "bridge", "forward_delay", "0"});
    RunIpOrThrow("addressing the bridge", {"-n", fabric_netns_, "addr", "add",
                                           fabric_ip_ + "/" + std::to_string(prefix_length_), "dev", kBridge});
  } catch (...) {
    RunIp({"netns", "delete", fabric_netns_});
    // Nothing is left for the destructor to remove.
    std::lock_guard lock(mu_);
    destroyed_ = true;
    throw;
  }
}

PodNetwork::~PodNetwork() {
  try {
    Destroy();
  } catch (const std::exception& e) {
    std::cerr << e.what() << "\n";
  }
}

void PodNetwork::Destroy() {
  std::unique_lock lifecycle(lifecycle_mu_);
  std::vector<std::string> netns_names;
  {
    std::lock_guard lock(mu_);
    if (destroyed_) {
      return;
    }
    destroyed_ = true;
    for (auto* members : {&pods_, &nodes_}) {
      for (const auto& [key, member] : *members) {
        netns_names.push_back(member.endpoint.netns);
      }
      members->clear();
    }
    used_addresses_.clear();
    if (!host_ip_.empty()) {
      // Gone at once, rather than when the fabric's namespace is torn down in the background.
      RunIp({"link", "delete", prefix_ + "-host"});
      host_ip_.clear();
    }
  }
  std::string errors;
  // The fabric last, so no member's link outlives the bridge it hangs on.
  netns_names.push_back(fabric_netns_);
  for (const std::string& name : netns_names) {
    CommandResult result = RunIp({"netns", "delete", name});
    if (result.exit_code != 0) {
      errors += " " + name + ": " + result.err + ";";
    }
  }
  if (!errors.empty()) {
    throw std::runtime_error("pod network: removing namespaces failed:" + errors);
  }
}

void PodNetwork::AbandonForTest() {
  std::unique_lock lifecycle(lifecycle_mu_);
  std::lock_guard lock(mu_);
  destroyed_ = true;
  pods_.clear();
  nodes_.clear();
}

Endpoint PodNetwork::AddNode(const std::string& node_name) { return Add(nodes_, node_name, "n", node_name); }

Endpoint PodNetwork::AddPod(const std::string& pod_key) { return Add(pods_, pod_key, "p", PodNameOf(pod_key)); }

Endpoint PodNetwork::Add(std::map<std::string, Member>& members, const std::string& key, const char* kind,
                         const std::string& name_hint) {
  std::shared_lock lifecycle(lifecycle_mu_);
  std::unique_lock lock(mu_);
  if (destroyed_) {
    throw std::runtime_error("pod network: adding \"" + key + "\" after Destroy");
  }
  for (auto it = members.find(key); it != members.end(); it = members.find(key)) {
    if (it->second.ready) {
      return it->second.endpoint;
    }
    member_ready_.wait(lock);
  }
  Member member;
  std::string id = kind + std::to_string(next_id_++);
  std::string hint = NameHint(name_hint);
  member.endpoint.netns = prefix_ + "-" + id + (hint.empty() ? "" : "-" + hint);
  member.address = AllocateAddressLocked();
  member.endpoint.ip = AddressString(member.address);
  member.fabric_link = "v" + id;
  members.emplace(key, member);
  lock.unlock();

  try {
    Attach(member, kind[0] == 'n' ? "node" : "pod");
  } catch (...) {
    lock.lock();
    members.erase(key);
    used_addresses_.erase(member.address);
    member_ready_.notify_all();
    throw;
  }
  lock.lock();
  members.at(key).ready = true;
  member_ready_.notify_all();
  return member.endpoint;
}

void PodNetwork::Attach(const Member& member, const std::string& netns_kind) {
  const std::string& netns = member.endpoint.netns;
  RunIpOrThrow("creating the " + netns_kind + " namespace " + netns, {"netns", "add", netns});
  try {
    // Made inside the namespaces, so no link ever appears in the caller's namespace.
    RunIpOrThrow("creating the " + netns_kind + "'s veth pair",
                 {"-n", fabric_netns_, "link", "add", member.fabric_link, "master", kBridge, "up", "type", "veth",
                  "peer", "name", kPodLink, "netns", netns});
    RunIpOrThrow("bringing up the " + netns_kind + "'s loopback", {"-n", netns, "link", "set", "lo", "up"});
    RunIpOrThrow(
        "addressing the " + netns_kind,
        {"-n", netns, "addr", "add", member.endpoint.ip + "/" + std::to_string(prefix_length_), "dev", kPodLink});
    RunIpOrThrow("bringing up the " + netns_kind + "'s link", {"-n", netns, "link", "set", kPodLink, "up"});
  } catch (...) {
    // A namespace is torn down in the background; deleting the link now frees its name at once.
    RunIp({"-n", fabric_netns_, "link", "delete", member.fabric_link});
    RunIp({"netns", "delete", netns});
    throw;
  }
}

void PodNetwork::RemovePod(const std::string& pod_key) {
  std::shared_lock lifecycle(lifecycle_mu_);
  std::unique_lock lock(mu_);
  auto it = pods_.find(pod_key);
  while (it != pods_.end() && !it->second.ready) {
    member_ready_.wait(lock);
    it = pods_.find(pod_key);
  }
  if (it == pods_.end()) {
    return;
  }
  Member member = it->second;
  pods_.erase(it);
  lock.unlock();

  // The link first: a process still inside the namespace would keep it (and the link) alive.
  CommandResult link = RunIp({"-n", fabric_netns_, "link", "delete", member.fabric_link});
  RunIpOrThrow("removing the pod namespace " + member.endpoint.netns, {"netns", "delete", member.endpoint.netns});
  if (link.exit_code != 0) {
    throw std::runtime_error("pod network: removing the link " + member.fabric_link + " failed: " + link.err);
  }
  lock.lock();
  used_addresses_.erase(member.address);
}

void PodNetwork::BlockRoute(const Endpoint& from, const std::string& ip) {
  CheckIp(ip);
  if (from.netns.rfind(prefix_ + "-", 0) != 0) {
    throw std::invalid_argument("pod network: cannot block routes in \"" + from.netns +
                                "\", not one of this network's namespaces");
  }
  std::shared_lock lifecycle(lifecycle_mu_);
  RunIpOrThrow("blocking " + ip + " from " + from.netns,
               {"-n", from.netns, "route", "replace", "blackhole", ip + "/32"});
}

void PodNetwork::UnblockRoute(const Endpoint& from, const std::string& ip) {
  CheckIp(ip);
  if (from.netns.rfind(prefix_ + "-", 0) != 0) {
    throw std::invalid_argument("pod network: cannot unblock routes in \"" + from.netns +
                                "\", not one of this network's namespaces");
  }
  std::shared_lock lifecycle(lifecycle_mu_);
  std::vector<std::string> args = {"-n", from.netns, "route", "delete", "blackhole", ip + "/32"};
  CommandResult result = RunIp(args);
  // ESRCH: there was no such route, which is what the caller wants.
  if (result.exit_code != 0 && result.err.find("No such process") == std::string::npos) {
    throw std::runtime_error("pod network: unblocking " + ip + " from " + from.netns + " failed: `" + Describe(args) +
                             "`: " + result.err);
  }
}

Endpoint PodNetwork::Fabric() const { return Endpoint{fabric_netns_, fabric_ip_}; }

Endpoint PodNetwork::ConnectHost() {
  std::unique_lock lifecycle(lifecycle_mu_);
  std::unique_lock lock(mu_);
  if (destroyed_) {
    throw std::runtime_error("pod network: connecting this machine after Destroy");
  }
  if (!host_ip_.empty()) {
    return Endpoint{"", host_ip_};
  }
  const std::string host_link = prefix_ + "-host";
  if (host_link.size() > 15) {  // IFNAMSIZ - 1
    throw std::invalid_argument("pod network: prefix \"" + prefix_ + "\" is too long for the link " + host_link);
  }
  const std::uint32_t address = AllocateAddressLocked();
  const std::string ip = AddressString(address);
  try {
    RunIpOrThrow("creating this machine's veth pair",
                 {"link", "add", host_link, "type", "veth", "peer", "name", "vhost", "netns", fabric_netns_});
    RunIpOrThrow("attaching this machine's link to the bridge",
                 {"-n", fabric_netns_, "link", "set", "vhost", "master", kBridge, "up"});
    RunIpOrThrow("addressing this machine's link",
                 {"addr", "add", ip + "/" + std::to_string(prefix_length_), "dev", host_link});
    RunIpOrThrow("bringing up this machine's link", {"link", "set", host_link, "up"});
  } catch (...) {
    RunIp({"link", "delete", host_link});
    used_addresses_.erase(address);
    throw;
  }
  host_ip_ = ip;
  return Endpoint{"", host_ip_};
}

std::uint32_t PodNetwork::AllocateAddressLocked() {
  // Host parts 1 (the fabric) .. size-2; the all-zeros and all-ones addresses are not hosts.
  const std::uint32_t last_host = (std::uint32_t{1} << (32 - prefix_length_)) - 2;
  // Addresses go round the subnet instead of reusing the lowest free one, so a new Pod does not
  // inherit a just-removed Pod's address while peers still hold its old neighbour entry.
  for (std::uint32_t tries = 0; tries < last_host; ++tries) {
    std::uint32_t host = next_host_;
    next_host_ = next_host_ >= last_host ? 2 : next_host_ + 1;
    if (host >= 2 && used_addresses_.insert(network_ + host).second) {
      return network_ + host;
    }
  }
  throw std::runtime_error("pod network: no free address left in the subnet");
}

std::string PodNetwork::AddressString(std::uint32_t address) const {
  in_addr raw{};
  raw.s_addr = htonl(address);
  std::array<char, INET_ADDRSTRLEN> text{};
  inet_ntop(AF_INET, &raw, text.data(), text.size());
  return text.data();
}

namespace detail {

void RunInNetnsThread(const std::string& netns, const std::function<void()>& fn) {
  if (netns.find('/') != std::string::npos || netns == "." || netns == "..") {
    throw std::invalid_argument("pod network: bad namespace name \"" + netns + "\"");
  }
  std::exception_ptr error;
  std::thread thread([&netns, &fn, &error] {
    try {
      if (!netns.empty()) {
        std::string path = "/run/netns/" + netns;
        int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
          throw std::runtime_error("pod network: open " + path + ": " + std::strerror(errno));
        }
        int rc = setns(fd, CLONE_NEWNET);
        int saved = errno;
        close(fd);
        if (rc != 0) {
          throw std::runtime_error("pod network: setns " + path + ": " + std::strerror(saved));
        }
      }
      fn();
    } catch (...) {
      error = std::current_exception();
    }
  });
  thread.join();
  if (error) {
    std::rethrow_exception(error);
  }
}

}  // namespace detail
}  // namespace ringleader::devcluster::kubelet
