// Parsing NCCL's INFO lines into a transport summary; the formats are listed in the header.
#include "sidecar/collectives/nccl_transport.h"

#include <algorithm>
#include <array>
#include <fstream>
#include <set>
#include <system_error>
#include <tuple>
#include <utility>

namespace ringleader::collectives {
namespace {

// Caps on what the parser keeps, whatever the input holds.
constexpr std::size_t kMaxProcesses = 4096;
constexpr std::size_t kMaxConnections = std::size_t{1} << 16;
constexpr std::size_t kMaxDevicesPerProcess = 64;
constexpr std::size_t kMaxNetDevsUsedPerProcess = 256;
constexpr std::size_t kMaxNameBytes = 64;
constexpr std::size_t kMaxSourceBytes = 512;
constexpr std::size_t kMaxListedFiles = 65536;
constexpr std::size_t kMaxLabelDevices = 4;
constexpr std::size_t kMaxLabelIntraPaths = 2;

constexpr std::string_view kInfoMarker = "NCCL INFO ";

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) {
    s.remove_prefix(1);
  }
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) {
    s.remove_suffix(1);
  }
  return s;
}

bool Consume(std::string_view& s, std::string_view prefix) {
  if (!s.starts_with(prefix)) {
    return false;
  }
  s.remove_prefix(prefix.size());
  return true;
}

// A non-negative decimal of at most 9 digits, so it cannot overflow an int.
std::optional<int> ConsumeInt(std::string_view& s) {
  std::size_t digits = 0;
  int value = 0;
  while (digits < s.size() && s[digits] >= '0' && s[digits] <= '9') {
    if (digits == 9) {
      return std::nullopt;
    }
    value = value * 10 + (s[digits] - '0');
    ++digits;
  }
  if (digits == 0) {
    return std::nullopt;
  }
  s.remove_prefix(digits);
  return value;
}

// Skips "[...]" (a device number or bus id) at the front of `s`.
bool ConsumeBracketed(std::string_view& s) {
  if (s.empty() || s.front() != '[') {
    return false;
  }
  const std::size_t close = s.find(']');
  if (close == std::string_view::npos) {
    return false;
  }
  s.remove_prefix(close + 1);
  return true;
}

// A name as NCCL prints it: short, printable, no spaces unless `spaces` (a net plugin's name,
// e.g. "AWS Libfabric").
bool IsName(std::string_view s, bool spaces = false) {
  if (s.empty() || s.size() > kMaxNameBytes) {
    return false;
  }
  return std::all_of(s.begin(), s.end(), [spaces](char c) {
    return (c > ' ' && c < 0x7f) || (spaces && c == ' ');
  });
}

// NCCL's internal IB transport is "IB"; NVIDIA's ext-net plugins call themselves IBext_vN.
bool IsIbNetwork(std::string_view name) { return name.starts_with("IB"); }

std::vector<std::string_view> SplitOn(std::string_view s, char separator) {
  std::vector<std::string_view> parts;
  while (true) {
    const std::size_t at = s.find(separator);
    if (at == std::string_view::npos) {
      if (!s.empty()) {
        parts.push_back(s);
      }
      return parts;
    }
    if (at > 0) {
      parts.push_back(s.substr(0, at));
    }
    s.remove_prefix(at + 1);
  }
}

// "host:pid" from the prefix "[timestamp] host:pid:tid [dev]"; empty when it is not there.
std::string_view ProcessKey(std::string_view prefix) {
  prefix = Trim(prefix);
  if (!prefix.empty() && prefix.back() == ']') {
    const std::size_t open = prefix.rfind('[');
    if (open == std::string_view::npos) {
      return {};
    }
    prefix = Trim(prefix.substr(0, open));
  }
  const std::size_t space = prefix.rfind(' ');
  if (space != std::string_view::npos) {
    prefix.remove_prefix(space + 1);
  }
  const std::size_t tid = prefix.rfind(':');
  if (tid == std::string_view::npos || tid == 0) {
    return {};
  }
  const std::string_view host_pid = prefix.substr(0, tid);
  const std::size_t pid = host_pid.rfind(':');
  if (pid == std::string_view::npos || pid == 0 || !IsName(host_pid)) {
    return {};
  }
  std::string_view digits = host_pid.substr(pid + 1);
  if (!ConsumeInt(digits) || !digits.empty()) {
    return {};
  }
  return host_pid;
}

