// Drives the built libnccl-profiler-ringleader.so exactly as NCCL does (dlopen by path, dlsym of
// ncclProfiler_v5 and _v4, then init / startEvent / recordEventState / stopEvent / finalize) with
// replayed event streams, and checks what reaches a stand-in sidecar over the Unix socket: the
// aggregates are exact, whatever the threads, the order of stops, or the junk in between.
#include <gtest/gtest.h>

#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "sidecar/profiler/nccl_profiler_abi.h"
#include "sidecar/profiler/snapshot_protocol.h"
#include "tests/sidecar/profiler/plugin_harness.h"

namespace ringleader::profiler {
namespace {

using testing::CaptureLog;
using testing::CommunicatorKey;
using testing::LoadedPlugin;
using testing::Received;
using testing::SnapshotServer;
using testing::TempDir;

constexpr int kStateKernelChStop = abi::kStateKernelChStop;

// ---- The expected side, computed here independently of the plugin ----

// nccl-tests' definitions (src/*.cu, *GetBw): the size S is count x element size, times nranks
// where the count is per rank of a whole buffer; busbw = algbw x 2(n-1)/n for all_reduce,
// (n-1)/n for all_gather, reduce_scatter, alltoall, gather and scatter, 1 for the rest.
enum class Factor { kOne, kAllReduce, kNMinusOneOverN };

struct OpKind {
  const char* func;
  Op op;
  bool whole_buffer;
  Factor factor;
};

constexpr OpKind kKinds[] = {
    {"AllReduce", Op::kAllReduce, false, Factor::kAllReduce},
    {"AllGather", Op::kAllGather, true, Factor::kNMinusOneOverN},
    {"ReduceScatter", Op::kReduceScatter, true, Factor::kNMinusOneOverN},
    {"Broadcast", Op::kBroadcast, false, Factor::kOne},
    {"Reduce", Op::kReduce, false, Factor::kOne},
    {"AlltoAll", Op::kAllToAll, true, Factor::kNMinusOneOverN},
    {"Gather", Op::kGather, true, Factor::kNMinusOneOverN},
    {"Scatter", Op::kScatter, true, Factor::kNMinusOneOverN},
    {"Send", Op::kSend, false, Factor::kOne},
    {"Recv", Op::kRecv, false, Factor::kOne},
};

double BusFactor(Factor factor, double n) {
  switch (factor) {
    case Factor::kAllReduce: return 2 * (n - 1) / n;
    case Factor::kNMinusOneOverN: return (n - 1) / n;
    case Factor::kOne: break;
  }
  return 1;
}

struct DataType {
  const char* name;
  std::uint64_t bytes;
};

// Every name ncclDatatypeToString gives, and the enum's aliases.
constexpr DataType kTypes[] = {
    {"ncclFloat32", 4}, {"ncclBfloat16", 2}, {"ncclFloat16", 2},    {"ncclInt8", 1},
    {"ncclFloat64", 8}, {"ncclUint8", 1},    {"ncclInt32", 4},      {"ncclFloat8e4m3", 1},
    {"ncclUint32", 4},  {"ncclInt64", 8},    {"ncclUint64", 8},     {"ncclFloat8e5m2", 1},
    {"ncclChar", 1},    {"ncclInt", 4},      {"ncclHalf", 2},       {"ncclFloat", 4},
    {"ncclDouble", 8}};

std::uint8_t ExpectedBucket(std::uint64_t bytes) {
  std::uint8_t bucket = 0;
  while (bucket < 63 && (std::uint64_t{1} << bucket) < bytes) {
    ++bucket;
  }
  return bucket;
}

// How the events of one op are ordered (NCCL stops a collective at enqueue, usually before its
// kernel channels start; the proxy thread reports channels in any order).
enum class Order {
  kNested,       // start op, channels start, record, stop; stop op
  kStopFirst,    // start op, stop op, then the channels
  kInterleaved,  // channels start, op stops, channel stops in reverse
};

struct ChannelEvents {
  std::uint8_t id;
  std::uint64_t gpu_start;  // 0: NCCL gave none
  std::uint64_t gpu_stop;   // 0: no stop recorded
};

struct OpEvents {
  const OpKind* kind;
  const DataType* type;
  std::size_t count;
  std::uint8_t n_channels;  // as the descriptor says
  std::vector<ChannelEvents> channels;
  Order order;
};

struct ExpectedCell {
  std::uint64_t calls = 0, bytes = 0, timed_calls = 0, timed_bytes = 0, gpu_ns = 0;
};

struct ExpectedComm {
  std::uint64_t hash;
  std::uint32_t rank, nranks;
  std::string name;
  std::map<std::pair<Op, std::uint8_t>, ExpectedCell> cells;
  std::array<const OpKind*, kOpCount> kinds{};  // each op's kind, once seen
  // Collectives only; last_started_unix_ns is checked against the clock, not here.
  CollectiveProgress progress{};
};

// When this program started, by the realtime clock: the lower bound of every start time.
const std::uint64_t g_program_start_unix_ns = static_cast<std::uint64_t>(
    std::chrono::duration_cast<std::chrono::nanoseconds>(
        std::chrono::system_clock::now().time_since_epoch())
        .count());

void Expect(ExpectedComm* comm, const OpEvents& op) {
  const std::uint64_t size = op.count * op.type->bytes * (op.kind->whole_buffer ? comm->nranks : 1);
  ExpectedCell& cell = comm->cells[{op.kind->op, ExpectedBucket(size)}];
  cell.calls += 1;
  cell.bytes += size;
  bool timed = op.n_channels > 0 && op.channels.size() == op.n_channels;
  std::uint64_t first = UINT64_MAX, last = 0;
  for (const ChannelEvents& channel : op.channels) {
    timed = timed && channel.gpu_start != 0 && channel.gpu_stop != 0;
    first = std::min(first, channel.gpu_start);
    last = std::max(last, channel.gpu_stop);
  }
  if (timed && last > first) {
    cell.timed_calls += 1;
    cell.timed_bytes += size;
    cell.gpu_ns += last - first;
  }
  comm->kinds[static_cast<std::size_t>(op.kind->op)] = op.kind;
  if (op.kind->op != Op::kSend && op.kind->op != Op::kRecv) {
    CollectiveProgress& progress = comm->progress;
    ++progress.collectives_started;
    progress.last_started_op = op.kind->op;
    progress.last_started_bytes = size;
    // Every channel it announced stopped (the replays stop all they start).
    if (op.channels.size() >= op.n_channels) {
      ++progress.collectives_completed;
    }
  }
}

// The ops of communicator `c`: every op kind, sizes spread over many buckets, one op repeated
// (so a cell sums two calls), one kernel channel without a GPU stop (an untimed call), one p2p
// op without channels, and every ordering.
std::vector<OpEvents> OpsFor(std::size_t c) {
  std::vector<OpEvents> ops;
  for (std::size_t k = 0; k < 8; ++k) {
    OpEvents op;
    op.kind = &kKinds[(c + k) % std::size(kKinds)];
    op.type = &kTypes[(c * 3 + k) % std::size(kTypes)];
    op.count = 1 + (c * 7919 + k * 104729) % (1 << (4 + 3 * k));
    op.n_channels = static_cast<std::uint8_t>(1 + (c + k) % 4);
    op.order = static_cast<Order>((c + k) % 3);
    const std::uint64_t base = 1'000'000'000ULL * (k + 1) + c * 1000;
    for (std::uint8_t j = 0; j < op.n_channels; ++j) {
      op.channels.push_back({static_cast<std::uint8_t>((j * 67 + c) % 256), base + 13 * j,
                             base + 5000 + 101 * ((j + c) % 4)});
    }
    if (k == 5) {
      op.channels.back().gpu_stop = 0;  // NCCL recorded no stop for this channel
    }
    if (k == 6 && (op.kind->op == Op::kSend || op.kind->op == Op::kRecv)) {
      op.n_channels = 0;
      op.channels.clear();
    }
    ops.push_back(op);
  }
  ops.push_back(ops[2]);  // the same op again: one cell, two calls
  return ops;
}

// ---- Driving the plugin ----

// The NCCL releases whose call order a plan is replayed in (NVIDIA/nccl src/plugin/profiler.cc).
enum class Release {
  // 2.27, through ncclProfiler_v4: a plan's tasks start, with the Group handle as their parent,
  // only `if (plan->groupEventHandle)`; their stops are gated the same way.
  kNccl2_27,
  // 2.28, through ncclProfiler_v5: the Group event still comes first, but the tasks start whatever
  // its handle; their parentObj is their CollApi/P2pApi handle (NULL: the plugin asks for no API
  // events) and the Group handle is their parentGroup.
  kNccl2_28,
};

// Calls through the v5 or the v4 struct with the descriptor that version defines.
class Driver {
 public:
  Driver(const LoadedPlugin& plugin, bool v4) : plugin_(plugin), v4_(v4) {}

