// Flags and the optional YAML file, read through one table of settings so both forms check a
// value the same way and name the place that held it.
#include "operator/runtime/operator_config.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string_view>

#include <nlohmann/json.hpp>

#include "operator/yaml/yaml_to_json.h"

namespace ringleader::runtime {
namespace {

using nlohmann::json;

// What the file may hold for a setting; the text itself is then checked like a flag's value.
enum class Kind { kString, kInt, kNumber, kBool, kBindAddress, kList };

struct Setting {
  std::string_view flag;        // without the leading "--"
  std::string_view field;       // the YAML file's name for it
  std::string_view value_name;  // for the usage text
  std::string_view help;
  Kind kind;
  // Checks `text` and stores it; throws OperatorConfigError starting with `where`.
  void (*apply)(const std::string& text, const std::string& where, OperatorConfig& config);
  std::string (*show)(const OperatorConfig& config);
};

[[noreturn]] void Fail(const std::string& where, std::string_view expectation,
                       const std::string& text) {
  throw OperatorConfigError(where + ": must be " + std::string(expectation) + ", got \"" + text +
                            "\"");
}

std::optional<std::int64_t> ToInt(std::string_view text) {
  std::int64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || text.empty()) {
    return std::nullopt;
  }
  return value;
}

int IntAtLeast(const std::string& text, int minimum, std::string_view expectation,
               const std::string& where) {
  const std::optional<std::int64_t> value = ToInt(text);
  if (!value || *value < minimum || *value > std::numeric_limits<std::int32_t>::max()) {
    Fail(where, expectation, text);
  }
  return static_cast<int>(*value);
}

std::chrono::seconds Seconds(const std::string& text, const std::string& where) {
  return std::chrono::seconds(IntAtLeast(text, 1, "a whole number of seconds >= 1", where));
}

std::chrono::seconds SecondsOrOff(const std::string& text, const std::string& where) {
  return std::chrono::seconds(IntAtLeast(text, 0, "a whole number of seconds >= 0", where));
}

bool Bool(const std::string& text, const std::string& where) {
  if (text == "true") {
    return true;
  }
  if (text == "false") {
    return false;
  }
  Fail(where, "true or false", text);
}

std::string NonEmpty(const std::string& text, std::string_view expectation,
                     const std::string& where) {
  if (text.empty() || std::any_of(text.begin(), text.end(), [](char c) { return c <= ' '; })) {
    Fail(where, expectation, text);
  }
  return text;
}

// A Kubernetes namespace name: a DNS-1123 label.
bool IsNamespaceName(std::string_view name) {
  if (name.empty() || name.size() > 63 || name.front() == '-' || name.back() == '-') {
    return false;
  }
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
  });
}

std::string_view Trim(std::string_view text) {
  while (!text.empty() && text.front() == ' ') {
    text.remove_prefix(1);
  }
  while (!text.empty() && text.back() == ' ') {
    text.remove_suffix(1);
  }
  return text;
}

// "a,b" or "a": each a namespace name, appended once.
void AddNamespaces(const std::string& text, const std::string& where, OperatorConfig& config) {
  std::string_view rest = text;
  while (true) {
    const std::size_t comma = rest.find(',');
    const std::string name(Trim(rest.substr(0, comma)));
    if (!IsNamespaceName(name)) {
      Fail(where, "a namespace name (lowercase letters, digits and '-', at most 63) or a comma list "
                  "of them",
           text);
    }
    if (std::find(config.namespaces.begin(), config.namespaces.end(), name) ==
        config.namespaces.end()) {
      config.namespaces.push_back(name);
    }
    if (comma == std::string_view::npos) {
      break;
    }
    rest.remove_prefix(comma + 1);
  }
}

constexpr std::string_view kSecondsHelp = "SECONDS";