struct IndexedIbDevice {
  int index = 0;
  NcclIbDevice device;
};

struct IndexedInterface {
  int index = 0;
  NcclSocketInterface interface;
};

// What one process (host:pid, or one source without prefixes) logged.
struct Process {
  std::string network;          // from "Using network" / "Assigned NET plugin"
  std::string channel_network;  // from its NET connections, when it never named one
  std::vector<IndexedIbDevice> ib_devices;
  std::vector<IndexedInterface> interfaces;
  std::set<std::pair<std::string, int>> net_devs_used;  // (net plugin, device index)
};

// " [0]mlx5_0:1/IB [1]{mlx5_2:1/IB, mlx5_3:1/IB} [RO]; OOB eth0:10.0.0.1<0>" (braces: a merged
// device of the ext-net plugins).
std::vector<IndexedIbDevice> ParseIbDevices(std::string_view list) {
  list = list.substr(0, list.find(';'));
  std::vector<IndexedIbDevice> devices;
  std::optional<int> group;
  for (std::string_view token : SplitOn(list, ' ')) {
    std::optional<int> index = group;
    if (token.front() == '[') {
      token.remove_prefix(1);
      index = ConsumeInt(token);
      if (!index || !Consume(token, "]")) {
        continue;  // "[RO]"
      }
    }
    if (!index) {
      continue;
    }
    if (Consume(token, "{")) {
      group = index;
    }
    while (!token.empty() && (token.back() == ',' || token.back() == '}')) {
      if (token.back() == '}') {
        group.reset();
      }
      token.remove_suffix(1);
    }
    const std::size_t colon = token.find(':');
    if (colon == std::string_view::npos) {
      continue;
    }
    NcclIbDevice device;
    device.name = std::string(token.substr(0, colon));
    token.remove_prefix(colon + 1);
    const std::optional<int> port = ConsumeInt(token);
    if (!port || !Consume(token, "/") || !IsName(device.name)) {
      continue;
    }
    const std::string_view link = token.substr(0, token.find('/'));
    if (!IsName(link)) {
      continue;
    }
    device.port = *port;
    device.link_layer = std::string(link);
    devices.push_back({*index, std::move(device)});
  }
  return devices;
}

// " [0]eth0:10.1.2.3<0> [1]eth1:fe80::1%eth1<0>"
std::vector<IndexedInterface> ParseSocketInterfaces(std::string_view list) {
  std::vector<IndexedInterface> interfaces;
  for (std::string_view token : SplitOn(list, ' ')) {
    if (!Consume(token, "[")) {
      continue;
    }
    const std::optional<int> index = ConsumeInt(token);
    if (!index || !Consume(token, "]")) {
      continue;
    }
    const std::size_t colon = token.find(':');
    const std::size_t port = token.rfind('<');
    if (colon == std::string_view::npos || port == std::string_view::npos || port <= colon) {
      continue;
    }
    NcclSocketInterface interface{std::string(token.substr(0, colon)),
                                  std::string(token.substr(colon + 1, port - colon - 1))};
    if (IsName(interface.name) && IsName(interface.address)) {
      interfaces.push_back({*index, std::move(interface)});
    }
  }
  return interfaces;
}

struct Path {
  std::string key;       // "NET/IB/GDRDMA", "P2P/CUMEM/read", "SHM"
  std::string network;   // NET only
  int net_dev = -1;      // NET only
  bool gdr = false;
};