  void* Init(std::uint64_t hash, const std::string& name, int nranks, int rank,
             abi::DebugLogger logger = nullptr) {
    void* context = nullptr;
    int mask = 0;
    const abi::Result result =
        v4_ ? plugin_.v4().init(&context, &mask, name.c_str(), hash, 1, nranks, rank, logger)
            : plugin_.v5().init(&context, hash, &mask, name.c_str(), 1, nranks, rank, logger);
    EXPECT_EQ(result, abi::kSuccess);
    EXPECT_EQ(mask, abi::kEventColl | abi::kEventP2p | abi::kEventKernelCh);
    EXPECT_NE(context, nullptr);
    return context;
  }

  // A coll or p2p event. `parent` is parentObj; `parent_group` is v5's parentGroup.
  void* StartOp(void* context, const OpEvents& op, void* parent = nullptr,
                void* parent_group = nullptr) {
    const bool p2p = op.kind->op == Op::kSend || op.kind->op == Op::kRecv;
    return Start(context, p2p ? abi::kEventP2p : abi::kEventColl, parent, op.kind->func,
                 op.type->name, op.count, op.n_channels, 0, 0, parent_group);
  }

  void* StartGroup(void* context) {
    return Start(context, abi::kEventGroup, nullptr, nullptr, nullptr, 0, 0, 0, 0);
  }

  void* StartChannel(void* context, void* parent, const ChannelEvents& channel) {
    return Start(context, abi::kEventKernelCh, parent, nullptr, nullptr, 0, 0, channel.id,
                 channel.gpu_start);
  }

  // A raw start: any type, any parent, null strings allowed.
  void* Start(void* context, std::uint64_t type, void* parent, const char* func,
              const char* datatype, std::size_t count, std::uint8_t n_channels,
              std::uint8_t channel_id, std::uint64_t gpu_start, void* parent_group = nullptr) {
    void* handle = reinterpret_cast<void*>(0x1);  // the plugin must overwrite it
    abi::Result result;
    if (v4_) {
      abi::EventDescrV4 descr{};
      descr.type = static_cast<std::uint8_t>(type);
      descr.parentObj = parent;
      if (type == abi::kEventP2p) {
        descr.p2p = {func, nullptr, datatype, count, 1, n_channels};
      } else if (type == abi::kEventKernelCh) {
        descr.kernelCh = {channel_id, gpu_start};
      } else {
        descr.coll = {7, func, nullptr, nullptr, count, 0, datatype, n_channels, 4, "RING", "LL"};
      }
      result = plugin_.v4().startEvent(context, &handle, &descr);
    } else {
      abi::EventDescrV5 descr{};
      descr.type = type;
      descr.parentObj = parent;
      if (type == abi::kEventP2p) {
        descr.p2p = {func, nullptr, datatype, count, 1, n_channels, parent_group};
      } else if (type == abi::kEventKernelCh) {
        descr.kernelCh = {channel_id, gpu_start};
      } else {
        descr.coll = {7, func, nullptr, nullptr, count, 0, datatype, n_channels, 4, "RING", "LL",
                      parent_group};
      }
      result = plugin_.v5().startEvent(context, &handle, &descr);
    }
    EXPECT_EQ(result, abi::kSuccess);
    EXPECT_NE(handle, reinterpret_cast<void*>(0x1));
    return handle;
  }

  void RecordStop(void* handle, std::uint64_t gpu_stop) {
    abi::EventStateArgs args{};
    args.kernelCh.pTimer = gpu_stop;
    const auto record = v4_ ? plugin_.v4().recordEventState : plugin_.v5().recordEventState;
    EXPECT_EQ(record(handle, kStateKernelChStop, &args), abi::kSuccess);
  }

  void Stop(void* handle) {
    EXPECT_EQ((v4_ ? plugin_.v4().stopEvent : plugin_.v5().stopEvent)(handle), abi::kSuccess);
  }

