// Property test of the port ledger through the lifecycle the operator drives (operator/planner/
// plan.cc, operator/runtime/controller.cc): a million random steps of jobs created (running or
// suspended), suspended, their Pods draining, resumed, finished and deleted, and of operator
// restarts that rebuild the ledger from the jobs' status. A job takes a block the way the planner
// does (Peek, then Reserve once status is written) and gives it back when the planner releases
// it: suspended or finished, once no Pod of it still runs. After every step no port is held by
// two jobs, every job whose Pods run holds a block, a drained suspended job holds none, and the
// ledger equals one rebuilt from status.
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "operator/ports/port_ledger.h"

namespace ringleader::ports {
namespace {

constexpr std::uint64_t kDefaultSeed = 0x53555350454e44;  // "SUSPEND"
constexpr int kSteps = 1'000'000;
constexpr int kJobs = 48;  // more than the range's 32 blocks, so jobs wait for ports
const PortRange kRange{61000, 61127};
constexpr std::int32_t kBlockSize = static_cast<std::int32_t>(contract::kPortsPerJob);

// Set RINGLEADER_LIFECYCLE_SEED to replay or explore another sequence.
std::uint64_t Seed() {
  const char* text = std::getenv("RINGLEADER_LIFECYCLE_SEED");
  return text != nullptr ? std::strtoull(text, nullptr, 0) : kDefaultSeed;
}

// What the operator knows of one job: whether it exists and is suspended or finished, whether
// any of its Pods may still run (they drain after a suspend or a finish), and its status.ports.
struct Job {
  bool exists = false;
  bool suspended = false;
  bool finished = false;
  bool pods_running = false;
  std::optional<PortBlock> status_ports;
};

class JobLifecycleTest : public ::testing::Test {
 protected:
  const std::string& Uid(int job) const { return uids_[static_cast<std::size_t>(job)]; }

  int Between(int low, int high) { return std::uniform_int_distribution<int>(low, high)(random_); }

  // One reconcile of `job`, with the planner's rules for ports.
  void Reconcile(int job) {
    Job& j = jobs_[job];
    if (!j.exists) {
      return;
    }
    const bool drained = !j.pods_running;
    if ((j.suspended || j.finished) && j.status_ports && drained) {
      j.status_ports.reset();  // the status write goes first, then the ledger lets go
      ledger_.Release(Uid(job));
      return;
    }
    if (j.suspended || j.finished) {
      return;
    }
    if (!j.status_ports) {
      std::optional<PortBlock> block = ledger_.Find(Uid(job));
      if (!block) {
        block = ledger_.Peek();
      }
      if (!block) {
        return;  // PortsExhausted: wait for a release
      }
      j.status_ports = block;
      ASSERT_TRUE(ledger_.Reserve(Uid(job), *block)) << "the planner proposed a held block";
      return;
    }
    j.pods_running = true;  // Pods are created once status holds the ports
  }

  // One random event for one job, then that job's reconcile; returns the job.
  int Step() {
    const int job = Between(0, kJobs - 1);
    Job& j = jobs_[job];
    const int op = Between(0, 99);
    if (!j.exists) {
      if (op < 30) {
        j = Job{};
        j.exists = true;
        j.suspended = Between(0, 2) == 0;  // some are created suspended
      }
    } else if (op < 15) {
      j.suspended = true;  // Kueue preempts by suspending
    } else if (op < 30) {
      if (j.suspended && !j.finished && !j.status_ports) {
        ++resumes_pending_;
      }
      j.suspended = false;  // resumed (a finished job stays finished)
    } else if (op < 45) {
      if (j.suspended || j.finished) {
        j.pods_running = false;  // the Pods' deletion completed
      }
    } else if (op < 52) {
      if (j.pods_running) {
        j.finished = true;
      }
    } else if (op < 56) {
      // Deleted: garbage collection takes the Pods; the operator releases once they are gone.
      j.suspended = true;
      j.finished = true;
      j.pods_running = false;
    } else if (op < 58) {
      if (!j.status_ports) {
        j = Job{};
      }
    } else if (op < 59) {
      RestartOperator();
    }
    const bool had_ports = j.status_ports.has_value();
    Reconcile(job);
    if (!had_ports && j.status_ports && resumes_pending_ > 0) {
      ++resumes_with_ports_;
      --resumes_pending_;
    }
    return job;
  }

