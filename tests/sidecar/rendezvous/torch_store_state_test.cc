// The trainers' store semantics, query by query, with no sockets.
#include "sidecar/rendezvous/torch_store_state.h"

#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace ringleader::rendezvous::torch_store {
namespace {

using ::testing::HasSubstr;

// Stands where a client connection would: counts the waits it was told are done.
class RecordingWaiter final : public Waiter {
 public:
  void OnWaitDone() override { ++done; }
  int done = 0;
};

Request Make(Query query, std::vector<std::string> keys = {}, std::vector<std::string> values = {},
             std::int64_t number = 0) {
  return Request{query, std::move(keys), std::move(values), number, 0};
}

std::string Str(std::string_view value) {
  std::string out;
  AppendString(out, value);
  return out;
}

std::string I64(std::int64_t value) {
  std::string out;
  AppendInt64(out, value);
  return out;
}

class TorchStoreStateTest : public ::testing::Test {
 protected:
  // Applies and returns the reply; fails the test on a refusal.
  std::string Do(Request request, Waiter& waiter) {
    std::string reply;
    const auto refused = state_.Apply(std::move(request), waiter, reply);
    EXPECT_FALSE(refused) << (refused ? refused->message : "");
    return reply;
  }
  std::string Do(Request request) { return Do(std::move(request), a_); }

  TorchStoreState state_;
  RecordingWaiter a_;
  RecordingWaiter b_;
  RecordingWaiter c_;
};

TEST_F(TorchStoreStateTest, SetGetAndMissingKeys) {
  EXPECT_EQ(Do(Make(Query::kSet, {"k"}, {"v"})), "");
  EXPECT_EQ(Do(Make(Query::kGet, {"k"})), Str("v"));
  EXPECT_EQ(Do(Make(Query::kGet, {"missing"})), Str(""));
  EXPECT_EQ(Do(Make(Query::kMultiGet, {"k", "missing"})), Str("v") + Str(""));
  EXPECT_EQ(Do(Make(Query::kMultiSet, {"a", "b"}, {"1", "2"})), "");
  EXPECT_EQ(Do(Make(Query::kGetNumKeys)), I64(3));
  EXPECT_EQ(Do(Make(Query::kDeleteKey, {"a"})), I64(1));
  EXPECT_EQ(Do(Make(Query::kDeleteKey, {"a"})), I64(0));
  EXPECT_EQ(Do(Make(Query::kAppend, {"k"}, {"w"})), "");
  EXPECT_EQ(Do(Make(Query::kAppend, {"new"}, {"x"})), "");
  EXPECT_EQ(Do(Make(Query::kGet, {"k"})), Str("vw"));
  EXPECT_EQ(Do(Make(Query::kGet, {"new"})), Str("x"));
  const std::string listed = Do(Make(Query::kListKeys));
  EXPECT_EQ(listed.substr(0, 8), I64(3));
  for (const char* key : {"k", "b", "new"}) {
    EXPECT_THAT(listed, HasSubstr(Str(key)));
  }
}

TEST_F(TorchStoreStateTest, AddKeepsDecimalTextAndRefusesWhatIsNotANumber) {
  EXPECT_EQ(Do(Make(Query::kAdd, {"n"}, {}, 5)), I64(5));
  EXPECT_EQ(Do(Make(Query::kAdd, {"n"}, {}, -7)), I64(-2));
  EXPECT_EQ(Do(Make(Query::kGet, {"n"})), Str("-2"));
  Do(Make(Query::kSet, {"text"}, {"abc"}));
  std::string reply;
  auto refused = state_.Apply(Make(Query::kAdd, {"text"}, {}, 1), a_, reply);
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->message, "the value of key text is not a decimal integer");
  Do(Make(Query::kSet, {"big"}, {"9223372036854775807"}));
  refused = state_.Apply(Make(Query::kAdd, {"big"}, {}, 1), a_, reply);
  ASSERT_TRUE(refused);
  EXPECT_THAT(refused->message, HasSubstr("overflows"));
  EXPECT_EQ(reply, "");
}

TEST_F(TorchStoreStateTest, CompareSetAsPyTorchsServer) {
  // Missing, expected empty: set. Missing, expected not empty: answers expected, sets nothing.
  EXPECT_EQ(Do(Make(Query::kCompareSet, {"k"}, {"", "first"})), Str("first"));
  EXPECT_EQ(Do(Make(Query::kCompareSet, {"m"}, {"x", "y"})), Str("x"));
  EXPECT_EQ(Do(Make(Query::kCheck, {"m"})), std::string(1, kCheckNotReady));
  // Present: swapped only when equal; answers the value now stored.
  EXPECT_EQ(Do(Make(Query::kCompareSet, {"k"}, {"wrong", "second"})), Str("first"));
  EXPECT_EQ(Do(Make(Query::kCompareSet, {"k"}, {"first", "second"})), Str("second"));
}