  void Finalize(void* context) {
    EXPECT_EQ((v4_ ? plugin_.v4().finalize : plugin_.v5().finalize)(context), abi::kSuccess);
  }

  // Every channel event of `op`, started, stopped in reverse.
  void RunChannels(void* context, void* handle, const OpEvents& op) {
    std::vector<void*> channels;
    for (const ChannelEvents& channel : op.channels) {
      channels.push_back(StartChannel(context, handle, channel));
      ASSERT_NE(channels.back(), nullptr);
    }
    for (std::size_t j = op.channels.size(); j-- > 0;) {
      if (op.channels[j].gpu_stop != 0) {
        RecordStop(channels[j], op.channels[j].gpu_stop);
      }
      Stop(channels[j]);
    }
  }

  // One op on one thread, in its order.
  void Replay(void* context, const OpEvents& op) {
    void* handle = StartOp(context, op);
    ASSERT_NE(handle, nullptr);
    switch (op.order) {
      case Order::kNested:
        RunChannels(context, handle, op);
        Stop(handle);
        break;
      case Order::kStopFirst:
        Stop(handle);
        RunChannels(context, handle, op);
        break;
      case Order::kInterleaved: {
        std::vector<void*> channels;
        for (const ChannelEvents& channel : op.channels) {
          channels.push_back(StartChannel(context, handle, channel));
        }
        Stop(handle);
        for (std::size_t j = 0; j < channels.size(); ++j) {
          if (op.channels[j].gpu_stop != 0) {
            RecordStop(channels[j], op.channels[j].gpu_stop);
          }
        }
        for (std::size_t j = channels.size(); j-- > 0;) {
          Stop(channels[j]);
        }
        break;
      }
    }
  }

  // One kernel plan, ops launched together, in `release`'s order: the Group event; its tasks;
  // the tasks and the Group stopped at launch, before the kernel runs; then the proxy's kernel
  // channels of every task. Returns the tasks' handles (nullptr where NCCL started none).
  std::vector<void*> ReplayPlan(void* context, Release release, const std::vector<OpEvents>& plan) {
    EXPECT_EQ(v4_, release == Release::kNccl2_27) << "2.27 calls v4, 2.28 calls v5";
    void* group = StartGroup(context);
    const bool tasks_started = release == Release::kNccl2_28 || group != nullptr;
    std::vector<void*> tasks(plan.size(), nullptr);
    if (tasks_started) {
      for (std::size_t i = 0; i < plan.size(); ++i) {
        tasks[i] = release == Release::kNccl2_27 ? StartOp(context, plan[i], group)
                                                 : StartOp(context, plan[i], nullptr, group);
      }
      for (void* task : tasks) {
        if (task != nullptr) {
          Stop(task);
        }
      }
    }
    if (group != nullptr) {
      Stop(group);
    }
    for (std::size_t i = 0; i < plan.size(); ++i) {
      if (tasks[i] != nullptr) {
        RunChannels(context, tasks[i], plan[i]);
      }
    }
    return tasks;
  }

 private:
  const LoadedPlugin& plugin_;
  bool v4_;
};

// ---- Checking what arrived ----

// `got` as expected, its start time between this program's start (less the coarse clock's tick)
// and now.
void ExpectProgress(const CollectiveProgress& got, const CollectiveProgress& want) {
  EXPECT_EQ(got.collectives_started, want.collectives_started);
  EXPECT_EQ(got.collectives_completed, want.collectives_completed);
  EXPECT_EQ(got.last_started_op, want.last_started_op);
  EXPECT_EQ(got.last_started_bytes, want.last_started_bytes);
  if (want.collectives_started == 0) {
    EXPECT_EQ(got.last_started_unix_ns, 0U);
    return;
  }
  const auto now = static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(
          std::chrono::system_clock::now().time_since_epoch())
          .count());
  EXPECT_GE(got.last_started_unix_ns, g_program_start_unix_ns - 1'000'000'000ULL);
  EXPECT_LE(got.last_started_unix_ns, now);
}

void ExpectMatches(const Received& received, const ExpectedComm& expected) {
  const auto found = received.latest.find(CommunicatorKey{expected.hash, expected.rank});
  ASSERT_NE(found, received.latest.end()) << "communicator " << expected.hash << " never arrived";
  const Communicator& comm = found->second;
  EXPECT_EQ(comm.info.name, expected.name.substr(0, kMaxNameBytes));
  EXPECT_EQ(comm.info.nranks, expected.nranks);
  EXPECT_TRUE(comm.info.finalized);
  ExpectProgress(comm.info.progress, expected.progress);
  ASSERT_EQ(comm.cells.size(), expected.cells.size()) << "communicator " << expected.hash;
  for (const Cell& cell : comm.cells) {
    const auto want = expected.cells.find({cell.op, cell.bucket});
    ASSERT_NE(want, expected.cells.end())
        << OpName(cell.op) << " bucket " << static_cast<int>(cell.bucket);
    const ExpectedCell& e = want->second;
    SCOPED_TRACE(std::string(OpName(cell.op)) + " bucket " + std::to_string(cell.bucket) +
                 " of communicator " + std::to_string(expected.hash));
    EXPECT_EQ(cell.calls, e.calls);
    EXPECT_EQ(cell.bytes, e.bytes);
    EXPECT_EQ(cell.timed_calls, e.timed_calls);
    EXPECT_EQ(cell.timed_bytes, e.timed_bytes);
    EXPECT_EQ(cell.gpu_ns, e.gpu_ns);
    // bytes per ns is 1e9 bytes per second.
    const double algbw = e.gpu_ns == 0 ? 0 : static_cast<double>(e.timed_bytes) / e.gpu_ns;
    EXPECT_DOUBLE_EQ(cell.algbw_gbps, algbw);
    EXPECT_DOUBLE_EQ(cell.busbw_gbps,
                     algbw * BusFactor(expected.kinds[static_cast<std::size_t>(cell.op)]->factor,
                                       expected.nranks));
  }
}

std::uint64_t LastCounter(const Received& received, Counter counter) {
  return received.snapshots.empty() ? 0 : received.snapshots.back().header.counter(counter);
}

// Each test loads the plugin afresh (its tables are per load) with its own socket and interval.
class ProfilerDriverTest : public ::testing::Test {
 protected:
  void Load(int interval_ms) {
    socket_path_ = dir_.path() + "/profiler.sock";
    setenv("RINGLEADER_PROFILER_SOCKET", socket_path_.c_str(), 1);
    setenv("RINGLEADER_PROFILER_INTERVAL_MS", std::to_string(interval_ms).c_str(), 1);
    setenv("LOCAL_RANK", "5", 1);
    std::string error;
    plugin_ = LoadedPlugin::Load(testing::BuiltPluginPath(), &error);
    ASSERT_NE(plugin_, nullptr) << error;
  }

