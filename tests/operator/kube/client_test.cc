// The client over a scripted transport: request shapes, retries and their schedule, the
// token re-read on 401, metrics, and watch streaming. No network, no sleeping.
#include "operator/kube/client.h"

#include <gtest/gtest.h>
#include <prometheus/registry.h>

#include <set>
#include <string>

#include "tests/operator/kube/fake_clock.h"
#include "tests/operator/kube/fake_transport.h"

namespace ringleader::kube {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;
using testing::FakeClock;
using testing::FakeTransport;
using testing::Step;

std::string StatusBody(int code, const std::string& reason) {
  return json{{"kind", "Status"}, {"code", code}, {"reason", reason}, {"message", reason + "!"}}
      .dump();
}

class RotatingToken final : public TokenSource {
 public:
  std::string Token() override { return "token-" + std::to_string(generation_); }
  void Invalidate() override { ++generation_; }
  int generation_ = 1;
};

class ClientTest : public ::testing::Test {
 protected:
  ClientTest() {
    options_.clock = &clock_;
    options_.random = [] { return 0.0; };
    options_.registry = &registry_;
    options_.backoff = BackoffPolicy{.initial_delay = milliseconds(100), .multiplier = 2.0,
                                     .max_delay = milliseconds(5000), .jitter = 0.2,
                                     .max_attempts = 4, .deadline = milliseconds(60'000)};
    options_.qps = 0;  // the limiter has its own tests; keep sleeps to backoff only
  }

  std::unique_ptr<Client> Make() { return MakeClient(transport_, token_, options_); }

  double CounterValue(const std::string& name, const std::map<std::string, std::string>& labels) {
    for (const auto& family : registry_.Collect()) {
      if (family.name != name) {
        continue;
      }
      for (const auto& metric : family.metric) {
        std::map<std::string, std::string> got;
        for (const auto& label : metric.label) {
          got[label.name] = label.value;
        }
        if (got == labels) {
          return metric.counter.value;
        }
      }
    }
    return 0;
  }

  FakeClock clock_;
  prometheus::Registry registry_;
  std::shared_ptr<FakeTransport> transport_ = std::make_shared<FakeTransport>();
  std::shared_ptr<RotatingToken> token_ = std::make_shared<RotatingToken>();
  ClientOptions options_;
};

TEST_F(ClientTest, GetSendsBearerTokenToTheObjectPath) {
  transport_->ThenStatus(200, R"({"metadata":{"name":"p"}})");
  json pod = Make()->Get(Pods(), "ns", "p");
  EXPECT_EQ(pod["metadata"]["name"], "p");
  auto requests = transport_->requests();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0].method, "GET");
  EXPECT_EQ(requests[0].target, "/api/v1/namespaces/ns/pods/p");
  EXPECT_EQ(requests[0].bearer_token, "token-1");
}

TEST_F(ClientTest, ListEncodesSelectorsAndReturnsItemsVersionAndContinue) {
  transport_->ThenStatus(
      200, R"({"metadata":{"resourceVersion":"42","continue":"c1"},"items":[{"a":1},{"a":2}]})");
  ListOptions options;
  options.label_selector = "app=x";
  options.field_selector = "status.phase!=Running";
  options.limit = 2;
  ListResult result = Make()->List(Pods(), "ns", options);
  EXPECT_EQ(result.items.size(), 2u);
  EXPECT_EQ(result.resource_version, "42");
  EXPECT_EQ(result.continue_token, "c1");
  EXPECT_EQ(transport_->requests()[0].target,
            "/api/v1/namespaces/ns/pods?labelSelector=app%3Dx&fieldSelector=status.phase%21%3DRunning&limit=2");
}

TEST_F(ClientTest, ListAllFollowsContinueAndKeepsTheFirstVersion) {
  transport_->ThenStatus(200, R"({"metadata":{"resourceVersion":"7","continue":"n1"},"items":[{"i":1}]})");
  transport_->ThenStatus(200, R"({"metadata":{"resourceVersion":"7","continue":"n2"},"items":[{"i":2}]})");
  transport_->ThenStatus(200, R"({"metadata":{"resourceVersion":"7"},"items":[{"i":3}]})");
  auto client = Make();
  ListOptions options;
  options.limit = 1;
  ListResult all = ListAll(*client, ConfigMaps(), "ns", options);
  ASSERT_EQ(all.items.size(), 3u);
  EXPECT_EQ(all.items[2]["i"], 3);
  EXPECT_EQ(all.resource_version, "7");
  auto requests = transport_->requests();
  EXPECT_EQ(requests[1].target, "/api/v1/namespaces/ns/configmaps?limit=1&continue=n1");
  EXPECT_EQ(requests[2].target, "/api/v1/namespaces/ns/configmaps?limit=1&continue=n2");
}

TEST_F(ClientTest, WritesUseTheRightMethodsPathsAndContentTypes) {
  for (int i = 0; i < 7; ++i) {
    transport_->ThenStatus(200, "{}");
  }
  auto client = Make();
  json job = {{"metadata", {{"name", "j"}, {"namespace", "team"}, {"resourceVersion", "5"}}}};
  client->Create(TrainingJobs(), "", job);
  client->Update(TrainingJobs(), "team", job);
  client->UpdateStatus(TrainingJobs(), "team", job);
  client->Patch(TrainingJobs(), "team", "j", PatchType::kMerge, {{"spec", {{"x", 1}}}});
  client->PatchStatus(Pods(), "team", "p", PatchType::kStrategicMerge, {{"status", {}}});
  client->Patch(Pods(), "team", "p", PatchType::kJson,
                json::array({{{"op", "add"}, {"path", "/a"}, {"value", 1}}}));
  DeleteOptions del;
  del.propagation_policy = PropagationPolicy::kForeground;
  del.precondition_uid = "u-1";
  del.precondition_resource_version = "5";
  client->Delete(Pods(), "team", "p", del);

  auto r = transport_->requests();
  const std::string jobs = "/apis/ringleader.dev/v1alpha1/namespaces/team/trainingjobs";
  EXPECT_EQ(r[0].method + " " + r[0].target, "POST " + jobs);
  EXPECT_EQ(r[0].content_type, "application/json");
  EXPECT_EQ(json::parse(r[0].body), job);
  EXPECT_EQ(r[1].method + " " + r[1].target, "PUT " + jobs + "/j");
  EXPECT_EQ(json::parse(r[1].body)["metadata"]["resourceVersion"], "5");
  EXPECT_EQ(r[2].method + " " + r[2].target, "PUT " + jobs + "/j/status");
  EXPECT_EQ(r[3].method + " " + r[3].target, "PATCH " + jobs + "/j");
  EXPECT_EQ(r[3].content_type, "application/merge-patch+json");
  EXPECT_EQ(r[4].target, "/api/v1/namespaces/team/pods/p/status");
  EXPECT_EQ(r[4].content_type, "application/strategic-merge-patch+json");
  EXPECT_EQ(r[5].content_type, "application/json-patch+json");
  EXPECT_EQ(r[6].method + " " + r[6].target, "DELETE /api/v1/namespaces/team/pods/p");
  json body = json::parse(r[6].body);
  EXPECT_EQ(body["propagationPolicy"], "Foreground");
  EXPECT_EQ(body["preconditions"]["uid"], "u-1");
  EXPECT_EQ(body["preconditions"]["resourceVersion"], "5");
}

TEST_F(ClientTest, ErrorsAreTyped) {
  transport_->ThenStatus(404, StatusBody(404, "NotFound"));
  transport_->ThenStatus(409, StatusBody(409, "Conflict"));
  auto client = Make();
  try {
    client->Get(Pods(), "ns", "missing");
    FAIL();
  } catch (const ApiError& e) {
    EXPECT_TRUE(IsNotFound(e));
    EXPECT_EQ(e.message(), "NotFound!");
  }
  try {
    client->Update(Pods(), "ns", {{"metadata", {{"name", "p"}, {"resourceVersion", "1"}}}});
    FAIL();
  } catch (const ApiError& e) {
    EXPECT_TRUE(IsConflict(e));
  }
  EXPECT_TRUE(clock_.sleeps().empty()) << "404 and 409 must not be retried";
}

TEST_F(ClientTest, ServerErrorsAndThrottlingAreRetriedWithBackoffAndRetryAfter) {
  transport_->ThenStatus(500, StatusBody(500, "InternalError"));
  transport_->ThenStatus(503, StatusBody(503, "ServiceUnavailable"));
  transport_->ThenStatus(429, StatusBody(429, "TooManyRequests"), "3");
  transport_->ThenStatus(200, R"({"ok":true})");
  EXPECT_EQ(Make()->Get(Pods(), "ns", "p")["ok"], true);
  EXPECT_EQ(clock_.sleeps(), (std::vector<Clock::Duration>{milliseconds(100), milliseconds(200),
                                                            std::chrono::seconds(3)}));
  EXPECT_EQ(CounterValue("ringleader_kube_retries_total", {{"reason", "server_error"}}), 2);
  EXPECT_EQ(CounterValue("ringleader_kube_retries_total", {{"reason", "too_many_requests"}}), 1);
  EXPECT_EQ(CounterValue("ringleader_kube_requests_total", {{"verb", "get"}, {"code", "500"}}), 1);
  EXPECT_EQ(CounterValue("ringleader_kube_requests_total", {{"verb", "get"}, {"code", "200"}}), 1);
}

// Every retry reason has a series at 0 from the start, so the dashboard's retry panel (a rate()
// by reason) shows data before the first retry.
TEST_F(ClientTest, EveryRetryReasonStartsAtZero) {
  const auto client = Make();
  std::set<std::string> reasons;
  for (const auto& family : registry_.Collect()) {
    if (family.name == "ringleader_kube_retries_total") {
      for (const auto& metric : family.metric) {
        EXPECT_EQ(metric.counter.value, 0);
        reasons.insert(metric.label.at(0).value);
      }
    }
  }
  EXPECT_EQ(reasons, (std::set<std::string>{"connection", "server_error", "too_many_requests"}));
}

TEST_F(ClientTest, JitterComesFromTheInjectedRandom) {
  options_.random = [] { return 0.5; };
  transport_->ThenError(TransportError::Kind::kConnection);
  transport_->ThenStatus(200, "{}");
  Make()->Get(Pods(), "ns", "p");
  EXPECT_EQ(clock_.sleeps(), (std::vector<Clock::Duration>{milliseconds(110)}));
}

TEST_F(ClientTest, GivesUpAfterMaxAttempts) {
  for (int i = 0; i < 10; ++i) {
    transport_->ThenStatus(500, StatusBody(500, "InternalError"));
  }
  try {
    Make()->List(Pods(), "ns");
    FAIL();
  } catch (const ApiError& e) {
    EXPECT_TRUE(IsServerError(e));
  }
  EXPECT_EQ(transport_->requests().size(), 4u);
  EXPECT_EQ(clock_.sleeps().size(), 3u);
}

TEST_F(ClientTest, RetryAfterBeyondTheDeadlineIsNotWaitedFor) {
  transport_->ThenStatus(429, StatusBody(429, "TooManyRequests"), "120");
  EXPECT_THROW(Make()->Get(Pods(), "ns", "p"), ApiError);
  EXPECT_TRUE(clock_.sleeps().empty());
  EXPECT_EQ(transport_->requests().size(), 1u);
}

TEST_F(ClientTest, CreateIsRetriedOnlyWhenTheConnectionWasRefused) {
  transport_->ThenError(TransportError::Kind::kRefused);
  transport_->ThenStatus(201, R"({"created":true})");
  auto client = Make();
  EXPECT_EQ(client->Create(Pods(), "ns", {{"metadata", {{"name", "p"}}}})["created"], true);

  transport_->ThenStatus(500, StatusBody(500, "InternalError"));
  EXPECT_THROW(client->Create(Pods(), "ns", {{"metadata", {{"name", "q"}}}}), ApiError);
  transport_->ThenError(TransportError::Kind::kConnection);  // reset mid-request: maybe applied
  try {
    client->Create(Pods(), "ns", {{"metadata", {{"name", "r"}}}});
    FAIL();
  } catch (const ApiError& e) {
    EXPECT_TRUE(IsConnection(e));
  }
  transport_->ThenStatus(503, StatusBody(503, "ServiceUnavailable"));
  EXPECT_THROW(client->Patch(Pods(), "ns", "p", PatchType::kJson, json::array()), ApiError);
  EXPECT_EQ(transport_->requests().size(), 5u);
}

TEST_F(ClientTest, TlsFailuresAreNotRetried) {
  transport_->ThenError(TransportError::Kind::kTls);
  try {
    Make()->Get(Pods(), "ns", "p");
    FAIL();
  } catch (const ApiError& e) {
    EXPECT_TRUE(IsConnection(e));
  }
  EXPECT_EQ(transport_->requests().size(), 1u);
}

TEST_F(ClientTest, UnauthorizedRereadsTheTokenOnceAndRetriesAtOnce) {
  transport_->ThenStatus(401, StatusBody(401, "Unauthorized"));
  transport_->ThenStatus(200, "{}");
  Make()->Get(Pods(), "ns", "p");
  auto requests = transport_->requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[0].bearer_token, "token-1");
  EXPECT_EQ(requests[1].bearer_token, "token-2");
  EXPECT_TRUE(clock_.sleeps().empty());

