// Gloo's rendezvous store interface on top of our authenticated store client, so Gloo (and
// NCCL's unique id) bootstrap through rank 0's rendezvous server instead of a second service.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include <gloo/rendezvous/store.h>

#include "sidecar/rendezvous/store_client.h"

namespace ringleader::sidecar {

// Gloo calls these from the communicator's constructor; a failure throws std::runtime_error
// whose message names the missing keys or the unreachable server, and Gloo passes it on.
class GlooStoreAdapter final : public gloo::rendezvous::Store {
 public:
  // `client` must outlive the adapter. `timeout` bounds get() and the timeout-less wait().
  GlooStoreAdapter(rendezvous::StoreClient& client, std::chrono::milliseconds timeout);

  void set(const std::string& key, const std::vector<char>& data) override;
  // Waits for the key first: Gloo reads peers' addresses that may not be written yet.
  std::vector<char> get(const std::string& key) override;
  void wait(const std::vector<std::string>& keys) override;
  void wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) override;

 private:
  rendezvous::StoreClient& client_;
  std::chrono::milliseconds timeout_;
};

}  // namespace ringleader::sidecar
