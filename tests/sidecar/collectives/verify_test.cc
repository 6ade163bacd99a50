// Verifiable data: inputs are small exact integers, and the expected outputs agree with a naive
// model of each collective run over every rank's input.
#include "sidecar/collectives/verify.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <span>

namespace ringleader::collectives {
namespace {

TEST(VerifyTest, InputsAreSmallIntegersFixedBySeedRankAndIndex) {
  std::set<float> seen;
  for (int rank = 0; rank < 8; ++rank) {
    for (std::size_t i = 0; i < 200; ++i) {
      const float value = InputValue(7, rank, i);
      EXPECT_EQ(value, std::trunc(value));
      EXPECT_GE(value, -8.0f);
      EXPECT_LE(value, 8.0f);
      EXPECT_EQ(value, InputValue(7, rank, i));
      seen.insert(value);
    }
  }
  EXPECT_EQ(seen.size(), 17u);  // every value in [-8, 8] shows up
}

TEST(VerifyTest, SeedAndRankChangeTheData) {
  int differ_by_seed = 0;
  int differ_by_rank = 0;
  for (std::size_t i = 0; i < 64; ++i) {
    differ_by_seed += InputValue(1, 0, i) != InputValue(2, 0, i) ? 1 : 0;
    differ_by_rank += InputValue(1, 0, i) != InputValue(1, 1, i) ? 1 : 0;
  }
  EXPECT_GT(differ_by_seed, 32);
  EXPECT_GT(differ_by_rank, 32);
}

// Each collective's definition, applied to all ranks' inputs at once (MPI semantics).
std::vector<float> Model(Collective collective, const std::vector<std::vector<float>>& inputs,
                         std::size_t count, int rank, Peers peers) {
  const int n = static_cast<int>(inputs.size());
  const auto chunk = [count](const std::vector<float>& v, int index) {
    const auto begin = v.begin() + static_cast<std::ptrdiff_t>(count) * index;
    return std::vector<float>(begin, begin + static_cast<std::ptrdiff_t>(count));
  };
  std::vector<float> out;
  switch (collective) {
    case Collective::kAllReduce:
    case Collective::kReduceScatter: {
      const int part = collective == Collective::kAllReduce ? 0 : rank;
      out.assign(count, 0.0f);
      for (const auto& input : inputs) {
        const std::vector<float> mine = chunk(input, part);
        for (std::size_t i = 0; i < count; ++i) {
          out[i] += mine[i];
        }
      }
      break;
    }
    case Collective::kAllGather:
      for (const auto& input : inputs) {
        const std::vector<float> mine = chunk(input, 0);
        out.insert(out.end(), mine.begin(), mine.end());
      }
      break;
    case Collective::kAllToAll:
      for (int k = 0; k < n; ++k) {
        const std::vector<float> theirs = chunk(inputs[static_cast<std::size_t>(k)], rank);
        out.insert(out.end(), theirs.begin(), theirs.end());
      }
      break;
    case Collective::kBroadcast:
      out = chunk(inputs[kBroadcastRoot], 0);
      break;
    case Collective::kSendRecv:
      out = chunk(inputs[static_cast<std::size_t>(peers.recv_from)], 0);
      break;
  }
  return out;
}

TEST(VerifyTest, ExpectedOutputsMatchANaiveModelOfEachCollective) {
  for (const Collective collective : kAllCollectives) {
    for (const int n : {1, 2, 3, 4, 8}) {
      for (const std::size_t count : {std::size_t{1}, std::size_t{5}}) {
        std::vector<std::vector<float>> inputs;
        for (int rank = 0; rank < n; ++rank) {
          inputs.push_back(MakeInput(collective, count, rank, n, 42));
          EXPECT_EQ(inputs.back().size(), ElemsFor(collective, count, n).send);
        }
        for (int rank = 0; rank < n; ++rank) {
          const Peers peers{(rank + 1) % n, (rank + n - 1) % n};
          SCOPED_TRACE(std::string(CollectiveName(collective)) + " n=" + std::to_string(n) +
                       " count=" + std::to_string(count) + " rank=" + std::to_string(rank));
          const std::vector<float> expected =
              ExpectedOutput(collective, count, rank, n, 42, peers);
          EXPECT_EQ(expected.size(), ElemsFor(collective, count, n).recv);
          EXPECT_EQ(expected, Model(collective, inputs, count, rank, peers));
        }
      }
    }
  }
}

// The probe writes inputs and checks outputs in pieces; pieces of any length, starting anywhere
// (here 7 elements, across chunk boundaries of count 5), give the whole buffer's values.
TEST(VerifyTest, PiecesMatchTheWholeBuffer) {
  constexpr std::size_t kCount = 5;
  constexpr std::size_t kPiece = 7;
  for (const Collective collective : kAllCollectives) {
    for (const int n : {1, 3, 4}) {
      for (int rank = 0; rank < n; ++rank) {
        SCOPED_TRACE(std::string(CollectiveName(collective)) + " n=" + std::to_string(n) +
                     " rank=" + std::to_string(rank));
        const Peers peers{(rank + 1) % n, (rank + n - 1) % n};
        const std::vector<float> whole = ExpectedOutput(collective, kCount, rank, n, 9, peers);
        std::vector<float> pieced(whole.size());
        for (std::size_t at = 0; at < whole.size(); at += kPiece) {
          const std::size_t length = std::min(kPiece, whole.size() - at);
          FillExpected(collective, kCount, rank, n, 9, peers, at,
                       std::span<float>(pieced).subspan(at, length));
        }
        EXPECT_EQ(pieced, whole);
        const std::vector<float> input = MakeInput(collective, kCount, rank, n, 9);
        std::vector<float> tail(3);
        FillInput(9, rank, input.size() - 3, tail);
        EXPECT_EQ(tail, std::vector<float>(input.end() - 3, input.end()));
        std::vector<float> past(2);
        EXPECT_THROW(FillExpected(collective, kCount, rank, n, 9, peers, whole.size() - 1, past),
                     std::invalid_argument);
      }
    }
  }
}

TEST(VerifyTest, CountsEveryMismatchIncludingNaN) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> expected = {1, 2, 3, 4};
  EXPECT_EQ(CountWrong(std::vector<float>{1, 2, 3, 4}, expected), 0u);
  EXPECT_EQ(CountWrong(std::vector<float>{1, 2.5f, 3, nan}, expected), 2u);
  EXPECT_THROW(CountWrong(std::vector<float>{1}, expected), std::invalid_argument);
}

TEST(VerifyTest, SendRecvNeedsThePeerItReceivesFrom) {
  EXPECT_THROW(ExpectedOutput(Collective::kSendRecv, 4, 0, 2, 1), std::invalid_argument);
}

}  // namespace
}  // namespace ringleader::collectives