const std::vector<Setting>& Settings() {
  static const std::vector<Setting> settings = {
      {"kubeconfig", "kubeconfig", "PATH",
       "kubeconfig file; default $KUBECONFIG, else the in-cluster service account", Kind::kString,
       [](const std::string& text, const std::string&, OperatorConfig& c) { c.kubeconfig = text; },
       [](const OperatorConfig& c) { return c.kubeconfig; }},
      {"context", "context", "NAME", "kubeconfig context; default its current-context",
       Kind::kString,
       [](const std::string& text, const std::string&, OperatorConfig& c) { c.kube_context = text; },
       [](const OperatorConfig& c) { return c.kube_context; }},
      {"namespace", "namespaces", "NS",
       "namespace to reconcile (repeatable, or a comma list); default all namespaces", Kind::kList,
       AddNamespaces, [](const OperatorConfig&) { return std::string(); }},
      {"port-range", "portRange", "FIRST-LAST", "ports handed to jobs, in blocks of 4",
       Kind::kString,
       [](const std::string& text, const std::string& where, OperatorConfig& c) {
         std::string error;
         const std::optional<ports::PortRange> range = ports::ParsePortRange(text, &error);
         if (!range) {
           throw OperatorConfigError(where + ": " + error + ", got \"" + text + "\"");
         }
         c.port_range = *range;
       },
       [](const OperatorConfig& c) { return c.port_range.ToString(); }},
      {"sidecar-image", "sidecarImage", "IMAGE", "image of the injected sidecar", Kind::kString,
       [](const std::string& text, const std::string& where, OperatorConfig& c) {
         c.sidecar_image = NonEmpty(text, "an image reference", where);
       },
       [](const OperatorConfig& c) { return c.sidecar_image; }},
      {"cluster-domain", "clusterDomain", "DOMAIN", "the cluster's DNS domain", Kind::kString,
       [](const std::string& text, const std::string& where, OperatorConfig& c) {
         c.cluster_domain = NonEmpty(text, "a DNS domain", where);
       },
       [](const OperatorConfig& c) { return c.cluster_domain; }},
      {"default-host-network", "defaultHostNetwork", "true|false",
       "hostNetwork for jobs that leave spec.networking.hostNetwork unset", Kind::kBool,
       [](const std::string& text, const std::string& where, OperatorConfig& c) {
         c.default_host_network = Bool(text, where);
       },
       [](const OperatorConfig& c) { return std::string(c.default_host_network ? "true" : "false"); }},
      {"network-policies", "networkPolicies", "true|false",
       "give each job a NetworkPolicy that admits its store and rendezvous ports only from its own "
       "Pods (needs a network plugin that enforces NetworkPolicy with endPort)",
       Kind::kBool,
       [](const std::string& text, const std::string& where, OperatorConfig& c) {
         c.network_policies = Bool(text, where);
       },
       [](const OperatorConfig& c) { return std::string(c.network_policies ? "true" : "false"); }},
      {"leader-elect", "leaderElect", "true|false",
       "elect a leader through a Lease so only one replica reconciles", Kind::kBool,
       [](const std::string& text, const std::string& where, OperatorConfig& c) {
         c.leader_election = Bool(text, where);
       },
       [](const OperatorConfig& c) { return std::string(c.leader_election ? "true" : "false"); }},
      {"leader-election-namespace", "leaderElectionNamespace", "NS", "namespace of the Lease",
       Kind::kString,
       [](const std::string& text, const std::string& where, OperatorConfig& c) {
         if (!IsNamespaceName(text)) {
           Fail(where, "a namespace name", text);
         }
         c.leader_election_namespace = text;
       },
       [](const OperatorConfig& c) { return c.leader_election_namespace; }},
      {"leader-election-id", "leaderElectionId", "NAME", "name of the Lease", Kind::kString,
       [](const std::string& text, const std::string& where, OperatorConfig& c) {
         c.leader_election_id = NonEmpty(text, "a Lease name", where);
       },
       [](const OperatorConfig& c) { return c.leader_election_id; }},
      {"identity", "identity", "NAME", "this replica's name in the Lease; default hostname_pid",
       Kind::kString,
       [](const std::string& text, const std::string&, OperatorConfig& c) { c.identity = text; },
       [](const OperatorConfig& c) { return c.identity; }},
      {"lease-duration", "leaseDuration", kSecondsHelp,
       "how long a standby waits before taking over an unrenewed Lease", Kind::kInt,
       [](const std::string& text, const std::string& where, OperatorConfig& c) {
         c.lease_duration = Seconds(text, where);
       },
       [](const OperatorConfig& c) { return std::to_string(c.lease_duration.count()); }},
      {"renew-deadline", "renewDeadline", kSecondsHelp,
       "how long the leader keeps trying to renew before it gives up leading", Kind::kInt,
       [](const std::string& text, const std::string& where, OperatorConfig& c) {
         c.renew_deadline = Seconds(text, where);
       },
       [](const OperatorConfig& c) { return std::to_string(c.renew_deadline.count()); }},
      {"retry-period", "retryPeriod", kSecondsHelp, "time between Lease acquire/renew attempts",
       Kind::kInt,
       [](const std::string& text, const std::string& where, OperatorConfig& c) {
         c.retry_period = Seconds(text, where);
       },
       [](const OperatorConfig& c) { return std::to_string(c.retry_period.count()); }},
      {"metrics-bind-address", "metricsBindAddress", "ADDR",
       "Prometheus metrics address (host:port or :port; 0 disables)", Kind::kBindAddress,
       [](const std::string& text, const std::string& where, OperatorConfig& c) {
         ParseBindAddress(text, where);
         c.metrics_bind_address = text;
       },
       [](const OperatorConfig& c) { return c.metrics_bind_address; }},
      {"health-probe-bind-address", "healthProbeBindAddress", "ADDR",
       "/healthz and /readyz address (host:port or :port)", Kind::kBindAddress,
       [](const std::string& text, const std::string& where, OperatorConfig& c) {
         ParseBindAddress(text, where);
         c.health_bind_address = text;
       },
       [](const OperatorConfig& c) { return c.health_bind_address; }},
      {"workers", "workers", "N", "jobs reconciled at once", Kind::kInt,
       [](const std::string& text, const std::string& where, OperatorConfig& c) {
         c.workers = IntAtLeast(text, 1, "an integer >= 1", where);
       },
       [](const OperatorConfig& c) { return std::to_string(c.workers); }},
      {"kube-api-qps", "kubeApiQps", "Q", "steady API requests per second", Kind::kNumber,
       [](const std::string& text, const std::string& where, OperatorConfig& c) {
         double value = 0;
         const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
         if (text.empty() || ec != std::errc() || end != text.data() + text.size() ||
             !std::isfinite(value) || value <= 0) {
           Fail(where, "a number > 0", text);
         }
         c.kube_api_qps = value;
       },
       [](const OperatorConfig& c) {
         std::ostringstream out;
         out << c.kube_api_qps;
         return out.str();
       }},
      {"kube-api-burst", "kubeApiBurst", "N", "API requests allowed in a burst", Kind::kInt,
       [](const std::string& text, const std::string& where, OperatorConfig& c) {
         c.kube_api_burst = IntAtLeast(text, 1, "an integer >= 1", where);
       },
       [](const OperatorConfig& c) { return std::to_string(c.kube_api_burst); }},
      {"resync-period", "resyncPeriod", kSecondsHelp, "every job is reconciled at least this often",
       Kind::kInt,
       [](const std::string& text, const std::string& where, OperatorConfig& c) {
         c.resync_period = Seconds(text, where);
       },
       [](const OperatorConfig& c) { return std::to_string(c.resync_period.count()); }},
      {"summary-interval", "summaryInterval", kSecondsHelp,
       "how often a running job's rank-0 /summary is read into status.communication", Kind::kInt,
       [](const std::string& text, const std::string& where, OperatorConfig& c) {
         c.summary_interval = Seconds(text, where);
       },
       [](const OperatorConfig& c) { return std::to_string(c.summary_interval.count()); }},
      {"unschedulable-after", "unschedulableAfter", kSecondsHelp,
       "a job's Scheduled condition turns False once a current Pod is unscheduled this long", Kind::kInt,
       [](const std::string& text, const std::string& where, OperatorConfig& c) {
         c.unschedulable_after = Seconds(text, where);
       },
       [](const OperatorConfig& c) { return std::to_string(c.unschedulable_after.count()); }},
      {"provider-discovery-interval", "providerDiscoveryInterval", kSecondsHelp,
       "how often API discovery is asked which gang-scheduling providers (coscheduling, Volcano, Kueue) "
       "the cluster serves",
       Kind::kInt,
       [](const std::string& text, const std::string& where, OperatorConfig& c) {
         c.provider_discovery_interval = Seconds(text, where);
       },
       [](const OperatorConfig& c) { return std::to_string(c.provider_discovery_interval.count()); }},
      {"log-format", "logFormat", "json|text", "JSON lines or plain text on stderr", Kind::kString,
       [](const std::string& text, const std::string& where, OperatorConfig& c) {
         if (text != "json" && text != "text") {
           Fail(where, "json or text", text);
         }
         c.json_logs = text == "json";
       },
       [](const OperatorConfig& c) { return std::string(c.json_logs ? "json" : "text"); }},
      {"liveness-reconcile-timeout", "livenessReconcileTimeout", kSecondsHelp,
       "/healthz fails while a worker is in one reconcile longer than this; 0: off", Kind::kInt,
       [](const std::string& text, const std::string& where, OperatorConfig& c) {
         c.liveness_reconcile_timeout = SecondsOrOff(text, where);
       },
       [](const OperatorConfig& c) { return std::to_string(c.liveness_reconcile_timeout.count()); }},
      {"liveness-informer-timeout", "livenessInformerTimeout", kSecondsHelp,
       "/healthz fails when an informer has not listed, watched or retried for this long "
       "(keep it above 330); 0: off",
       Kind::kInt,
       [](const std::string& text, const std::string& where, OperatorConfig& c) {
         c.liveness_informer_timeout = SecondsOrOff(text, where);
       },
       [](const OperatorConfig& c) { return std::to_string(c.liveness_informer_timeout.count()); }},
      {"liveness-queue-timeout", "livenessQueueTimeout", kSecondsHelp,
       "/healthz fails when a job key has been due this long while a worker waited as long; 0: off",
       Kind::kInt,
       [](const std::string& text, const std::string& where, OperatorConfig& c) {
         c.liveness_queue_timeout = SecondsOrOff(text, where);
       },
       [](const OperatorConfig& c) { return std::to_string(c.liveness_queue_timeout.count()); }},
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

const Setting* FindField(std::string_view field) {
  for (const Setting& setting : Settings()) {
    if (setting.field == field) {
      return &setting;
    }
  }
  return nullptr;
}

struct FlagValue {
  const Setting* setting;
  std::string value;
};

struct CommandLine {
  std::string config_file;
  std::vector<FlagValue> flags;
};

CommandLine SplitArgs(const std::vector<std::string>& args) {
  CommandLine line;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg.size() <= 2 || arg.compare(0, 2, "--") != 0) {
      throw OperatorConfigError("unexpected argument \"" + arg + "\" (flags start with --)");
    }
    const std::size_t equals = arg.find('=');
    const std::string name = arg.substr(2, equals == std::string::npos ? std::string::npos : equals - 2);
    const Setting* setting = FindFlag(name);
    if (setting == nullptr && name != "config") {
      throw OperatorConfigError("unknown flag --" + name);
    }
    std::string value;
    if (equals != std::string::npos) {
      value = arg.substr(equals + 1);
    } else if (i + 1 < args.size() && args[i + 1].compare(0, 2, "--") != 0) {
      value = args[++i];
    } else {
      throw OperatorConfigError("--" + name + ": missing value");
    }
    if (setting == nullptr) {
      if (value.empty()) {
        throw OperatorConfigError("--config: missing value");
      }
      line.config_file = value;
    } else {
      line.flags.push_back({setting, value});
    }
  }
  return line;
}