  transport_->ThenStatus(401, StatusBody(401, "Unauthorized"));
  transport_->ThenStatus(401, StatusBody(401, "Unauthorized"));
  try {
    Make()->Get(Pods(), "ns", "p");
    FAIL();
  } catch (const ApiError& e) {
    EXPECT_TRUE(IsUnauthorized(e));
  }
}

TEST_F(ClientTest, RequestsPassTheRateLimiter) {
  options_.qps = 10;
  options_.burst = 2;
  for (int i = 0; i < 4; ++i) {
    transport_->ThenStatus(200, "{}");
  }
  auto client = Make();
  for (int i = 0; i < 4; ++i) {
    client->Get(Pods(), "ns", "p");
  }
  EXPECT_EQ(clock_.sleeps(),
            (std::vector<Clock::Duration>{milliseconds(100), milliseconds(100)}));
}

TEST_F(ClientTest, WatchBuildsTheQueryAndDeliversEventsAcrossChunks) {
  const std::string e1 = R"({"type":"ADDED","object":{"metadata":{"name":"a","resourceVersion":"11"}}})";
  const std::string e2 = R"({"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"12"}}})";
  transport_->Then(Step{200, "", "", std::nullopt,
                        {e1.substr(0, 7), e1.substr(7) + "\n" + e2.substr(0, 20), e2.substr(20)},
                        false});
  WatchOptions options;
  options.resource_version = "10";
  options.label_selector = "seq";
  options.timeout_seconds = 30;
  options.allow_bookmarks = true;
  std::vector<WatchEvent> events;
  WatchEnd end = Make()->Watch(ConfigMaps(), "ns", options, [&](const WatchEvent& e) {
    events.push_back(e);
    return true;
  });
  EXPECT_EQ(end, WatchEnd::kClosed);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(ResourceVersionOf(events[1].object), "12");
  EXPECT_EQ(transport_->requests()[0].target,
            "/api/v1/namespaces/ns/configmaps?watch=true&resourceVersion=10&labelSelector=seq&"
            "timeoutSeconds=30&allowWatchBookmarks=true");
}