  void TearDown() override {
    plugin_.reset();
    unsetenv("RINGLEADER_PROFILER_SOCKET");
    unsetenv("RINGLEADER_PROFILER_INTERVAL_MS");
    unsetenv("LOCAL_RANK");
  }

  TempDir dir_;
  std::string socket_path_;
  std::unique_ptr<LoadedPlugin> plugin_;
};

TEST_F(ProfilerDriverTest, ExportsTheVersionsNcclLooksForAndNoOlderOne) {
  Load(1000);
  EXPECT_STREQ(plugin_->v5().name, "ringleader");
  EXPECT_STREQ(plugin_->v4().name, "ringleader");
  EXPECT_EQ(plugin_->Symbol("ncclProfiler_v3"), nullptr);
  EXPECT_EQ(plugin_->Symbol("ncclProfiler_v6"), nullptr);
}

// Four user threads, each with 750 communicators alive at once (3,000 in all), hand every op's
// kernel channels to their own "proxy" thread, as NCCL's proxy progress thread reports them. A
// communicator kept open to the end lets the periodic snapshots (which retry a finalized
// communicator's last record) carry the 3,000, not one final flush with a deadline.
TEST_F(ProfilerDriverTest, AggregatesThousandsOfCommunicatorsExactlyAcrossThreads) {
  Load(1000);  // an op's channels may come up to 6 s after its stop before it counts incomplete
  SnapshotServer server(socket_path_);
  void* keepalive = Driver(*plugin_, /*v4=*/false).Init(0x4EE9, "keepalive", 1, 0);
  constexpr std::size_t kThreads = 4;
  constexpr std::size_t kCommsPerThread = 750;
  std::vector<std::vector<ExpectedComm>> expected(kThreads);
  std::vector<std::thread> threads;
  for (std::size_t t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      Driver driver(*plugin_, /*v4=*/false);
      struct Work {
        void* context;
        void* handle;
        const OpEvents* op;
      };
      std::mutex mutex;
      std::condition_variable ready;
      std::condition_variable space;
      std::deque<Work> queue;  // bounded, as ops in flight are: each holds a slot of the plugin
      bool done = false;
      // The proxy: kernel channels of ops the user thread started (and maybe already stopped).
      std::thread proxy([&] {
        for (;;) {
          std::unique_lock lock(mutex);
          ready.wait(lock, [&] { return done || !queue.empty(); });
          if (queue.empty()) {
            return;
          }
          const Work work = queue.front();
          queue.pop_front();
          space.notify_one();
          lock.unlock();
          driver.RunChannels(work.context, work.handle, *work.op);
          if (work.op->order == Order::kNested) {
            driver.Stop(work.handle);  // this op stops after its channels
          }
        }
      });
      std::vector<void*> contexts;
      std::vector<std::vector<OpEvents>> ops;
      for (std::size_t i = 0; i < kCommsPerThread; ++i) {
        const std::size_t c = t * kCommsPerThread + i;
        ExpectedComm comm{0x5100000000ULL + c, 0, static_cast<std::uint32_t>(1 + c % 8),
                          "comm-" + std::to_string(c), {}, {}};
        comm.rank = static_cast<std::uint32_t>(c % comm.nranks);
        if (c == 7) {
          comm.name = std::string(200, 'L');  // cut to 128 on the wire
        }
        contexts.push_back(driver.Init(comm.hash, comm.name, static_cast<int>(comm.nranks),
                                       static_cast<int>(comm.rank)));
        ops.push_back(OpsFor(c));
        for (const OpEvents& op : ops.back()) {
          Expect(&comm, op);
        }
        expected[t].push_back(std::move(comm));
      }
      for (std::size_t i = 0; i < kCommsPerThread; ++i) {
        for (const OpEvents& op : ops[i]) {
          if (op.order == Order::kInterleaved || op.channels.empty()) {
            driver.Replay(contexts[i], op);  // all on this thread
            continue;
          }
          void* handle = driver.StartOp(contexts[i], op);
          if (op.order == Order::kStopFirst) {
            driver.Stop(handle);  // enqueued: stopped before any channel starts
          }
          std::unique_lock lock(mutex);
          space.wait(lock, [&] { return queue.size() < 64; });
          queue.push_back({contexts[i], handle, &op});
          ready.notify_one();
        }
      }
      {
        std::lock_guard lock(mutex);
        done = true;
        ready.notify_one();
      }
      proxy.join();
      for (void* context : contexts) {
        driver.Finalize(context);
      }
    });
  }
  for (std::thread& thread : threads) {
    thread.join();
  }
  const auto finalized = [](const Received& received) {
    return static_cast<std::size_t>(
        std::count_if(received.latest.begin(), received.latest.end(),
                      [](const auto& entry) { return entry.second.info.finalized; }));
  };
  ASSERT_TRUE(server.WaitFor([&](const Received& received) {
    return finalized(received) == kThreads * kCommsPerThread;
  })) << finalized(server.Get()) << " communicators arrived finalized";
  Driver(*plugin_, /*v4=*/false).Finalize(keepalive);
  const Received received = server.Get();
  EXPECT_TRUE(received.errors.empty()) << received.errors.front();
  std::uint64_t calls = 0;
  std::uint64_t timed_calls = 0;
  std::size_t cells = 0;
  for (const auto& per_thread : expected) {
    for (const ExpectedComm& comm : per_thread) {
      ExpectMatches(received, comm);
      for (const auto& [key, cell] : comm.cells) {
        calls += cell.calls;
        timed_calls += cell.timed_calls;
        ++cells;
      }
    }
  }
  // The replay covered timed and untimed calls, and repeated ones (fewer cells than calls).
  EXPECT_EQ(calls, kThreads * kCommsPerThread * 9);
  EXPECT_GT(timed_calls, calls / 2);
  EXPECT_LT(timed_calls, calls);
  EXPECT_LT(cells, calls);
  const SnapshotHeader& last = received.snapshots.back().header;
  for (std::size_t i = 0; i < kCounterCount; ++i) {
    if (static_cast<Counter>(i) != Counter::kSnapshotsDropped) {
      EXPECT_EQ(last.counters[i], 0U) << CounterName(static_cast<Counter>(i));
    }
  }
  EXPECT_EQ(last.pid, static_cast<std::uint32_t>(getpid()));
  EXPECT_EQ(last.local_rank, 5);
  EXPECT_GT(last.process_start_ns, 0U);
  for (std::size_t i = 1; i < received.snapshots.size(); ++i) {
    EXPECT_GT(received.snapshots[i].header.sequence, received.snapshots[i - 1].header.sequence);
  }
}

