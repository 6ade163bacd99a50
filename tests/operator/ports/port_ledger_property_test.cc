// Property test for the port ledger: a million random Allocate / Release / Reserve / Rebuild
// steps over small ranges, checked against a reference model that records the owner of each port.
#include "operator/ports/port_ledger.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

namespace ringleader::ports {
namespace {

constexpr std::uint64_t kDefaultSeed = 0x52494e474c454144;  // "RINGLEAD"
constexpr int kEpochs = 10;
constexpr int kStepsPerEpoch = 100'000;
constexpr int kJobCount = 160;  // more than any range's capacity, so exhaustion is common
constexpr int kFullCheckEvery = 1000;
constexpr std::int32_t kMargin = 48;   // ports tracked beyond each end of the range
constexpr std::int32_t kOutside = 40;  // how far past the range random blocks may end
constexpr std::int32_t kBlockSize = static_cast<std::int32_t>(contract::kPortsPerJob);
constexpr int kNoOwner = -1;

// Set RINGLEADER_PORT_LEDGER_SEED to replay or explore another sequence.
std::uint64_t Seed() {
  const char* text = std::getenv("RINGLEADER_PORT_LEDGER_SEED");
  return text != nullptr ? std::strtoull(text, nullptr, 0) : kDefaultSeed;
}

// Job uids shaped like Kubernetes uids, long enough to defeat the small-string optimisation.
std::vector<std::string> JobUids() {
  std::vector<std::string> uids;
  for (int job = 0; job < kJobCount; ++job) {
    std::string suffix = std::to_string(job);
    uids.push_back("6c1f0b8e-2d4a-4e7b-9a31-" + std::string(12 - suffix.size(), '0') + suffix);
  }
  return uids;
}

// The reference: holders in a std::map plus the owner of every port near the range, with the
// free aligned blocks derived from the owners.
class Model {
 public:
  explicit Model(PortRange range)
      : range_(range),
        capacity_(range.size() / kBlockSize),
        owner_(static_cast<std::size_t>(range.size() + 2 * kMargin), kNoOwner),
        aligned_free_(static_cast<std::size_t>(capacity_), true),
        free_blocks_(static_cast<std::size_t>(capacity_)) {}

  const std::map<int, PortBlock>& holders() const { return holders_; }
  std::size_t free_blocks() const { return free_blocks_; }
  std::int32_t capacity() const { return capacity_; }

  std::optional<PortBlock> Find(int job) const {
    const auto it = holders_.find(job);
    return it == holders_.end() ? std::nullopt : std::optional<PortBlock>(it->second);
  }

  bool PortsFree(PortBlock block) const {
    for (std::int32_t port = block.base; port < block.base + kBlockSize; ++port) {
      if (Owner(port) != kNoOwner) {
        return false;
      }
    }
    return true;
  }

  std::optional<PortBlock> LowestFree() const {
    const auto it = std::find(aligned_free_.begin(), aligned_free_.end(), true);
    if (it == aligned_free_.end()) {
      return std::nullopt;
    }
    return AlignedBlock(static_cast<std::int32_t>(it - aligned_free_.begin()));
  }

  PortBlock AlignedBlock(std::int32_t index) const {
    return PortBlock{range_.first + index * kBlockSize};
  }

  void Hold(int job, PortBlock block) {
    holders_.emplace(job, block);
    SetOwner(block, job);
  }

  void Release(int job) {
    const auto it = holders_.find(job);
    if (it != holders_.end()) {
      SetOwner(it->second, kNoOwner);
      holders_.erase(it);
    }
  }

 private:
  int& Owner(std::int32_t port) {
    return owner_.at(static_cast<std::size_t>(port - (range_.first - kMargin)));
  }
  int Owner(std::int32_t port) const {
    return owner_.at(static_cast<std::size_t>(port - (range_.first - kMargin)));
  }

