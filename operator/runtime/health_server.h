// The operator's probe endpoints: /healthz (200 while the controller's loops keep moving; 503
// naming what is stuck, see liveness.h) and /readyz (200 once the caches are synced and, with
// leader election, also for a standby - a standby is ready to take over; 503 with the reason
// otherwise). Plain HTTP on its own bind address, served by cpprestsdk's listener.
#pragma once

#include <functional>
#include <memory>
#include <string>

namespace ringleader::runtime {

class HealthServer {
 public:
  // `ready` and `live` return an empty string when ready (live), else the reason (sent with
  // 503); a null `live` is always live. `host` "" listens on every address. Port 0 picks a free
  // port (see port()). Throws std::runtime_error naming the address when it cannot listen.
  HealthServer(const std::string& host, int port, std::function<std::string()> ready,
               std::function<std::string()> live = nullptr);
  ~HealthServer();
  HealthServer(const HealthServer&) = delete;
  HealthServer& operator=(const HealthServer&) = delete;

  int port() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ringleader::runtime