TEST_F(ProfilerDriverTest, V4EntryPointsRecordTheSameAsV5) {
  Load(1000);
  SnapshotServer server(socket_path_);
  for (bool v4 : {true, false}) {
    Driver driver(*plugin_, v4);
    ExpectedComm comm{v4 ? 0x44ULL : 0x55ULL, 1, 4, v4 ? "v4-world" : "v5-world", {}, {}};
    void* context = driver.Init(comm.hash, comm.name, 4, 1);
    for (const OpEvents& op : OpsFor(v4 ? 11 : 12)) {
      driver.Replay(context, op);
      Expect(&comm, op);
    }
    driver.Finalize(context);
    ASSERT_TRUE(server.WaitFor([&](const Received& received) {
      return received.latest.count({comm.hash, comm.rank}) == 1 &&
             received.latest.at({comm.hash, comm.rank}).info.finalized;
    }));
    ExpectMatches(server.Get(), comm);
  }
}

// Kernel plans as NCCL launches them: one collective alone; a batch of collectives in one kernel
// (grouped or coalesced), whose kernel channels report the same GPU start and stop to each op;
// and a grouped send and recv (before 2.28, AlltoAll's pieces).
std::vector<std::vector<OpEvents>> KernelPlans() {
  const OpKind& all_reduce = kKinds[0];
  const OpKind& all_gather = kKinds[1];
  const OpKind& send = kKinds[8];
  const OpKind& recv = kKinds[9];
  const DataType* float32 = &kTypes[0];
  const DataType* bfloat16 = &kTypes[1];
  const std::vector<ChannelEvents> alone = {{0, 1000, 9000}, {1, 1100, 9500}};
  const std::vector<ChannelEvents> batch = {{0, 20000, 26000}, {1, 20010, 26000}};
  const std::vector<ChannelEvents> pair = {{2, 40000, 52000}};
  return {
      {{&all_reduce, float32, 1 << 20, 2, alone, Order::kStopFirst}},
      {{&all_reduce, float32, 256, 2, batch, Order::kStopFirst},
       {&all_reduce, float32, 4096, 2, batch, Order::kStopFirst},
       {&all_gather, bfloat16, 1024, 2, batch, Order::kStopFirst}},
      {{&send, float32, 1 << 16, 1, pair, Order::kStopFirst},
       {&recv, float32, 1 << 16, 1, pair, Order::kStopFirst}},
  };
}

// Regression (issue 28): NCCL 2.27 reported no collective at all, because the plugin gave Group
// events a NULL handle and 2.27 starts no task under one. Each release's order, every call timed.
TEST_F(ProfilerDriverTest, TimesCollectivesInEachNcclReleasesCallOrder) {
  Load(1000);
  SnapshotServer server(socket_path_);
  for (const Release release : {Release::kNccl2_27, Release::kNccl2_28}) {
    const bool v4 = release == Release::kNccl2_27;
    SCOPED_TRACE(v4 ? "NCCL 2.27 order" : "NCCL 2.28 order");
    Driver driver(*plugin_, v4);
    ExpectedComm comm{v4 ? 0x227ULL : 0x228ULL, 2, 4, v4 ? "nccl-2.27" : "nccl-2.28", {}, {}};
    void* context = driver.Init(comm.hash, comm.name, 4, 2);
    for (const std::vector<OpEvents>& plan : KernelPlans()) {
      const std::vector<void*> tasks = driver.ReplayPlan(context, release, plan);
      for (std::size_t i = 0; i < plan.size(); ++i) {
        EXPECT_NE(tasks[i], nullptr) << "NCCL started no task for " << plan[i].kind->func;
        Expect(&comm, plan[i]);
      }
    }
    driver.Finalize(context);
    ASSERT_TRUE(server.WaitFor([&](const Received& received) {
      return received.latest.count({comm.hash, comm.rank}) == 1 &&
             received.latest.at({comm.hash, comm.rank}).info.finalized;
    }));
    const Received received = server.Get();
    ExpectMatches(received, comm);
    const Communicator& got = received.latest.at({comm.hash, comm.rank});
    EXPECT_EQ(got.cells.size(), 6U);
    for (const Cell& cell : got.cells) {
      EXPECT_EQ(cell.timed_calls, cell.calls) << OpName(cell.op);
      EXPECT_GT(cell.busbw_gbps, 0) << OpName(cell.op);
    }
    // A batch shares one kernel: each of its ops is charged the whole batch's 6,000 ns.
    for (const std::pair<Op, int>& batched :
         {std::pair{Op::kAllReduce, 10}, std::pair{Op::kAllReduce, 14},
          std::pair{Op::kAllGather, 13}}) {
      const auto cell = std::find_if(got.cells.begin(), got.cells.end(), [&](const Cell& c) {
        return c.op == batched.first && c.bucket == batched.second;
      });
      ASSERT_NE(cell, got.cells.end()) << OpName(batched.first) << " bucket " << batched.second;
      EXPECT_EQ(cell->gpu_ns, 6000U) << OpName(batched.first) << " bucket " << batched.second;
    }
  }
}

