// A scripted Transport: each request takes the next scripted step (a response, a transport
// error, or a streamed body) and is recorded for assertions.
#pragma once

#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "operator/kube/transport.h"

namespace ringleader::kube::testing {

struct Step {
  int status = 200;
  std::string body;
  std::string retry_after;
  std::optional<TransportError::Kind> error;  // throw this instead of answering
  std::vector<std::string> chunks;            // Stream only: 2xx body pieces
  bool cut = false;                           // Stream only: the body ends by a cut
};

class FakeTransport final : public Transport {
 public:
  void Then(Step step) {
    std::lock_guard lock(mutex_);
    steps_.push_back(std::move(step));
  }
  void ThenStatus(int status, std::string body = "{}", std::string retry_after = "") {
    Then(Step{status, std::move(body), std::move(retry_after), std::nullopt, {}, false});
  }
  void ThenError(TransportError::Kind kind) {
    Then(Step{0, "", "", kind, {}, false});
  }

  HttpResponse Send(const HttpRequest& request) override {
    Step step = Next(request);
    if (step.error) {
      throw TransportError(*step.error, "scripted transport error");
    }
    return HttpResponse{step.status, step.body, step.retry_after};
  }

  StreamResult Stream(const HttpRequest& request,
                      const std::function<void(std::string_view)>& on_data,
                      std::stop_token stop) override {
    Step step = Next(request);
    if (step.error) {
      throw TransportError(*step.error, "scripted transport error");
    }
    StreamResult result;
    result.response.status = step.status;
    result.response.retry_after = step.retry_after;
    if (step.status < 200 || step.status > 299) {
      result.response.body = step.body;
      return result;
    }
    for (const std::string& chunk : step.chunks) {
      if (stop.stop_requested()) {
        return result;
      }
      on_data(chunk);
    }
    result.cut = step.cut;
    return result;
  }

  std::vector<HttpRequest> requests() const {
    std::lock_guard lock(mutex_);
    return requests_;
  }
  std::size_t remaining() const {
    std::lock_guard lock(mutex_);
    return steps_.size();
  }

 private:
  Step Next(const HttpRequest& request) {
    std::lock_guard lock(mutex_);
    requests_.push_back(request);
    if (steps_.empty()) {
      return Step{418, R"({"kind":"Status","message":"fake transport: no step scripted"})",
                  "", std::nullopt, {}, false};
    }
    Step step = std::move(steps_.front());
    steps_.pop_front();
    return step;
  }

  mutable std::mutex mutex_;
  std::deque<Step> steps_;
  std::vector<HttpRequest> requests_;
};

}  // namespace ringleader::kube::testing