  // Updates the owners of the block's ports, then the free flags of the aligned blocks it touches.
  void SetOwner(PortBlock block, int owner) {
    for (std::int32_t port = block.base; port < block.base + kBlockSize; ++port) {
      Owner(port) = owner;
      const std::int32_t offset = port - range_.first;
      if (offset < 0 || offset >= capacity_ * kBlockSize) {
        continue;
      }
      const auto index = static_cast<std::size_t>(offset / kBlockSize);
      const bool now_free = PortsFree(AlignedBlock(static_cast<std::int32_t>(index)));
      if (now_free != aligned_free_[index]) {
        aligned_free_[index] = now_free;
        free_blocks_ = now_free ? free_blocks_ + 1 : free_blocks_ - 1;
      }
    }
  }

  PortRange range_;
  std::int32_t capacity_;
  std::vector<int> owner_;
  std::vector<bool> aligned_free_;
  std::size_t free_blocks_;
  std::map<int, PortBlock> holders_;
};

class PortLedgerPropertyTest : public ::testing::Test {
 protected:
  void RunEpoch(PortRange range) {
    ledger_ = PortLedger(range);
    model_ = Model(range);
    for (int step = 0; step < kStepsPerEpoch; ++step) {
      Step();
      if (step % kFullCheckEvery == 0) {
        CheckEverything();
      }
      if (HasFatalFailure()) {
        ADD_FAILURE() << "at step " << step << " of the epoch";
        return;
      }
    }
    CheckEverything();
  }

  std::mt19937_64& rng() { return random_; }

 private:
  int RandomJob() { return std::uniform_int_distribution<int>(0, kJobCount - 1)(random_); }
  std::int32_t Between(std::int32_t low, std::int32_t high) {
    return std::uniform_int_distribution<std::int32_t>(low, high)(random_);
  }

  void Step() {
    const int op = Between(0, 999);
    const int job = RandomJob();
    if (op < 450) {
      Allocate(job);
    } else if (op < 750) {
      ledger_.Release(uids_[job]);
      model_.Release(job);
    } else if (op < 998) {
      Reserve(job, RandomBlock());
    } else {
      Rebuild();
    }
    ASSERT_EQ(ledger_.Find(uids_[job]), model_.Find(job)) << "job " << job;
    ASSERT_EQ(ledger_.jobs(), model_.holders().size());
    ASSERT_EQ(ledger_.free_blocks(), model_.free_blocks());
    ASSERT_EQ(ledger_.Peek(), model_.LowestFree());
  }

  void Allocate(int job) {
    const std::optional<PortBlock> held = model_.Find(job);
    const std::optional<PortBlock> expected = held ? held : model_.LowestFree();
    const std::optional<PortBlock> got = ledger_.Allocate(uids_[job]);
    ASSERT_EQ(got, expected) << "Allocate job " << job;
    if (got && !held) {
      const PortRange& range = ledger_.range();
      ASSERT_TRUE(range.Contains(got->base) && range.Contains(got->base + kBlockSize - 1));
      ASSERT_TRUE(model_.PortsFree(*got));
      model_.Hold(job, *got);
    }
  }

  void Reserve(int job, PortBlock block) {
    const std::optional<PortBlock> held = model_.Find(job);
    const bool expected = held ? *held == block : model_.PortsFree(block);
    ASSERT_EQ(ledger_.Reserve(uids_[job], block), expected)
        << "Reserve job " << job << " base " << block.base;
    if (expected && !held) {
      model_.Hold(job, block);
    }
  }

  // Aligned in range, anywhere near the range, wholly outside it, or over a held block.
  PortBlock RandomBlock() {
    const PortRange& range = ledger_.range();
    const int kind = Between(0, 9);
    if (kind < 4 && model_.capacity() > 0) {
      return model_.AlignedBlock(Between(0, model_.capacity() - 1));
    }
    if (kind < 7) {
      return PortBlock{Between(range.first - kBlockSize - 2, range.last + 1)};
    }
    if (kind < 8) {
      // kOutside < kMargin so that a held block shifted by up to 3 ports is still tracked.
      return PortBlock{Between(0, 1) == 0
                           ? Between(range.first - kOutside, range.first - kBlockSize)
                           : Between(range.last + 1, range.last + kOutside - kBlockSize + 1)};
    }
    if (model_.holders().empty()) {
      return model_.AlignedBlock(0);
    }
    auto it = model_.holders().begin();
    std::advance(it, Between(0, static_cast<std::int32_t>(model_.holders().size()) - 1));
    return PortBlock{it->second.base + Between(-3, 3)};
  }

