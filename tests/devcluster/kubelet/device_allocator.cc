// NodeDevices: the device manager's allocation and reuse rule over one Node's inventory.
#include "tests/devcluster/kubelet/device_allocator.h"

#include <cctype>
#include <iterator>
#include <optional>

#include "operator/api/quantity.h"

namespace ringleader::devcluster::kubelet {
namespace {

using nlohmann::json;

constexpr const char* kUnexpectedAdmissionError = "UnexpectedAdmissionError";
constexpr const char* kGpuEnv = "NVIDIA_VISIBLE_DEVICES";
constexpr const char* kOtherEnvPrefix = "RINGLEADER_DEVCLUSTER_DEVICES_";

std::vector<std::string> Indices(int count) {
  std::vector<std::string> ids;
  for (int i = 0; i < count; ++i) {
    ids.push_back(std::to_string(i));
  }
  return ids;
}

std::string Join(const std::vector<std::string>& ids) {
  std::string out;
  for (const std::string& id : ids) {
    out += (out.empty() ? "" : ",") + id;
  }
  return out;
}

const json& ResourceList(const json& container, const char* which) {
  static const json kEmpty = json::object();
  if (!container.contains("resources") || !container["resources"].is_object()) {
    return kEmpty;
  }
  const json& resources = container["resources"];
  return resources.contains(which) && resources[which].is_object() ? resources[which] : kEmpty;
}

bool IsRestartable(const json& init_container) { return init_container.value("restartPolicy", "") == "Always"; }

}  // namespace

DeviceInventory NodeDeviceInventory(const NodeConfig& config) {
  DeviceInventory inventory;
  if (config.gpus > 0) {
    inventory[kGpuResource] = Indices(config.gpus);
  }
  if (config.rdma > 0) {
    inventory[kRdmaResource] = Indices(config.rdma);
  }
  return inventory;
}

std::map<std::string, std::string> DeviceEnvironment(const ContainerDevices& devices) {
  std::map<std::string, std::string> env;
  for (const auto& [resource, ids] : devices) {
    if (resource == kGpuResource) {
      env[kGpuEnv] = Join(ids);
      continue;
    }
    std::string name = kOtherEnvPrefix;
    for (const char c : resource) {
      name += std::isalnum(static_cast<unsigned char>(c)) != 0
                  ? static_cast<char>(std::toupper(static_cast<unsigned char>(c)))
                  : '_';
    }
    env[name] = Join(ids);
  }
  return env;
}

NodeDevices::NodeDevices(DeviceInventory inventory) : inventory_(std::move(inventory)) {}

Admission NodeDevices::Allocate(const json& pod) {
  const std::string uid = pod.contains("metadata") ? pod["metadata"].value("uid", "") : "";
  if (const auto held = pods_.find(uid); held != pods_.end()) {
    return {.admitted = true, .devices = held->second, .reason = "", .message = ""};
  }
  std::map<std::string, std::set<std::string>> in_use;  // by every Pod, this one included
  for (const auto& [other_uid, containers] : pods_) {
    for (const auto& [container, devices] : containers) {
      for (const auto& [resource, ids] : devices) {
        in_use[resource].insert(ids.begin(), ids.end());
      }
    }
  }
  std::map<std::string, std::set<std::string>> reusable;  // this Pod's devicesToReuse
  PodDevices allocated;

  // One container's devices; nullopt with `error` set when the Node has too few.
  std::string error;
  const auto allocate = [&](const json& container) -> std::optional<ContainerDevices> {
    json wanted = ResourceList(container, "requests");
    for (const auto& [resource, quantity] : ResourceList(container, "limits").items()) {
      wanted[resource] = quantity;
    }
    ContainerDevices devices;
    for (const auto& [resource, quantity] : wanted.items()) {
      const auto inventory = inventory_.find(resource);
      if (inventory == inventory_.end()) {
        continue;  // not a device plugin resource
      }
      const std::string text = quantity.is_string() ? quantity.get<std::string>() : quantity.dump();
      const std::optional<std::int64_t> count = api::ParseIntegerQuantity(text);
      if (!count || *count < 0) {
        error = "invalid quantity for " + resource + ": \"" + text + "\"";
        return std::nullopt;
      }
      std::int64_t needed = *count;
      std::set<std::string> chosen;
      for (const std::string& id : inventory->second) {
        if (needed > 0 && reusable[resource].count(id) != 0) {
          chosen.insert(id);
          --needed;
        }
      }
      if (needed > 0) {
        std::vector<std::string> free;
        for (const std::string& id : inventory->second) {
          if (in_use[resource].count(id) == 0) {
            free.push_back(id);
          }
        }
        if (static_cast<std::int64_t>(free.size()) < needed) {
          error = "requested number of devices unavailable for " + resource + ". Requested: " +
                  std::to_string(needed) + ", Available: " + std::to_string(free.size());
          return std::nullopt;
        }
        for (std::int64_t i = 0; i < needed; ++i) {
          chosen.insert(free[static_cast<std::size_t>(i)]);
          in_use[resource].insert(free[static_cast<std::size_t>(i)]);
        }
      }
      std::vector<std::string> ids;
      for (const std::string& id : inventory->second) {  // in inventory order
        if (chosen.count(id) != 0) {
          ids.push_back(id);
        }
      }
      if (!ids.empty()) {
        devices[resource] = std::move(ids);
      }
    }
    return devices;
  };
  const auto refused = [&]() {
    return Admission{.admitted = false,
                     .devices = {},
                     .reason = kUnexpectedAdmissionError,
                     .message = "Allocate failed due to " + error + ", which is unexpected"};
  };
  const auto record = [&](const json& container, const ContainerDevices& devices, bool reuse) {
    for (const auto& [resource, ids] : devices) {
      for (const std::string& id : ids) {
        if (reuse) {
          reusable[resource].insert(id);
        } else {
          reusable[resource].erase(id);
        }
      }
    }
    if (!devices.empty()) {
      allocated[container.value("name", "")] = devices;
    }
  };

  const json& spec = pod.contains("spec") ? pod["spec"] : json::object();
  for (const json& container : spec.value("initContainers", json::array())) {
    const std::optional<ContainerDevices> devices = allocate(container);
    if (!devices) {
      return refused();
    }
    record(container, *devices, !IsRestartable(container));
  }
  for (const json& container : spec.value("containers", json::array())) {
    const std::optional<ContainerDevices> devices = allocate(container);
    if (!devices) {
      return refused();
    }
    record(container, *devices, false);
  }
  pods_[uid] = allocated;
  return {.admitted = true, .devices = std::move(allocated), .reason = "", .message = ""};
}

void NodeDevices::Retain(const std::set<std::string>& active) {
  for (auto it = pods_.begin(); it != pods_.end();) {
    it = active.count(it->first) == 0 ? pods_.erase(it) : std::next(it);
  }
}

std::set<std::string> NodeDevices::InUse(const std::string& resource) const {
  std::set<std::string> ids;
  for (const auto& [uid, containers] : pods_) {
    for (const auto& [container, devices] : containers) {
      if (const auto it = devices.find(resource); it != devices.end()) {
        ids.insert(it->second.begin(), it->second.end());
      }
    }
  }
  return ids;
}

}  // namespace ringleader::devcluster::kubelet