// The path after "via ", reduced to what tells transports apart: NET's device index, proxy rank,
// "(PCI)" and "/Shared" and P2P/indirect's intermediate rank are dropped.
std::optional<Path> ParsePath(std::string_view via) {
  Path path;
  if (Consume(via, "NET/")) {
    const std::size_t slash = via.find('/');
    const std::string_view name = via.substr(0, slash);
    if (slash == std::string_view::npos || !IsName(name, /*spaces=*/true)) {
      return std::nullopt;
    }
    via.remove_prefix(slash + 1);
    const std::optional<int> dev = ConsumeInt(via);
    if (!dev) {
      return std::nullopt;
    }
    path.network = std::string(name);
    path.net_dev = *dev;
    path.gdr = via.find("/GDRDMA") != std::string_view::npos;
    path.key = "NET/" + path.network + (path.gdr ? "/GDRDMA" : "");
    return path;
  }
  if (Consume(via, "P2P/")) {
    std::string_view mechanism;
    if (Consume(via, "direct pointer")) {
      mechanism = "direct";
    } else if (Consume(via, "indirect/")) {
      mechanism = "indirect";
      if (!ConsumeInt(via) || !ConsumeBracketed(via)) {
        return std::nullopt;
      }
    } else {
      mechanism = via.substr(0, via.find('/'));
      if (mechanism != "CUMEM" && mechanism != "MNNVL" && mechanism != "IPC") {
        return std::nullopt;
      }
      via.remove_prefix(mechanism.size());
    }
    bool read = false;
    bool copy_engine = false;
    for (std::string_view flag : SplitOn(via, '/')) {
      read = read || flag == "read";
      copy_engine = copy_engine || flag == "CE";
    }
    path.key = "P2P/" + std::string(mechanism) + (read ? "/read" : "") + (copy_engine ? "/CE" : "");
    return path;
  }
  if (Consume(via, "SHM/")) {
    const std::vector<std::string_view> sides = SplitOn(via, '/');
    if (sides.size() != 2) {
      return std::nullopt;
    }
    for (std::string_view side : sides) {
      if (side != "direct" && side != "CE") {
        return std::nullopt;
      }
    }
    path.key = (sides[0] == "CE" || sides[1] == "CE") ? "SHM/CE" : "SHM";
    return path;
  }
  return std::nullopt;
}

struct Connection {
  std::string identity;  // channel, connector and peers: a send and its receive log the same
  Path path;
};

// "00/0 : 0[0] -> 8[0] [send] via NET/IB/0/GDRDMA" or "00 : 0[0] -> 1[1] via SHM/direct/direct"
std::optional<Connection> ParseChannel(std::string_view line) {
  const std::optional<int> channel = ConsumeInt(line);
  if (!channel) {
    return std::nullopt;
  }
  int connector = 0;
  if (Consume(line, "/")) {
    const std::optional<int> parsed = ConsumeInt(line);
    if (!parsed) {
      return std::nullopt;
    }
    connector = *parsed;
  }
  if (!Consume(line, " : ")) {
    return std::nullopt;
  }
  const std::optional<int> from = ConsumeInt(line);
  if (!from || !ConsumeBracketed(line) || !Consume(line, " -> ")) {
    return std::nullopt;
  }
  const std::optional<int> to = ConsumeInt(line);
  if (!to || !ConsumeBracketed(line)) {
    return std::nullopt;
  }
  Consume(line, " [send]") || Consume(line, " [receive]");
  if (!Consume(line, " via ")) {
    return std::nullopt;
  }
  std::optional<Path> path = ParsePath(Trim(line));
  if (!path) {
    return std::nullopt;
  }
  Connection connection;
  connection.identity = std::to_string(*channel) + "/" + std::to_string(connector) + ":" +
                        std::to_string(*from) + ">" + std::to_string(*to) + ":" + path->key;
  connection.path = std::move(*path);
  return connection;
}

// "mlx5_2" before "mlx5_10": digit runs compare as numbers.
bool NaturalLess(std::string_view a, std::string_view b) {
  while (!a.empty() && !b.empty()) {
    const bool a_digit = a.front() >= '0' && a.front() <= '9';
    const bool b_digit = b.front() >= '0' && b.front() <= '9';
    if (a_digit && b_digit) {
      const std::size_t a_end = std::min(a.find_first_not_of("0123456789"), a.size());
      const std::size_t b_end = std::min(b.find_first_not_of("0123456789"), b.size());
      const std::string_view a_run = a.substr(0, a_end);
      const std::string_view b_run = b.substr(0, b_end);
      if (a_run.size() != b_run.size()) {
        return a_run.size() < b_run.size();  // no leading zeros in device names
      }
      if (a_run != b_run) {
        return a_run < b_run;
      }
      a.remove_prefix(a_end);
      b.remove_prefix(b_end);
    } else {
      if (a.front() != b.front()) {
        return a.front() < b.front();
      }
      a.remove_prefix(1);
      b.remove_prefix(1);
    }
  }
  return a.size() < b.size();
}