  // A new leader rebuilds the ledger from every job's status.ports, as RebuildLedger does.
  void RestartOperator() {
    std::vector<std::pair<std::string, PortBlock>> held;
    for (int job = 0; job < kJobs; ++job) {
      if (jobs_[job].exists && jobs_[job].status_ports) {
        held.emplace_back(Uid(job), *jobs_[job].status_ports);
      }
    }
    std::vector<std::string> conflicts;
    ledger_ = PortLedger::Rebuild(kRange, held, &conflicts);
    ASSERT_TRUE(conflicts.empty()) << "two jobs' status claimed one block";
  }

  // What holds for one job after its reconcile: Pods run only with ports, and a suspended or
  // finished job whose Pods are gone holds no block.
  void CheckJob(int job) {
    const Job& j = jobs_[job];
    const std::optional<PortBlock> held = ledger_.Find(Uid(job));
    ASSERT_EQ(held, j.exists ? j.status_ports : std::nullopt) << "job " << job;
    if (j.pods_running) {
      ASSERT_TRUE(held.has_value()) << "job " << job << " runs Pods without ports";
    }
    if (j.exists && (j.suspended || j.finished) && !j.pods_running) {
      ASSERT_FALSE(held.has_value()) << "drained job " << job << " still holds " << held->base;
      ++drained_checked_;
    }
  }

  // Every job, and no port held twice: O(range + jobs).
  void CheckInvariants() {
    std::vector<int> owner(static_cast<std::size_t>(kRange.size()), -1);
    std::size_t holders = 0;
    for (int job = 0; job < kJobs; ++job) {
      const Job& j = jobs_[job];
      const std::optional<PortBlock> held = ledger_.Find(Uid(job));
      ASSERT_EQ(held, j.exists ? j.status_ports : std::nullopt) << "job " << job;
      CheckJob(job);
      if (!held) {
        continue;
      }
      ++holders;
      for (std::int32_t port = held->base; port < held->base + kBlockSize; ++port) {
        int& slot = owner.at(static_cast<std::size_t>(port - kRange.first));
        ASSERT_EQ(slot, -1) << "port " << port << " held by jobs " << slot << " and " << job;
        slot = job;
      }
    }
    ASSERT_EQ(ledger_.jobs(), holders);
    ASSERT_EQ(ledger_.free_blocks() + holders, ledger_.capacity());
  }

  std::mt19937_64 random_{Seed()};
  PortLedger ledger_{kRange};
  std::vector<Job> jobs_ = std::vector<Job>(kJobs);
  std::vector<std::string> uids_ = [] {
    std::vector<std::string> uids;
    for (int job = 0; job < kJobs; ++job) {
      uids.push_back("6c1f0b8e-2d4a-4e7b-9a31-lifecycle-" + std::to_string(job));
    }
    return uids;
  }();
  std::int64_t drained_checked_ = 0;   // drained suspended/finished jobs seen holding nothing
  std::int64_t resumes_with_ports_ = 0;  // resumed jobs that took a block again
  std::int64_t resumes_pending_ = 0;
};

TEST_F(JobLifecycleTest, SuspendAndResumeNeverLeakOrShareABlockOverAMillionSteps) {
  SCOPED_TRACE("seed " + std::to_string(Seed()) + " (set RINGLEADER_LIFECYCLE_SEED to replay)");
  for (int step = 0; step < kSteps; ++step) {
    const int job = Step();
    CheckJob(job);
    if (step % 1000 == 0) {
      CheckInvariants();
    }
    if (HasFatalFailure()) {
      ADD_FAILURE() << "at step " << step;
      return;
    }
  }
  CheckInvariants();
  // The walk really went through the cases it is about.
  EXPECT_GT(drained_checked_, 10'000);
  EXPECT_GT(resumes_with_ports_, 1'000);
}

}  // namespace
}  // namespace ringleader::ports
