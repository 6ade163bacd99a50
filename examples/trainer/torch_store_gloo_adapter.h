// Gloo's rendezvous store interface on top of the TCPStore client, so the example trainer's Gloo
// mesh bootstraps through the store that rank 0's sidecar serves on MASTER_PORT, as PyTorch's
// ProcessGroupGloo does through its TCPStore (sidecar/app/gloo_store_adapter.h is the same for
// the native store).
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include <gloo/rendezvous/store.h>

#include "sidecar/rendezvous/torch_store_client.h"

namespace ringleader::examples {

// Gloo calls these from the communicator's constructor; a failure throws std::runtime_error
// whose message names the store and the missing keys, and Gloo passes it on.
class TorchStoreGlooAdapter final : public gloo::rendezvous::Store {
 public:
  // `client` must outlive the adapter. `timeout` bounds get() and the timeout-less wait().
  TorchStoreGlooAdapter(rendezvous::TorchStoreClient& client, std::chrono::milliseconds timeout);

  void set(const std::string& key, const std::vector<char>& data) override;
  // Waits for the key first: Gloo reads peers' addresses that may not be written yet.
  std::vector<char> get(const std::string& key) override;
  void wait(const std::vector<std::string>& keys) override;
  void wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) override;

 private:
  rendezvous::TorchStoreClient& client_;
  std::chrono::milliseconds timeout_;
};

}  // namespace ringleader::examples