template <typename Item, typename Key>
void AddDistinct(std::vector<Item>& items, const Item& item, Key key) {
  const auto same = [&](const Item& seen) { return key(seen) == key(item); };
  if (std::none_of(items.begin(), items.end(), same)) {
    items.push_back(item);
  }
}

std::string Join(const std::vector<std::string>& parts, std::string_view separator) {
  std::string joined;
  for (const std::string& part : parts) {
    if (!joined.empty()) {
      joined += separator;
    }
    joined += part;
  }
  return joined;
}

// "mlx5_0:1, mlx5_1:1/RoCE, +3 more" and the like, at most kMaxLabelDevices names.
std::vector<std::string> LabelNames(std::vector<std::string> names) {
  if (names.size() > kMaxLabelDevices) {
    const std::size_t more = names.size() - kMaxLabelDevices;
    names.resize(kMaxLabelDevices);
    names.push_back("+" + std::to_string(more) + " more");
  }
  return names;
}

}  // namespace

int NcclTransportSummary::NetConnections() const {
  int total = 0;
  for (const auto& [path, count] : connections) {
    if (path.starts_with("NET/")) {
      total += count;
    }
  }
  return total;
}

struct NcclLogParser::State {
  NcclLogLimits limits;
  std::string source;
  std::size_t source_bytes = 0;
  bool source_cut = false;  // the byte cap ended this source mid-line
  std::string line;
  bool skipping_long_line = false;

  std::map<std::string, Process, std::less<>> processes;
  std::set<std::string, std::less<>> connection_identities;
  std::map<std::string, int> connections;
  std::string version;
  bool ib_found_no_device = false;
  bool gdr = false;
  bool nvls_available = false;
  bool nvls_used = false;
  bool truncated = false;
  std::size_t lines = 0;

  Process* ProcessFor(std::string_view key) {
    if (auto it = processes.find(key); it != processes.end()) {
      return &it->second;
    }
    if (processes.size() >= kMaxProcesses) {
      truncated = true;
      return nullptr;
    }
    return &processes.emplace(std::string(key), Process{}).first->second;
  }

  void ParseLine(std::string_view text) {
    const std::size_t marker = text.find(kInfoMarker);
    if (marker == std::string_view::npos) {
      // NCCL before 2.9 printed its version without the INFO prefix.
      std::string_view raw = Trim(text);
      if (Consume(raw, "NCCL version ")) {
        SetVersion(raw);
      }
      return;
    }
    ++lines;
    std::string_view message = Trim(text.substr(marker + kInfoMarker.size()));
    std::string_view key = ProcessKey(text.substr(0, marker));
    if (key.empty()) {
      key = source;
    }
    if (Consume(message, "Channel ")) {
      AddConnection(message, key);
    } else if (Consume(message, "NCCL version ")) {
      SetVersion(message);
    } else if (Consume(message, "Using network ")) {
      SetNetwork(key, message);
    } else if (Consume(message, "Assigned NET plugin ")) {
      if (message.ends_with(" to comm")) {
        message.remove_suffix(std::string_view(" to comm").size());
        SetNetwork(key, message);
      }
    } else if (message.starts_with("NET/IB : No device found")) {
      ib_found_no_device = true;
    } else if (Consume(message, "NET/IB : Using")) {
      if (Process* process = ProcessFor(key)) {
        for (IndexedIbDevice& device : ParseIbDevices(message)) {
          if (process->ib_devices.size() >= kMaxDevicesPerProcess) {
            truncated = true;
            break;
          }
          AddDistinct(process->ib_devices, device, [](const IndexedIbDevice& d) {
            return std::tie(d.index, d.device.name, d.device.port);
          });
        }
      }
    } else if (Consume(message, "NET/Socket : Using")) {
      if (Process* process = ProcessFor(key)) {
        for (IndexedInterface& interface : ParseSocketInterfaces(message)) {
          if (process->interfaces.size() >= kMaxDevicesPerProcess) {
            truncated = true;
            break;
          }
          AddDistinct(process->interfaces, interface, [](const IndexedInterface& i) {
            return std::tie(i.index, i.interface.name);
          });
        }
      }
    } else if (message.starts_with("NVLS multicast support is available")) {
      nvls_available = true;
    } else if (message.starts_with("NVLS comm ")) {
      nvls_used = true;
    }
  }