TEST_F(ProfilerDriverTest, IgnoresWhatItDoesNotRecordAndNeverFails) {
  Load(1000);
  SnapshotServer server(socket_path_);
  Driver driver(*plugin_, /*v4=*/false);
  void* context = driver.Init(0x99, "junk", 2, 0);
  int foreign = 0;
  const auto& v5 = plugin_->v5();
  abi::EventDescrV5 coll{};
  coll.type = abi::kEventColl;
  coll.coll.func = "AllReduce";
  coll.coll.datatype = "ncclFloat32";
  coll.coll.count = 256;
  coll.coll.nChannels = 1;

  // events_ignored: null handle pointer, null descriptor, types not asked for, a foreign or null
  // context, and foreign handles stopped or recorded.
  EXPECT_EQ(v5.startEvent(context, nullptr, &coll), abi::kSuccess);
  void* handle = &foreign;
  EXPECT_EQ(v5.startEvent(context, &handle, nullptr), abi::kSuccess);
  EXPECT_EQ(driver.Start(context, std::uint64_t{1} << 20, nullptr, nullptr, nullptr, 0, 0, 0, 0),
            nullptr);
  EXPECT_EQ(driver.Start(context, abi::kEventProxyOp, nullptr, nullptr, nullptr, 0, 0, 0, 0),
            nullptr);
  EXPECT_EQ(driver.Start(nullptr, abi::kEventColl, nullptr, "AllReduce", "ncclFloat32", 4, 1, 0, 0),
            nullptr);
  EXPECT_EQ(driver.Start(&foreign, abi::kEventColl, nullptr, "AllReduce", "ncclFloat32", 4, 1, 0,
                         0),
            nullptr);
  driver.Stop(&foreign);
  driver.RecordStop(&foreign, 5);
  constexpr std::uint64_t kIgnoredSoFar = 8;

  // ops_unrecognized: an op or datatype the plugin does not know, or none.
  EXPECT_EQ(driver.Start(context, abi::kEventColl, nullptr, "SendRecv", "ncclFloat32", 4, 1, 0, 0),
            nullptr);
  EXPECT_EQ(driver.Start(context, abi::kEventColl, nullptr, "AllReduce", "ncclNvfp4", 4, 1, 0, 0),
            nullptr);
  EXPECT_EQ(driver.Start(context, abi::kEventP2p, nullptr, nullptr, "ncclFloat32", 4, 1, 0, 0),
            nullptr);
  EXPECT_EQ(driver.Start(context, abi::kEventColl, nullptr, "AllReduce", nullptr, 4, 1, 0, 0),
            nullptr);
  constexpr std::uint64_t kUnrecognized = 4;

  // channels_dropped: no parent, a foreign parent, the same channel twice.
  EXPECT_EQ(driver.Start(context, abi::kEventKernelCh, nullptr, nullptr, nullptr, 0, 0, 3, 100),
            nullptr);
  EXPECT_EQ(driver.Start(context, abi::kEventKernelCh, &foreign, nullptr, nullptr, 0, 0, 3, 100),
            nullptr);
  void* op = driver.Start(context, abi::kEventColl, nullptr, "AllReduce", "ncclFloat32", 256, 1,
                          0, 0);
  ASSERT_NE(op, nullptr);
  void* channel = driver.Start(context, abi::kEventKernelCh, op, nullptr, nullptr, 0, 0, 3, 1000);
  ASSERT_NE(channel, nullptr);
  EXPECT_EQ(driver.Start(context, abi::kEventKernelCh, op, nullptr, nullptr, 0, 0, 3, 1000),
            nullptr);
  constexpr std::uint64_t kChannelsDropped = 3;

  // Not counted: null handles (NCCL's "not tracked"), states the plugin does not act on, a stop
  // of a stopped handle, and a Group event: its handle is not NULL (NCCL 2.27 starts no task
  // under a NULL one), and stopping it or recording a state on it does nothing.
  driver.Stop(nullptr);
  driver.RecordStop(nullptr, 5);
  EXPECT_EQ(v5.recordEventState(channel, 99, nullptr), abi::kSuccess);
  void* group = driver.StartGroup(context);
  EXPECT_NE(group, nullptr);
  driver.RecordStop(group, 5);
  driver.Stop(group);
  // Counted: a kernel-channel state sent to an op's handle.
  EXPECT_EQ(v5.recordEventState(op, kStateKernelChStop, nullptr), abi::kSuccess);
  constexpr std::uint64_t kIgnored = kIgnoredSoFar + 1;
  driver.RecordStop(channel, 3000);
  driver.Stop(channel);
  driver.Stop(channel);
  driver.Stop(op);
  driver.Stop(op);
  driver.Finalize(context);

  ASSERT_TRUE(server.WaitFor([&](const Received& received) {
    return received.latest.count({0x99, 0}) == 1 && received.latest.at({0x99, 0}).info.finalized;
  }));
  const Received received = server.Get();
  EXPECT_EQ(LastCounter(received, Counter::kEventsIgnored), kIgnored);
  EXPECT_EQ(LastCounter(received, Counter::kOpsUnrecognized), kUnrecognized);
  EXPECT_EQ(LastCounter(received, Counter::kChannelsDropped), kChannelsDropped);
  EXPECT_EQ(LastCounter(received, Counter::kOpsDropped), 0U);
  // The one good op was recorded, timed by its one channel.
  const Communicator& comm = received.latest.at({0x99, 0});
  ASSERT_EQ(comm.cells.size(), 1U);
  EXPECT_EQ(comm.cells[0].op, Op::kAllReduce);
  EXPECT_EQ(comm.cells[0].bucket, 10);  // 1 KiB
  EXPECT_EQ(comm.cells[0].calls, 1U);
  EXPECT_EQ(comm.cells[0].timed_calls, 1U);
  EXPECT_EQ(comm.cells[0].gpu_ns, 2000U);
  EXPECT_DOUBLE_EQ(comm.cells[0].algbw_gbps, 1024.0 / 2000.0);
  EXPECT_DOUBLE_EQ(comm.cells[0].busbw_gbps, 1024.0 / 2000.0);  // 2(n-1)/n = 1 at n = 2
}

TEST_F(ProfilerDriverTest, CountsCommunicatorsBeyondItsTableAndTheirOpsAsDropped) {
  Load(1000);
  SnapshotServer server(socket_path_);
  Driver driver(*plugin_, /*v4=*/false);
  std::vector<void*> contexts;
  for (std::size_t c = 0; c < kMaxCommunicators + 5; ++c) {
    contexts.push_back(driver.Init(0x7000 + c, "", 1, 0));
  }
  const OpEvents op = OpsFor(0)[0];
  driver.Replay(contexts[kMaxCommunicators - 1], op);  // the last one recorded
  for (std::size_t c = kMaxCommunicators; c < contexts.size(); ++c) {
    EXPECT_EQ(driver.StartOp(contexts[c], op), nullptr);  // not recorded, and no failure
  }
  for (void* context : contexts) {
    driver.Finalize(context);
  }
  ASSERT_TRUE(server.WaitFor([&](const Received& received) {
    return received.latest.size() == kMaxCommunicators &&
           std::all_of(received.latest.begin(), received.latest.end(),
                       [](const auto& entry) { return entry.second.info.finalized; });
  }));
  const Received received = server.Get();
  EXPECT_EQ(LastCounter(received, Counter::kCommunicatorsDropped), 5U);
  EXPECT_EQ(LastCounter(received, Counter::kOpsDropped), 5U);
  EXPECT_EQ(received.latest.at({0x7000 + kMaxCommunicators - 1, 0}).cells.size(), 1U);
}