TEST_F(ClientTest, WatchStopsWhenTheCallbackDeclines) {
  const std::string e = R"({"type":"ADDED","object":{}})";
  transport_->Then(Step{200, "", "", std::nullopt, {e + e, e, e}, false});
  int seen = 0;
  WatchEnd end = Make()->Watch(Pods(), "ns", {}, [&](const WatchEvent&) { return ++seen < 2; });
  EXPECT_EQ(end, WatchEnd::kStopped);
  EXPECT_EQ(seen, 2);
}

TEST_F(ClientTest, WatchReturnsStoppedWhenStopWasRequested) {
  std::stop_source stop;
  stop.request_stop();
  EXPECT_EQ(Make()->Watch(Pods(), "ns", {}, [](const WatchEvent&) { return true; },
                          stop.get_token()),
            WatchEnd::kStopped);
  EXPECT_TRUE(transport_->requests().empty());
}

TEST_F(ClientTest, WatchWithExpiredVersionThrowsGoneAndBadStreamThrowsOther) {
  transport_->Then(Step{410, StatusBody(410, "Expired"), "", std::nullopt, {}, false});
  auto client = Make();
  auto ignore = [](const WatchEvent&) { return true; };
  try {
    client->Watch(Pods(), "ns", {}, ignore);
    FAIL();
  } catch (const ApiError& e) {
    EXPECT_TRUE(IsGone(e));
  }
  transport_->Then(Step{200, "", "", std::nullopt, {"not json"}, false});
  try {
    client->Watch(Pods(), "ns", {}, ignore);
    FAIL();
  } catch (const ApiError& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kOther);
  }
}

TEST_F(ClientTest, WatchStartIsRetriedOn5xx) {
  transport_->Then(Step{503, StatusBody(503, "ServiceUnavailable"), "", std::nullopt, {}, false});
  transport_->Then(Step{200, "", "", std::nullopt, {R"({"type":"ADDED","object":{}})"}, true});
  int seen = 0;
  EXPECT_EQ(Make()->Watch(Pods(), "ns", {}, [&](const WatchEvent&) { return ++seen > 0; }),
            WatchEnd::kClosed);
  EXPECT_EQ(seen, 1);
}

}  // namespace
}  // namespace ringleader::kube