// The file's value as the text a flag would carry, after checking its YAML type.
std::string FileValueText(const Setting& setting, const json& value, const std::string& where) {
  const auto wrong = [&](std::string_view expectation) {
    throw OperatorConfigError(where + ": must be " + std::string(expectation) + ", got " +
                              value.dump(-1, ' ', false, json::error_handler_t::replace));
  };
  switch (setting.kind) {
    case Kind::kString:
    case Kind::kList:
      if (!value.is_string()) {
        wrong("a string");
      }
      return value.get<std::string>();
    case Kind::kBindAddress:
      if (value.is_number_integer()) {
        return value.dump();
      }
      if (!value.is_string()) {
        wrong("a string such as \":8080\"");
      }
      return value.get<std::string>();
    case Kind::kInt:
    case Kind::kNumber:
      if (!value.is_number()) {
        wrong("a number");
      }
      return value.dump();
    case Kind::kBool:
      if (!value.is_boolean()) {
        wrong("true or false");
      }
      return value.get<bool>() ? "true" : "false";
  }
  return std::string();
}

// Applies the file's settings; records where each one came from in `sources`.
void ApplyFile(const std::string& path, OperatorConfig& config,
               std::map<std::string_view, std::string>& sources) {
  json document;
  try {
    document = yaml::LoadYamlFile(path);
  } catch (const std::exception& error) {
    throw OperatorConfigError(error.what());
  }
  if (document.is_null()) {
    return;  // an empty file sets nothing
  }
  if (!document.is_object()) {
    throw OperatorConfigError(path + ": must be a mapping of settings such as \"workers: 4\"");
  }
  for (const auto& [field, value] : document.items()) {
    const std::string where = path + ": " + field;
    const Setting* setting = FindField(field);
    if (setting == nullptr) {
      throw OperatorConfigError(where + ": unknown field");
    }
    if (value.is_null()) {
      continue;  // "workers:" with nothing after it, as Kubernetes reads a null field
    }
    if (setting->kind == Kind::kList) {
      if (!value.is_array()) {
        throw OperatorConfigError(where + ": must be a list such as [team-a, team-b], got " +
                                  value.dump(-1, ' ', false, json::error_handler_t::replace));
      }
      config.namespaces.clear();
      for (std::size_t i = 0; i < value.size(); ++i) {
        const std::string item_where = where + "[" + std::to_string(i) + "]";
        setting->apply(FileValueText(*setting, value[i], item_where), item_where, config);
      }
    } else {
      setting->apply(FileValueText(*setting, value, where), where, config);
    }
    sources[setting->flag] = where;
  }
}