  void SetVersion(std::string_view text) {
    const std::string_view token = text.substr(0, text.find(' '));
    if (IsName(token) && token.front() >= '0' && token.front() <= '9') {
      version = std::string(token);
    }
  }

  void SetNetwork(std::string_view key, std::string_view name) {
    name = Trim(name);
    if (!IsName(name, /*spaces=*/true)) {
      return;
    }
    if (Process* process = ProcessFor(key)) {
      process->network = std::string(name);
    }
  }

  void AddConnection(std::string_view text, std::string_view key) {
    std::optional<Connection> connection = ParseChannel(text);
    if (!connection) {
      return;
    }
    const Path& path = connection->path;
    if (!path.network.empty()) {
      gdr = gdr || path.gdr;
      if (Process* process = ProcessFor(key)) {
        if (process->channel_network.empty()) {
          process->channel_network = path.network;
        }
        if (process->net_devs_used.size() < kMaxNetDevsUsedPerProcess) {
          process->net_devs_used.emplace(path.network, path.net_dev);
        }
      }
    }
    if (connection_identities.contains(connection->identity)) {
      return;
    }
    if (connection_identities.size() >= kMaxConnections) {
      truncated = true;
      return;
    }
    connection_identities.insert(connection->identity);
    ++connections[path.key];
  }

  void EndLine() {
    if (!skipping_long_line) {
      ParseLine(line);
    }
    line.clear();
    skipping_long_line = false;
  }
};

NcclLogParser::NcclLogParser(NcclLogLimits limits) : state_(std::make_unique<State>()) {
  state_->limits = limits;
}
NcclLogParser::~NcclLogParser() = default;
NcclLogParser::NcclLogParser(NcclLogParser&&) noexcept = default;
NcclLogParser& NcclLogParser::operator=(NcclLogParser&&) noexcept = default;

void NcclLogParser::Feed(std::string_view chunk, std::string_view source) {
  State& state = *state_;
  if (source != state.source) {
    EndSource();
    state.source = std::string(source.substr(0, kMaxSourceBytes));
  }
  const std::size_t room = state.limits.max_bytes_per_file - state.source_bytes;
  if (chunk.size() > room) {
    chunk = chunk.substr(0, room);
    state.truncated = true;
    state.source_cut = true;
  }
  state.source_bytes += chunk.size();
  while (!chunk.empty()) {
    const std::size_t newline = chunk.find('\n');
    const std::string_view piece = chunk.substr(0, newline);
    if (!state.skipping_long_line) {
      if (state.line.size() + piece.size() > state.limits.max_line_bytes) {
        state.line.clear();
        state.skipping_long_line = true;
        state.truncated = true;
      } else {
        state.line.append(piece);
      }
    }
    if (newline == std::string_view::npos) {
      break;
    }
    state.EndLine();
    chunk.remove_prefix(newline + 1);
  }
}

void NcclLogParser::EndSource() {
  State& state = *state_;
  if (!state.source_cut && !state.line.empty()) {
    state.EndLine();  // a last line without a newline; a line the cap cut is not trusted
  }
  state.line.clear();
  state.skipping_long_line = false;
  state.source_bytes = 0;
  state.source_cut = false;
}

