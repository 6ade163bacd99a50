// Informer: reflectors per namespace feeding one cache, an index, and change handlers.
#include "operator/runtime/informer.h"

#include <utility>

namespace ringleader::runtime {

using nlohmann::json;

std::string ObjectKey(const json& object) {
  const json& meta = object.contains("metadata") ? object["metadata"] : json::object();
  const std::string name = meta.value("name", "");
  const std::string ns = meta.value("namespace", "");
  return ns.empty() ? name : ns + "/" + name;
}

// One namespace's reflector and the thread that runs it.
class Informer::NamespaceFeed final : public kube::ReflectorHandler {
 public:
  NamespaceFeed(Informer& owner, std::string ns)
      : owner_(owner),
        ns_(std::move(ns)),
        reflector_(owner.client_, ReflectorOptionsFor(owner.options_, ns_), *this) {}

  void Start() {
    thread_ = std::jthread([this](std::stop_token stop) { reflector_.Run(stop); });
  }
  void Stop() {
    thread_.request_stop();
    if (thread_.joinable()) {
      thread_.join();
    }
  }

  void OnReplace(const std::vector<json>& items, const std::string& /*resource_version*/) override {
    owner_.Replace(ns_, items);
    if (!synced_) {
      synced_ = true;
      --owner_.unsynced_;
    }
  }
  void OnEvent(const kube::WatchEvent& event) override {
    owner_.Apply(event);
    ++events_;
  }

  LoopProgress Progress() const {
    const kube::Reflector::Stats stats = reflector_.stats();
    return {owner_.options_.resource.plural + (ns_.empty() ? " in all namespaces" : " in namespace " + ns_),
            static_cast<std::uint64_t>(stats.lists) + static_cast<std::uint64_t>(stats.watches) +
                static_cast<std::uint64_t>(stats.errors) + events_.load()};
  }

 private:
  static kube::ReflectorOptions ReflectorOptionsFor(const InformerOptions& options, const std::string& ns) {
    kube::ReflectorOptions reflector;
    reflector.resource = options.resource;
    reflector.ns = ns;
    reflector.label_selector = options.label_selector;
    reflector.page_size = options.page_size;
    reflector.watch_timeout_seconds = options.watch_timeout_seconds;
    reflector.transform = options.transform;
    return reflector;
  }