// Leader-election timings must nest: retry < renew < lease, as client-go requires.
void CheckTimings(const OperatorConfig& config,
                  const std::map<std::string_view, std::string>& sources) {
  const auto source = [&](std::string_view flag) -> const std::string* {
    const auto it = sources.find(flag);
    return it == sources.end() ? nullptr : &it->second;
  };
  const auto check = [&](std::string_view shorter_flag, std::chrono::seconds shorter,
                         std::string_view longer_flag, std::chrono::seconds longer) {
    if (shorter < longer) {
      return;
    }
    const std::string shorter_text = std::to_string(shorter.count());
    const std::string longer_text = std::to_string(longer.count());
    if (const std::string* where = source(shorter_flag); where != nullptr || source(longer_flag) == nullptr) {
      throw OperatorConfigError((where != nullptr ? *where : "--" + std::string(shorter_flag)) +
                                ": must be less than the " + std::string(longer_flag) + " (" +
                                longer_text + " s), got \"" + shorter_text + "\"");
    }
    throw OperatorConfigError(*source(longer_flag) + ": must be greater than the " +
                              std::string(shorter_flag) + " (" + shorter_text + " s), got \"" +
                              longer_text + "\"");
  };
  check("renew-deadline", config.renew_deadline, "lease-duration", config.lease_duration);
  check("retry-period", config.retry_period, "renew-deadline", config.renew_deadline);
}

}  // namespace