NcclTransportSummary NcclLogParser::Summary() const {
  const State& state = *state_;
  NcclTransportSummary summary;
  summary.nccl_version = state.version;
  summary.ib_found_no_device = state.ib_found_no_device;
  summary.gpudirect_rdma = state.gdr;
  summary.nvls_available = state.nvls_available;
  summary.nvls_used = state.nvls_used;
  summary.connections = state.connections;
  summary.lines = state.lines;
  summary.truncated = state.truncated;

  std::map<std::string, int> process_counts;
  std::vector<NcclIbDevice> listed_ib;
  std::vector<NcclSocketInterface> listed_interfaces;
  const auto ib_key = [](const NcclIbDevice& d) { return std::tie(d.name, d.port); };
  const auto interface_key = [](const NcclSocketInterface& i) {
    return std::tie(i.name, i.address);
  };
  for (const auto& [key, process] : state.processes) {
    const std::string& network =
        process.network.empty() ? process.channel_network : process.network;
    if (!network.empty()) {
      ++process_counts[network];
      ++summary.processes;
      summary.socket_processes += network == "Socket" ? 1 : 0;
    }
    for (const IndexedIbDevice& device : process.ib_devices) {
      AddDistinct(listed_ib, device.device, ib_key);
      for (const auto& [net, index] : process.net_devs_used) {
        if (IsIbNetwork(net) && index == device.index) {
          AddDistinct(summary.ib_devices, device.device, ib_key);
        }
      }
    }
    for (const IndexedInterface& interface : process.interfaces) {
      AddDistinct(listed_interfaces, interface.interface, interface_key);
      if (process.net_devs_used.contains({"Socket", interface.index})) {
        AddDistinct(summary.socket_interfaces, interface.interface, interface_key);
      }
    }
  }
  if (summary.ib_devices.empty()) {
    summary.ib_devices = std::move(listed_ib);
  }
  if (summary.socket_interfaces.empty()) {
    summary.socket_interfaces = std::move(listed_interfaces);
  }
  std::sort(summary.ib_devices.begin(), summary.ib_devices.end(),
            [](const NcclIbDevice& a, const NcclIbDevice& b) {
              return NaturalLess(a.name, b.name) || (a.name == b.name && a.port < b.port);
            });
  std::stable_sort(summary.socket_interfaces.begin(), summary.socket_interfaces.end(),
                   [](const NcclSocketInterface& a, const NcclSocketInterface& b) {
                     return NaturalLess(a.name, b.name);
                   });
  int most = 0;
  for (const auto& [network, count] : process_counts) {
    summary.networks.push_back(network);
    if (count > most) {
      most = count;
      summary.network = network;
    }
  }
  return summary;
}

NcclTransportSummary SummariseNcclDebugText(std::string_view text, const NcclLogLimits& limits) {
  NcclLogParser parser(limits);
  parser.Feed(text);
  parser.EndSource();
  return parser.Summary();
}

NcclTransportSummary SummariseNcclDebugFiles(const std::vector<std::filesystem::path>& files,
                                             const NcclLogLimits& limits) {
  NcclLogParser parser(limits);
  bool skipped = files.size() > limits.max_files;
  std::array<char, 64 * 1024> buffer{};
  for (std::size_t i = 0; i < files.size() && i < limits.max_files; ++i) {
    std::ifstream in(files[i], std::ios::binary);
    if (!in) {
      skipped = true;
      continue;
    }
    const std::string source = files[i].filename().string();
    // One byte more than the cap tells the parser the file was cut.
    std::size_t left = std::max(limits.max_bytes_per_file, limits.max_bytes_per_file + 1);
    while (left > 0 && in) {
      in.read(buffer.data(), static_cast<std::streamsize>(std::min(left, buffer.size())));
      const auto got = static_cast<std::size_t>(in.gcount());
      if (got == 0) {
        break;
      }
      parser.Feed(std::string_view(buffer.data(), got), source);
      left -= got;
    }
    if (in.bad()) {
      skipped = true;
    }
    parser.EndSource();
  }
  NcclTransportSummary summary = parser.Summary();
  summary.truncated = summary.truncated || skipped;
  return summary;
}

