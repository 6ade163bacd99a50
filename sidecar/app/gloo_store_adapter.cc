#include "sidecar/app/gloo_store_adapter.h"

#include <stdexcept>
#include <string_view>

namespace ringleader::sidecar {
namespace {

std::string JoinKeys(const std::vector<std::string>& keys) {
  std::string text;
  for (const auto& key : keys) {
    text += (text.empty() ? "" : ", ") + key;
  }
  return text;
}

}  // namespace

GlooStoreAdapter::GlooStoreAdapter(rendezvous::StoreClient& client, std::chrono::milliseconds timeout)
    : client_(client), timeout_(timeout) {}

void GlooStoreAdapter::set(const std::string& key, const std::vector<char>& data) {
  const auto result = client_.Set(key, std::string_view(data.data(), data.size()));
  if (!result) {
    throw std::runtime_error(result.error());
  }
}

std::vector<char> GlooStoreAdapter::get(const std::string& key) {
  wait({key}, timeout_);
  const auto result = client_.Get(key);
  if (!result) {
    throw std::runtime_error(result.error());
  }
  if (!result.value()) {
    throw std::runtime_error("rendezvous store: key " + key + " vanished after it was written");
  }
  const std::string& value = *result.value();
  return std::vector<char>(value.begin(), value.end());
}

void GlooStoreAdapter::wait(const std::vector<std::string>& keys) { wait(keys, timeout_); }

void GlooStoreAdapter::wait(const std::vector<std::string>& keys,
                            const std::chrono::milliseconds& timeout) {
  const auto result = client_.Wait(keys, timeout);
  if (!result) {
    throw std::runtime_error(result.error());
  }
  if (result.value().timed_out) {
    throw std::runtime_error("rendezvous store: keys " + JoinKeys(result.value().missing_keys) +
                             " were not written within " + std::to_string(timeout.count()) + " ms");
  }
}

}  // namespace ringleader::sidecar