OperatorConfig ParseOperatorConfig(const std::vector<std::string>& args) {
  const CommandLine line = SplitArgs(args);
  OperatorConfig config;
  std::map<std::string_view, std::string> sources;
  if (!line.config_file.empty()) {
    ApplyFile(line.config_file, config, sources);
  }
  // Namespaces on the command line replace the file's list rather than adding to it.
  std::set<std::string_view> list_flags_seen;
  for (const FlagValue& flag : line.flags) {
    const std::string where = "--" + std::string(flag.setting->flag);
    if (flag.setting->kind == Kind::kList) {
      if (list_flags_seen.insert(flag.setting->flag).second) {
        config.namespaces.clear();
      }
      if (flag.value.empty()) {
        sources[flag.setting->flag] = where;
        continue;  // --namespace= : all namespaces, whatever the file says
      }
    }
    flag.setting->apply(flag.value, where, config);
    sources[flag.setting->flag] = where;
  }
  CheckTimings(config, sources);
  return config;
}

std::string OperatorConfigUsage() {
  const OperatorConfig defaults;
  std::ostringstream out;
  const auto line = [&](std::string_view flag, std::string_view value_name, std::string_view help,
                        const std::string& default_value) {
    std::string left = "  --" + std::string(flag) + " " + std::string(value_name);
    if (left.size() < 40) {
      left.resize(40, ' ');
    } else {
      left += ' ';
    }
    out << left << help;
    if (!default_value.empty()) {
      out << " (default " << default_value << ")";
    }
    out << "\n";
  };
  line("config", "FILE", "YAML file of settings (camelCase flag names); flags win over it", "");
  for (const Setting& setting : Settings()) {
    line(setting.flag, setting.value_name, setting.help, setting.show(defaults));
  }
  return out.str();
}

BindAddress ParseBindAddress(const std::string& text, const std::string& what) {
  const auto fail = [&]() {
    Fail(what, "HOST:PORT, :PORT or PORT with a port in 0-65535", text);
  };
  BindAddress address;
  std::string port_text = text;
  if (!text.empty() && text.front() == '[') {
    const std::size_t close = text.find("]:");
    if (close == std::string::npos || close == 1) {
      fail();
    }
    address.host = text.substr(1, close - 1);
    port_text = text.substr(close + 2);
  } else if (const std::size_t colon = text.rfind(':'); colon != std::string::npos) {
    address.host = text.substr(0, colon);
    port_text = text.substr(colon + 1);
    if (address.host.find(':') != std::string::npos) {
      fail();  // an IPv6 host needs brackets
    }
  }
  if (std::any_of(address.host.begin(), address.host.end(),
                  [](char c) { return c <= ' ' || c == '/' || c == '[' || c == ']'; })) {
    fail();
  }
  if (port_text.empty() || port_text.size() > 5 ||
      !std::all_of(port_text.begin(), port_text.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    fail();
  }
  address.port = std::stoi(port_text);
  if (address.port > 65535) {
    fail();
  }
  return address;
}

}  // namespace ringleader::runtime