TEST_F(ProfilerDriverTest, DropsSnapshotsWhileTheSidecarIsGoneAndDeliversWhenItIsBack) {
  Load(20);
  testing::ClearCapturedLog();
  Driver driver(*plugin_, /*v4=*/false);
  void* context = driver.Init(0xAB, "late", 1, 0, &CaptureLog);
  ASSERT_TRUE(testing::WaitForLog("snapshots every 20 ms to " + socket_path_,
                                  std::chrono::seconds(10)));
  // No socket yet: the plugin drops and says so once.
  ASSERT_TRUE(testing::WaitForLog("dropping snapshots until the sidecar takes them",
                                  std::chrono::seconds(10)));
  SnapshotServer server(socket_path_);
  ExpectedComm comm{0xAB, 0, 1, "late", {}, {}};
  const OpEvents op = OpsFor(3)[0];
  driver.Replay(context, op);
  Expect(&comm, op);
  ASSERT_TRUE(server.WaitFor([&](const Received& received) {
    return received.latest.count({0xAB, 0}) == 1 &&
           received.latest.at({0xAB, 0}).cells.size() == 1 &&
           received.latest.at({0xAB, 0}).cells[0].calls == 1;
  }));
  const Received received = server.Get();
  EXPECT_GE(LastCounter(received, Counter::kSnapshotsDropped), 1U);
  // The sequence counts every attempt, so its gap matches the drops.
  EXPECT_EQ(received.snapshots.front().header.sequence - 1,
            received.snapshots.front().header.counter(Counter::kSnapshotsDropped));
  EXPECT_TRUE(testing::WaitForLog("sending snapshots to " + socket_path_ + " again",
                                  std::chrono::seconds(10)));
  driver.Finalize(context);
  EXPECT_TRUE(server.WaitFor([&](const Received& r) {
    return r.latest.at({0xAB, 0}).info.finalized;
  }));
  ExpectMatches(server.Get(), comm);
}

// A sidecar that accepts connections but never reads: every send gives up at its deadline and is
// counted, and the last finalize (NCCL calls it from ncclCommDestroy) returns within a bounded
// time: a pending send is cut short and the final snapshot gets at most 250 ms. A sidecar that
// reads again then receives the count (the counters are cumulative since the plugin loaded).
TEST_F(ProfilerDriverTest, FinalizeIsNotHeldUpByASidecarThatStoppedReading) {
  Load(100);
  const int listener = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::memcpy(address.sun_path, socket_path_.c_str(), socket_path_.size());
  ASSERT_EQ(bind(listener, reinterpret_cast<const sockaddr*>(&address), sizeof(address)), 0);
  ASSERT_EQ(listen(listener, 16), 0);  // connections queue up; nothing is ever read
  testing::ClearCapturedLog();
  Driver driver(*plugin_, /*v4=*/false);
  std::vector<void*> contexts;
  for (std::size_t c = 0; c < 2000; ++c) {  // snapshots of about 250 KB: more than a socket holds
    contexts.push_back(driver.Init(0xB10C0000 + c, "a-communicator-name-" + std::to_string(c), 2,
                                   0, c == 0 ? &CaptureLog : nullptr));
    driver.Replay(contexts.back(), OpsFor(c)[0]);
  }
  // The first failure is a send that ran out of time on a connection the listener accepted.
  ASSERT_TRUE(testing::WaitForLog("(Connection timed out); dropping snapshots",
                                  std::chrono::seconds(30)));
  const auto start = std::chrono::steady_clock::now();
  for (void* context : contexts) {
    driver.Finalize(context);
  }
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_LT(took, std::chrono::seconds(3));
  close(listener);

  SnapshotServer server(socket_path_);
  void* after = driver.Init(0xAF7E, "after", 1, 0);
  driver.Finalize(after);
  ASSERT_TRUE(server.WaitFor([](const Received& received) {
    return received.latest.count({0xAF7E, 0}) == 1 &&
           received.latest.at({0xAF7E, 0}).info.finalized;
  }));
  const Received received = server.Get();
  const SnapshotHeader& first = received.snapshots.front().header;
  // At least the timed-out send was counted, and no more than the snapshots before this one.
  EXPECT_GE(first.counter(Counter::kSnapshotsDropped), 1U);
  EXPECT_LE(first.counter(Counter::kSnapshotsDropped), first.sequence - 1);
}

TEST_F(ProfilerDriverTest, GivesUpOnKernelChannelsThatNeverCome) {
  Load(20);  // incomplete after 6 intervals: 120 ms
  SnapshotServer server(socket_path_);
  Driver driver(*plugin_, /*v4=*/false);
  void* context = driver.Init(0xCD, "lossy", 2, 1);
  OpEvents op = OpsFor(0)[0];
  op.n_channels = 2;
  op.channels.resize(1);  // the second channel never reports
  void* handle = driver.StartOp(context, op);
  driver.RunChannels(context, handle, op);
  driver.Stop(handle);
  ASSERT_TRUE(server.WaitFor([&](const Received& received) {
    return LastCounter(received, Counter::kOpsIncomplete) == 1 &&
           received.latest.count({0xCD, 1}) == 1 && !received.latest.at({0xCD, 1}).cells.empty();
  }));
  const Cell cell = server.Get().latest.at({0xCD, 1}).cells.at(0);
  EXPECT_EQ(cell.calls, 1U);
  EXPECT_EQ(cell.timed_calls, 0U);  // counted, but with no GPU time
  EXPECT_EQ(cell.gpu_ns, 0U);
  driver.Finalize(context);
}