std::vector<std::filesystem::path> FindNcclDebugFiles(const std::filesystem::path& dir,
                                                      std::string_view name_prefix,
                                                      std::size_t max_files) {
  std::vector<std::filesystem::path> files;
  std::error_code error;
  std::filesystem::directory_iterator it(dir, error);
  for (std::size_t seen = 0; !error && it != std::filesystem::directory_iterator() &&
                             seen < kMaxListedFiles;
       it.increment(error), ++seen) {
    std::error_code type_error;
    if (it->is_regular_file(type_error) &&
        it->path().filename().string().starts_with(name_prefix)) {
      files.push_back(it->path());
    }
  }
  std::sort(files.begin(), files.end());
  if (files.size() > max_files) {
    files.resize(max_files);
  }
  return files;
}

std::string NcclTransportLabel(const NcclTransportSummary& summary) {
  // Networks that carried connections, the chosen one first; the chosen ones when no connection
  // was logged (the INIT subsystem off, or one rank alone).
  std::vector<std::string> networks;
  for (const auto& [path, count] : summary.connections) {
    std::string_view name = path;
    if (Consume(name, "NET/")) {
      if (name.ends_with("/GDRDMA")) {
        name.remove_suffix(std::string_view("/GDRDMA").size());
      }
      AddDistinct(networks, std::string(name), [](const std::string& n) { return n; });
    }
  }
  if (summary.connections.empty()) {
    networks = summary.networks;
  }
  std::stable_partition(networks.begin(), networks.end(),
                        [&](const std::string& n) { return n == summary.network; });

  std::vector<std::string> parts;
  for (const std::string& network : networks) {
    std::vector<std::string> details;
    if (IsIbNetwork(network)) {
      for (const NcclIbDevice& device : summary.ib_devices) {
        details.push_back(device.name + ":" + std::to_string(device.port) +
                          (device.link_layer == "RoCE" ? "/RoCE" : ""));
      }
    } else if (network == "Socket") {
      for (const NcclSocketInterface& interface : summary.socket_interfaces) {
        AddDistinct(details, interface.name, [](const std::string& n) { return n; });
      }
    }
    details = LabelNames(std::move(details));
    const bool gdr = summary.connections.contains("NET/" + network + "/GDRDMA") ||
                     (summary.connections.empty() && summary.gpudirect_rdma);
    if (gdr) {
      details.push_back("GDRDMA");
    }
    parts.push_back("NET/" + network + (details.empty() ? "" : " (" + Join(details, ", ") + ")"));
  }

  std::vector<std::pair<int, std::string>> intra;
  for (const auto& [path, count] : summary.connections) {
    if (!path.starts_with("NET/")) {
      intra.emplace_back(count, path);
    }
  }
  std::stable_sort(intra.begin(), intra.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  for (std::size_t i = 0; i < intra.size() && i < kMaxLabelIntraPaths; ++i) {
    parts.push_back(intra[i].second);
  }
  if (summary.nvls_used) {
    parts.emplace_back("NVLS");
  }
  return Join(parts, " + ");
}

std::optional<std::string> RdmaFallbackReason(const NcclTransportSummary& summary,
                                              bool asked_for_rdma) {
  if (!asked_for_rdma) {
    return std::nullopt;
  }
  const bool socket_connections = summary.connections.contains("NET/Socket");
  if (summary.socket_processes == 0 && !socket_connections) {
    return std::nullopt;
  }
  std::string reason = "the job asked for RDMA, but NCCL used NET/Socket";
  std::vector<std::string> names;
  for (const NcclSocketInterface& interface : summary.socket_interfaces) {
    AddDistinct(names, interface.name, [](const std::string& n) { return n; });
  }
  if (!names.empty()) {
    reason += " over " + Join(LabelNames(std::move(names)), ", ");
  }
  if (summary.socket_processes > 0) {
    reason += " in " + std::to_string(summary.socket_processes) + " of " +
              std::to_string(summary.processes) + " processes";
  }
  if (summary.ib_found_no_device) {
    reason += " (NET/IB found no device)";
  } else if (summary.ib_devices.empty()) {
    reason += " (NCCL listed no IB device: check the RDMA resources and NCCL_IB_DISABLE)";
  }
  return reason;
}

}  // namespace ringleader::collectives
