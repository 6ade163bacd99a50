// The in-memory object store and its event history.
#include "tests/devcluster/store.h"

#include <stdexcept>

namespace ringleader::devcluster {
namespace {

std::string MetaString(const nlohmann::json& object, const char* field) {
  const auto meta = object.find("metadata");
  if (meta == object.end() || !meta->is_object()) {
    return "";
  }
  const auto value = meta->find(field);
  return value != meta->end() && value->is_string() ? value->get<std::string>() : "";
}

}  // namespace

const char* EventTypeName(EventType type) {
  switch (type) {
    case EventType::kAdded:
      return "ADDED";
    case EventType::kModified:
      return "MODIFIED";
    case EventType::kDeleted:
      return "DELETED";
  }
  return "ERROR";
}

Store::Store(std::size_t history_limit) : history_limit_(history_limit == 0 ? 1 : history_limit) {}

const nlohmann::json* Store::Txn::Get(const std::string& resource, const std::string& ns,
                                      const std::string& name) const {
  const auto by_resource = store_.objects_.find(resource);
  if (by_resource == store_.objects_.end()) {
    return nullptr;
  }
  const auto it = by_resource->second.find({ns, name});
  return it == by_resource->second.end() ? nullptr : &it->second;
}

std::vector<const nlohmann::json*> Store::Txn::List(const std::string& resource, const std::string& ns) const {
  std::vector<const nlohmann::json*> out;
  const auto by_resource = store_.objects_.find(resource);
  if (by_resource == store_.objects_.end()) {
    return out;
  }
  auto it = ns.empty() ? by_resource->second.begin() : by_resource->second.lower_bound({ns, ""});
  for (; it != by_resource->second.end(); ++it) {
    if (!ns.empty() && it->first.first != ns) {
      break;
    }
    out.push_back(&it->second);
  }
  return out;
}

std::vector<std::pair<std::string, const nlohmann::json*>> Store::Txn::All() const {
  std::vector<std::pair<std::string, const nlohmann::json*>> out;
  for (const auto& [resource, objects] : store_.objects_) {
    for (const auto& [key, object] : objects) {
      out.emplace_back(resource, &object);
    }
  }
  return out;
}

std::uint64_t Store::Txn::rv() const { return store_.rv_; }

nlohmann::json Store::Txn::Put(const std::string& resource, nlohmann::json object) {
  if (!writable_) {
    throw std::logic_error("Store::Txn::Put in a read transaction");
  }
  Key key{MetaString(object, "namespace"), MetaString(object, "name")};
  object["metadata"]["resourceVersion"] = std::to_string(++store_.rv_);
  auto& slot = store_.objects_[resource][key];
  nlohmann::json previous = std::move(slot);
  slot = object;
  const EventType type = previous.is_null() ? EventType::kAdded : EventType::kModified;
  store_.Record(resource, type, object, type == EventType::kModified ? std::move(previous) : nlohmann::json());
  return object;
}

nlohmann::json Store::Txn::Remove(const std::string& resource, const std::string& ns, const std::string& name) {
  if (!writable_) {
    throw std::logic_error("Store::Txn::Remove in a read transaction");
  }
  auto by_resource = store_.objects_.find(resource);
  if (by_resource == store_.objects_.end()) {
    return nullptr;
  }
  auto it = by_resource->second.find({ns, name});
  if (it == by_resource->second.end()) {
    return nullptr;
  }
  nlohmann::json object = std::move(it->second);
  by_resource->second.erase(it);
  object["metadata"]["resourceVersion"] = std::to_string(++store_.rv_);
  store_.Record(resource, EventType::kDeleted, object, nullptr);
  return object;
}

void Store::Record(std::string resource, EventType type, nlohmann::json object, nlohmann::json previous) {
  history_.push_back(std::make_shared<const StoredEvent>(
      StoredEvent{rv_, std::move(resource), type, std::move(object), std::move(previous)}));
  while (history_.size() > history_limit_) {
    compacted_rv_ = history_.front()->rv;
    history_.pop_front();
  }
}

void Store::Write(const std::function<void(Txn&)>& fn) {
  {
    std::lock_guard lock(mu_);
    Txn txn(*this, true);
    fn(txn);
  }
  changed_.notify_all();
}

void Store::Read(const std::function<void(const Txn&)>& fn) const {
  std::lock_guard lock(mu_);
  const Txn txn(const_cast<Store&>(*this), false);
  fn(txn);
}

std::uint64_t Store::CurrentRv() const {
  std::lock_guard lock(mu_);
  return rv_;
}

Store::Batch Store::WaitForEvents(std::uint64_t after, std::chrono::steady_clock::time_point deadline,
                                  const std::function<bool()>& stop) const {
  std::unique_lock lock(mu_);
  changed_.wait_until(lock, deadline, [&] { return rv_ > after || after < compacted_rv_ || stop(); });
  Batch batch;
  batch.rv = rv_;
  batch.oldest = compacted_rv_;
  if (after < compacted_rv_) {
    batch.expired = true;
    return batch;
  }
  // History is ordered by rv; skip what the watcher has already seen.
  auto it = history_.begin();
  if (!history_.empty() && after >= history_.front()->rv) {
    it += static_cast<std::ptrdiff_t>(after - history_.front()->rv + 1 > history_.size()
                                          ? history_.size()
                                          : after - history_.front()->rv + 1);
  }
  for (; it != history_.end(); ++it) {
    if ((*it)->rv > after) {
      batch.events.push_back(*it);
    }
  }
  return batch;
}

void Store::Compact() {
  {
    std::lock_guard lock(mu_);
    history_.clear();
    compacted_rv_ = rv_;
  }
  changed_.notify_all();
}

void Store::Wake() {
  { std::lock_guard lock(mu_); }
  changed_.notify_all();
}

}  // namespace ringleader::devcluster