TEST_F(TorchStoreStateTest, AWaitIsAnsweredOnceEveryKeyExists) {
  EXPECT_EQ(Do(Make(Query::kWait, {"x", "y", "x"}), a_), "");
  EXPECT_EQ(state_.PendingFor(a_), 1u);
  EXPECT_EQ(Do(Make(Query::kCheck, {"x", "y"}), b_), std::string(1, kCheckNotReady));
  Do(Make(Query::kSet, {"x"}, {"1"}), b_);
  EXPECT_EQ(a_.done, 0);
  Do(Make(Query::kAdd, {"y"}, {}, 1), b_);
  EXPECT_EQ(a_.done, 1);
  EXPECT_EQ(state_.PendingFor(a_), 0u);
  EXPECT_EQ(Do(Make(Query::kCheck, {"x", "y"}), b_), std::string(1, kCheckReady));
  // Present already: answered at once.
  EXPECT_EQ(Do(Make(Query::kWait, {"x"}), a_), std::string(1, kStopWaiting));
  EXPECT_EQ(Do(Make(Query::kWait, {}), a_), std::string(1, kStopWaiting));
}

TEST_F(TorchStoreStateTest, CancelWaitDropsThePendingWaitAndAnswersCanceled) {
  Do(Make(Query::kWait, {"late"}), a_);
  EXPECT_EQ(Do(Make(Query::kCancelWait), a_), std::string(1, kWaitCanceled));
  EXPECT_EQ(state_.PendingTotal(), 0u);
  Do(Make(Query::kSet, {"late"}, {"v"}), b_);
  EXPECT_EQ(a_.done, 0);
  // With nothing pending it still answers, as the client expects one byte.
  EXPECT_EQ(Do(Make(Query::kCancelWait), a_), std::string(1, kWaitCanceled));
}

TEST_F(TorchStoreStateTest, ABarrierReleasesEveryoneWhenTheLastEnters) {
  EXPECT_EQ(Do(Make(Query::kBarrier, {"bar"}, {}, 3), a_), "");
  EXPECT_EQ(Do(Make(Query::kBarrier, {"bar"}, {}, 3), b_), "");
  EXPECT_EQ(a_.done + b_.done, 0);
  EXPECT_EQ(Do(Make(Query::kBarrier, {"bar"}, {}, 3), c_), std::string(1, kStopWaiting));
  EXPECT_EQ(a_.done, 1);
  EXPECT_EQ(b_.done, 1);
  EXPECT_EQ(Do(Make(Query::kGet, {"bar"})), Str("3"));
}

TEST_F(TorchStoreStateTest, ABarrierEntryThatTimedOutStaysCounted) {
  Do(Make(Query::kBarrier, {"bar"}, {}, 2), a_);
  EXPECT_EQ(Do(Make(Query::kCancelWait), a_), std::string(1, kWaitCanceled));
  EXPECT_EQ(Do(Make(Query::kBarrier, {"bar"}, {}, 2), b_), std::string(1, kStopWaiting));
  EXPECT_EQ(a_.done, 0);
}

TEST_F(TorchStoreStateTest, AQueuePushWakesOnlyTheOldestWaiter) {
  Do(Make(Query::kWait, {"q"}), a_);
  Do(Make(Query::kWait, {"q"}), b_);
  Do(Make(Query::kQueuePush, {"q"}, {"one"}), c_);
  EXPECT_EQ(a_.done, 1);
  EXPECT_EQ(b_.done, 0);
  EXPECT_EQ(Do(Make(Query::kQueueLen, {"q"})), I64(1));
  EXPECT_EQ(Do(Make(Query::kQueuePop, {"q"})), I64(1) + Str("one"));
  EXPECT_EQ(Do(Make(Query::kQueuePop, {"q"})), I64(0));
  Do(Make(Query::kQueuePush, {"q"}, {"two"}), c_);
  EXPECT_EQ(b_.done, 1);
  EXPECT_EQ(Do(Make(Query::kCheck, {"q"})), std::string(1, kCheckReady));
  EXPECT_EQ(Do(Make(Query::kGetNumKeys)), I64(0));  // queues are not keys
}

TEST_F(TorchStoreStateTest, AClosedConnectionsWaitsAreForgotten) {
  Do(Make(Query::kWait, {"k"}), a_);
  Do(Make(Query::kBarrier, {"bar"}, {}, 5), a_);
  EXPECT_EQ(state_.PendingFor(a_), 2u);
  state_.Forget(a_);
  EXPECT_EQ(state_.PendingTotal(), 0u);
  Do(Make(Query::kSet, {"k"}, {"v"}), b_);
  EXPECT_EQ(a_.done, 0);
}

TEST_F(TorchStoreStateTest, PendingRequestsPerConnectionAreBounded) {
  for (std::size_t i = 0; i < TorchStoreState::kMaxPendingPerWaiter; ++i) {
    Do(Make(Query::kWait, {"never" + std::to_string(i)}), a_);
  }
  std::string reply;
  const auto refused = state_.Apply(Make(Query::kWait, {"one-more"}), a_, reply);
  ASSERT_TRUE(refused);
  EXPECT_THAT(refused->message, HasSubstr("pending on one connection"));
}

TEST_F(TorchStoreStateTest, ARequestMissingItsFieldsIsRefusedNotACrash) {
  std::string reply;
  EXPECT_TRUE(state_.Apply(Make(Query::kSet, {}, {}), a_, reply));
  EXPECT_TRUE(state_.Apply(Make(Query::kCompareSet, {"k"}, {"only-one"}), a_, reply));
  EXPECT_TRUE(state_.Apply(Make(Query::kMultiSet, {"a", "b"}, {"1"}), a_, reply));
}

}  // namespace
}  // namespace ringleader::rendezvous::torch_store