// The groundwork of stall detection: a rank that entered collective N (its kernel runs and never
// ends, as when a peer never joins) shows N started and fewer completed; a collective queued
// behind it, whose kernel never starts, is given up as incomplete but never counted completed; a
// send is no collective.
TEST_F(ProfilerDriverTest, CountsCollectivesStartedAndCompletedForStallDetection) {
  Load(20);  // incomplete after 6 intervals: 120 ms
  SnapshotServer server(socket_path_);
  Driver driver(*plugin_, /*v4=*/false);
  ExpectedComm comm{0x57A11, 3, 4, "stalled", {}, {}};
  void* context = driver.Init(comm.hash, comm.name, 4, 3);
  const OpKind& all_reduce = kKinds[0];
  const OpKind& broadcast = kKinds[3];
  const OpKind& send = kKinds[8];
  for (std::uint64_t step = 0; step < 3; ++step) {
    const std::uint64_t at = 1'000'000 * (step + 1);
    const OpEvents done{&all_reduce, &kTypes[0], 1 << 18, 1, {{0, at, at + 9000}}, Order::kNested};
    driver.Replay(context, done);
    Expect(&comm, done);
    const OpEvents p2p{&send, &kTypes[0], 4096, 1, {{1, at + 10000, at + 12000}}, Order::kNested};
    driver.Replay(context, p2p);
    Expect(&comm, p2p);
  }
  // Collective 4: entered, its kernel's channel 0 started and never stops, channel 1 never starts.
  const OpEvents stuck{&all_reduce, &kTypes[1], 1 << 20, 2, {{0, 9'000'000, 0}}, Order::kStopFirst};
  void* stuck_handle = driver.StartOp(context, stuck);
  ASSERT_NE(stuck_handle, nullptr);
  driver.Stop(stuck_handle);
  void* running = driver.StartChannel(context, stuck_handle, stuck.channels[0]);
  ASSERT_NE(running, nullptr);
  // Collective 5: entered, queued on the stream behind 4, so no channel of it ever starts.
  const OpEvents queued{&broadcast, &kTypes[0], 256, 1, {}, Order::kStopFirst};
  void* queued_handle = driver.StartOp(context, queued);
  ASSERT_NE(queued_handle, nullptr);
  driver.Stop(queued_handle);

  // Both are given up on (ops_incomplete), the queued one recorded untimed; neither completed.
  ASSERT_TRUE(server.WaitFor([&](const Received& received) {
    return LastCounter(received, Counter::kOpsIncomplete) == 2 &&
           received.latest.count({comm.hash, comm.rank}) == 1 &&
           received.latest.at({comm.hash, comm.rank}).info.progress.collectives_started == 5;
  }));
  CollectiveProgress want = comm.progress;
  EXPECT_EQ(want.collectives_started, 3U);  // the three all_reduces; the sends are not counted
  want.collectives_started = 5;
  want.last_started_op = Op::kBroadcast;
  want.last_started_bytes = 1024;
  ExpectProgress(server.Get().latest.at({comm.hash, comm.rank}).info.progress, want);

  // The stuck kernel's channel ends at last, but channel 1 never reported: still not completed.
  driver.RecordStop(running, 9'500'000);
  driver.Stop(running);
  driver.Finalize(context);
  ASSERT_TRUE(server.WaitFor([&](const Received& received) {
    return received.latest.at({comm.hash, comm.rank}).info.finalized;
  }));
  const Received received = server.Get();
  const Communicator& last = received.latest.at({comm.hash, comm.rank});
  ExpectProgress(last.info.progress, want);
  std::uint64_t calls = 0;
  std::uint64_t timed_calls = 0;
  for (const Cell& cell : last.cells) {
    calls += cell.calls;
    timed_calls += cell.timed_calls;
  }
  EXPECT_EQ(calls, 8U);        // 3 all_reduce, 3 send, and the two given up on, untimed
  EXPECT_EQ(timed_calls, 6U);
}

// Trainers fork (data-loader workers) after NCCL is up. A child has no sender thread: finalizing
// or unloading there must neither hang (joining a thread it does not have, or taking a lock the
// sender held at the fork) nor send the parent's data.
TEST_F(ProfilerDriverTest, AForkedChildNeitherJoinsItsParentsThreadNorSends) {
  Load(20);
  SnapshotServer server(socket_path_);
  Driver driver(*plugin_, /*v4=*/false);
  void* context = driver.Init(0xF0, "parent", 1, 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    const abi::ProfilerV5& v5 = plugin_->v5();
    v5.finalize(context);  // the last context in the child: would stop (join) a sender thread
    plugin_.reset();       // dlclose runs the plugin's destructor, which would too
    _exit(0);
  }
  int status = -1;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (waitpid(child, &status, WNOHANG) == 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));  // polls the child's exit
  }
  if (!WIFEXITED(status)) {
    kill(child, SIGKILL);
    waitpid(child, &status, 0);
    FAIL() << "the forked child hung in finalize or dlclose";
  }
  EXPECT_EQ(WEXITSTATUS(status), 0);
  driver.Replay(context, OpsFor(1)[0]);
  driver.Finalize(context);
  ASSERT_TRUE(server.WaitFor([](const Received& received) {
    return received.latest.count({0xF0, 0}) == 1 && received.latest.at({0xF0, 0}).info.finalized;
  }));
  for (const Snapshot& snapshot : server.Get().snapshots) {
    EXPECT_EQ(snapshot.header.pid, static_cast<std::uint32_t>(getpid()));
  }
  EXPECT_EQ(server.Get().latest.at({0xF0, 0}).cells.size(), 1U);
}

TEST_F(ProfilerDriverTest, ReloadingTheLibraryStartsAfresh) {
  for (int load = 0; load < 2; ++load) {
    Load(1000);
    SnapshotServer server(socket_path_);
    Driver driver(*plugin_, /*v4=*/false);
    void* context = driver.Init(0xEF, "again", 1, 0);
    driver.Start(context, abi::kEventProxyOp, nullptr, nullptr, nullptr, 0, 0, 0, 0);  // ignored
    driver.Finalize(context);  // the last one: its final snapshot goes before it returns
    ASSERT_TRUE(
        server.WaitFor([](const Received& received) { return !received.snapshots.empty(); }));
    const Received received = server.Get();
    EXPECT_EQ(received.snapshots.front().header.sequence, 1U) << "load " << load;
    EXPECT_EQ(LastCounter(received, Counter::kEventsIgnored), 1U) << "load " << load;
    plugin_.reset();  // dlclose: nothing of the plugin may run after this
  }
}

}  // namespace
}  // namespace ringleader::profiler