  Informer& owner_;
  const std::string ns_;
  kube::Reflector reflector_;
  bool synced_ = false;
  std::atomic<std::uint64_t> events_{0};
  std::jthread thread_;
};

Informer::Informer(kube::Client& client, InformerOptions options)
    : client_(client), options_(std::move(options)) {}

Informer::~Informer() { Stop(); }

void Informer::AddHandler(ChangeHandler handler) { handlers_.push_back(std::move(handler)); }

void Informer::Start() {
  std::vector<std::string> namespaces = options_.namespaces;
  if (namespaces.empty()) {
    namespaces.emplace_back();
  }
  unsynced_ = static_cast<int>(namespaces.size());
  for (const std::string& ns : namespaces) {
    feeds_.push_back(std::make_unique<NamespaceFeed>(*this, ns));
  }
  for (auto& feed : feeds_) {
    feed->Start();
  }
}

void Informer::Stop() {
  for (auto& feed : feeds_) {
    feed->Stop();
  }
}

bool Informer::HasSynced() const { return !feeds_.empty() && unsynced_.load() == 0; }

std::vector<LoopProgress> Informer::Progress() const {
  std::vector<LoopProgress> progress;
  for (const auto& feed : feeds_) {
    progress.push_back(feed->Progress());
  }
  return progress;
}

ObjectPtr Informer::Get(const std::string& key) const {
  std::lock_guard lock(mutex_);
  const auto it = objects_.find(key);
  return it == objects_.end() ? nullptr : Load(it->second);
}

std::vector<ObjectPtr> Informer::List() const {
  std::lock_guard lock(mutex_);
  std::vector<ObjectPtr> all;
  all.reserve(objects_.size());
  for (const auto& [key, entry] : objects_) {
    all.push_back(Load(entry));
  }
  return all;
}

std::vector<ObjectPtr> Informer::ByIndex(const std::string& value) const {
  std::lock_guard lock(mutex_);
  std::vector<ObjectPtr> found;
  const auto it = index_.find(value);
  if (it != index_.end()) {
    for (const std::string& key : it->second) {
      found.push_back(Load(objects_.at(key)));
    }
  }
  return found;
}

std::size_t Informer::Size() const {
  std::lock_guard lock(mutex_);
  return objects_.size();
}

Informer::Entry Informer::Store(const ObjectPtr& object) const {
  if (!options_.compact) {
    return {object, {}};
  }
  Entry entry{nullptr, json::to_cbor(*object)};
  entry.cbor.shrink_to_fit();
  return entry;
}

ObjectPtr Informer::Load(const Entry& entry) {
  return entry.parsed ? entry.parsed : std::make_shared<const json>(json::from_cbor(entry.cbor));
}

void Informer::Put(std::string key, ObjectPtr object, std::vector<std::pair<ObjectPtr, ObjectPtr>>* changes) {
  ObjectPtr before;
  if (auto it = objects_.find(key); it != objects_.end()) {
    before = Load(it->second);
  }
  if (options_.index) {
    if (before) {
      for (const std::string& value : options_.index(*before)) {
        index_[value].erase(key);
        if (index_[value].empty()) {
          index_.erase(value);
        }
      }
    }
    for (const std::string& value : options_.index(*object)) {
      index_[value].insert(key);
    }
  }
  objects_[std::move(key)] = Store(object);
  changes->emplace_back(std::move(before), std::move(object));
}

void Informer::Remove(const std::string& key, std::vector<std::pair<ObjectPtr, ObjectPtr>>* changes) {
  const auto it = objects_.find(key);
  if (it == objects_.end()) {
    return;
  }
  ObjectPtr before = Load(it->second);
  if (options_.index) {
    for (const std::string& value : options_.index(*before)) {
      index_[value].erase(key);
      if (index_[value].empty()) {
        index_.erase(value);
      }
    }
  }
  objects_.erase(it);
  changes->emplace_back(std::move(before), nullptr);
}

void Informer::Replace(const std::string& ns, const std::vector<json>& items) {
  std::vector<std::pair<ObjectPtr, ObjectPtr>> changes;
  {
    std::lock_guard lock(mutex_);
    std::set<std::string> listed;
    for (const json& item : items) {
      std::string key = ObjectKey(item);
      listed.insert(key);
      Put(std::move(key), std::make_shared<const json>(item), &changes);
    }
    // Objects deleted while no watch was open exist only in the cache now: forget them.
    const std::string prefix = ns.empty() ? "" : ns + "/";
    std::vector<std::string> gone;
    for (const auto& [key, entry] : objects_) {
      if (key.starts_with(prefix) && !listed.contains(key)) {
        gone.push_back(key);
      }
    }
    for (const std::string& key : gone) {
      Remove(key, &changes);
    }
  }
  Notify(changes);
}

void Informer::Apply(const kube::WatchEvent& event) {
  std::vector<std::pair<ObjectPtr, ObjectPtr>> changes;
  {
    std::lock_guard lock(mutex_);
    std::string key = ObjectKey(event.object);
    if (event.type == kube::WatchEventType::kDeleted) {
      Remove(key, &changes);
    } else {
      Put(std::move(key), std::make_shared<const json>(event.object), &changes);
    }
  }
  Notify(changes);
}

void Informer::Notify(const std::vector<std::pair<ObjectPtr, ObjectPtr>>& changes) {
  for (const auto& [before, after] : changes) {
    for (const ChangeHandler& handler : handlers_) {
      handler(before, after);
    }
  }
}

}  // namespace ringleader::runtime