  // Rebuilds from the model's holders in random order, sometimes with a conflicting pair appended.
  void Rebuild() {
    std::vector<std::pair<std::string, PortBlock>> held;
    for (const auto& [job, block] : model_.holders()) {
      held.emplace_back(uids_[job], block);
    }
    std::shuffle(held.begin(), held.end(), random_);
    std::vector<std::string> expected_conflicts;
    if (!held.empty() && Between(0, 1) == 0) {
      const auto& [holder, block] = held[static_cast<std::size_t>(
          Between(0, static_cast<std::int32_t>(held.size()) - 1))];
      std::string other = uids_[RandomJob()];
      if (other != holder) {
        // It overlaps `block`, so it is refused whether or not `other` holds a block.
        held.emplace_back(other, PortBlock{block.base + Between(-3, 3)});
        expected_conflicts.push_back(other);
      } else {
        held.emplace_back(holder, block);  // a repeat of a held pair is not a conflict
      }
    }
    std::vector<std::string> conflicts;
    PortLedger rebuilt = PortLedger::Rebuild(ledger_.range(), held, &conflicts);
    ASSERT_EQ(conflicts, expected_conflicts);
    ASSERT_TRUE(rebuilt == ledger_) << "rebuilt ledger differs from the live one";
    if (Between(0, 1) == 0) {
      ledger_ = std::move(rebuilt);
    }
  }

  // O(range) check straight from the ledger's own answers, independent of the model's counters.
  void CheckEverything() {
    const PortRange& range = ledger_.range();
    const std::int32_t low = range.first - kMargin;
    std::vector<int> owner(static_cast<std::size_t>(range.size() + 2 * kMargin), kNoOwner);
    for (int job = 0; job < kJobCount; ++job) {
      const std::optional<PortBlock> block = ledger_.Find(uids_[job]);
      ASSERT_EQ(block, model_.Find(job)) << "job " << job;
      if (!block) {
        continue;
      }
      for (std::int32_t port = block->base; port < block->base + kBlockSize; ++port) {
        int& slot = owner.at(static_cast<std::size_t>(port - low));
        ASSERT_EQ(slot, kNoOwner) << "port " << port << " held by jobs " << slot << " and " << job;
        slot = job;
      }
    }
    const auto capacity = static_cast<std::size_t>(range.size() / kBlockSize);
    ASSERT_EQ(ledger_.capacity(), capacity);
    std::size_t covered = 0;
    for (std::size_t index = 0; index < capacity; ++index) {
      const std::int32_t base = range.first + static_cast<std::int32_t>(index) * kBlockSize;
      for (std::int32_t port = base; port < base + kBlockSize; ++port) {
        if (owner.at(static_cast<std::size_t>(port - low)) != kNoOwner) {
          ++covered;
          break;
        }
      }
    }
    ASSERT_EQ(ledger_.free_blocks() + covered, capacity);
  }

  std::mt19937_64 random_{Seed()};
  std::vector<std::string> uids_ = JobUids();
  PortLedger ledger_{PortRange{}};
  Model model_{PortRange{}};
};

TEST_F(PortLedgerPropertyTest, NoPortIsEverHeldByTwoJobsOverAMillionRandomSteps) {
  const std::uint64_t seed = Seed();
  SCOPED_TRACE("seed " + std::to_string(seed) + " (set RINGLEADER_PORT_LEDGER_SEED to replay)");
  for (int epoch = 0; epoch < kEpochs; ++epoch) {
    // Sizes 200-400 ports, often not a multiple of 4.
    const std::int32_t first =
        std::uniform_int_distribution<std::int32_t>(1 + kMargin, 60000)(rng());
    const std::int32_t size = std::uniform_int_distribution<std::int32_t>(200, 400)(rng());
    const PortRange range{first, first + size - 1};
    SCOPED_TRACE("epoch " + std::to_string(epoch) + ", range " + range.ToString());
    RunEpoch(range);
    if (HasFatalFailure()) {
      return;
    }
  }
}

}  // namespace
}  // namespace ringleader::ports
