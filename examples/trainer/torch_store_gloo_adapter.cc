#include "examples/trainer/torch_store_gloo_adapter.h"

#include <stdexcept>
#include <string_view>

namespace ringleader::examples {

TorchStoreGlooAdapter::TorchStoreGlooAdapter(rendezvous::TorchStoreClient& client,
                                             std::chrono::milliseconds timeout)
    : client_(client), timeout_(timeout) {}

void TorchStoreGlooAdapter::set(const std::string& key, const std::vector<char>& data) {
  const auto result = client_.Set(key, std::string_view(data.data(), data.size()));
  if (!result) {
    throw std::runtime_error(result.error());
  }
}

std::vector<char> TorchStoreGlooAdapter::get(const std::string& key) {
  const auto result = client_.Get(key, timeout_);
  if (!result) {
    throw std::runtime_error(result.error());
  }
  return std::vector<char>(result.value().begin(), result.value().end());
}

void TorchStoreGlooAdapter::wait(const std::vector<std::string>& keys) { wait(keys, timeout_); }

void TorchStoreGlooAdapter::wait(const std::vector<std::string>& keys,
                                 const std::chrono::milliseconds& timeout) {
  const auto result = client_.Wait(keys, timeout);
  if (!result) {
    throw std::runtime_error(result.error());
  }
  if (result.value().timed_out) {
    std::string missing;
    for (const std::string& key : result.value().missing_keys) {
      missing += (missing.empty() ? "" : ", ") + client_.key_prefix() + key;
    }
    throw std::runtime_error(client_.store_name() + ": keys " + missing + " were not written within " +
                             std::to_string(timeout.count()) + " ms");
  }
}

}  // namespace ringleader::examples
