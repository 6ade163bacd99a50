// ObjectFeed: a Reflector's lists and events applied to a map of objects.
#include "tests/devcluster/kubelet/object_feed.h"

namespace ringleader::devcluster::kubelet {

using nlohmann::json;

std::string ObjectKey(const json& object) {
  const json meta = object.is_object() ? object.value("metadata", json::object()) : json::object();
  const std::string name = meta.value("name", "");
  const std::string ns = meta.value("namespace", "");
  return ns.empty() ? name : ns + "/" + name;
}

ObjectFeed::ObjectFeed(kube::Client& client, kube::ReflectorOptions options, std::function<void()> on_change)
    : reflector_(client, std::move(options), *this), on_change_(std::move(on_change)) {
  thread_ = std::jthread([this](std::stop_token stop) { reflector_.Run(stop); });
}

ObjectFeed::~ObjectFeed() { Stop(); }

void ObjectFeed::Stop() {
  thread_.request_stop();
  if (thread_.joinable()) {
    thread_.join();
  }
}

std::vector<ObjectPtr> ObjectFeed::Objects() const {
  std::lock_guard lock(mu_);
  std::vector<ObjectPtr> all;
  all.reserve(objects_.size());
  for (const auto& [key, object] : objects_) {
    all.push_back(object);
  }
  return all;
}

ObjectPtr ObjectFeed::Get(const std::string& key) const {
  std::lock_guard lock(mu_);
  const auto it = objects_.find(key);
  return it == objects_.end() ? nullptr : it->second;
}

void ObjectFeed::OnReplace(const std::vector<json>& items, const std::string& /*resource_version*/) {
  {
    std::lock_guard lock(mu_);
    objects_.clear();
    for (const json& item : items) {
      objects_[ObjectKey(item)] = std::make_shared<const json>(item);
    }
  }
  synced_ = true;
  if (on_change_) {
    on_change_();
  }
}

void ObjectFeed::OnEvent(const kube::WatchEvent& event) {
  {
    std::lock_guard lock(mu_);
    const std::string key = ObjectKey(event.object);
    if (event.type == kube::WatchEventType::kDeleted) {
      objects_.erase(key);
    } else {
      objects_[key] = std::make_shared<const json>(event.object);
    }
  }
  if (on_change_) {
    on_change_();
  }
}

}  // namespace ringleader::devcluster::kubelet
