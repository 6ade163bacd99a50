// Options for a rendezvous server and its clients on 127.0.0.1, and a condition poll, shared by
// the store's tests.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

#include "sidecar/rendezvous/store_client.h"
#include "sidecar/rendezvous/store_server.h"

namespace ringleader::rendezvous::testing {

// A server for `world_size` ranks on 127.0.0.1:`port` (0: ephemeral) accepting `token`.
ServerOptions LocalServerOptions(const std::string& token, std::uint32_t world_size,
                                 std::uint16_t port = 0);

// A client of 127.0.0.1:`port` as `rank`, connecting until now + `timeout`, each op bounded by
// `io_timeout`.
ClientOptions LocalClientOptions(const std::string& token, std::uint16_t port, std::uint32_t rank,
                                 std::uint32_t world_size,
                                 std::chrono::milliseconds timeout = std::chrono::seconds(10),
                                 std::chrono::milliseconds io_timeout = std::chrono::seconds(10));

// Polls cond until it holds or `within` passes; true if it held.
bool Eventually(const std::function<bool()>& cond,
                std::chrono::milliseconds within = std::chrono::seconds(5));

}  // namespace ringleader::rendezvous::testing
