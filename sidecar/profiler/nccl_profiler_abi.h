// NCCL's profiler plugin ABI, versions 4 and 5, declared from NVIDIA's documentation
// (NVIDIA/nccl ext-profiler/README.md, "API (v5)", and the versioned descriptors it describes),
// not copied from NCCL's headers. Only what the plugin reads is named; the unions keep every
// member NCCL can put there, so sizes and offsets match NCCL's own (checked below).
//
// Which versions. NCCL looks for the newest `ncclProfiler_vN` symbol it knows and falls back to
// older ones (NVIDIA/nccl src/plugin/profiler.cc): NCCL 2.26 and earlier know at most v3, NCCL
// 2.27 knows v1..v4, NCCL 2.28 knows v1..v5 (the 2.28.9 libnccl.so on the development machine has
// getNcclProfiler_v1 .. _v5), and later releases keep adapters for v5. v4 is the first version
// whose init names the communicator (hash, rank, nranks) and whose kernel-channel events carry the
// GPU's own start and stop timestamps (ptimers), which is what the plugin measures, so it exports
// v4 and v5 and nothing older: NCCL 2.26 and earlier run without it (docs/operations.md: 2.27.5
// or later, 2.27.3 only by name). NCCL 2.27 starts a plan's collective and p2p events only when
// the plugin gave its Group event a non-NULL handle; 2.28 starts them whatever the Group handle
// (plugin.cc gives every Group one).
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>

namespace ringleader::profiler::abi {

// ncclResult_t; a profiler returns kSuccess from everything but init.
enum Result : int { kSuccess = 0, kSystemError = 2, kInternalError = 3 };

// ncclDebugLogger_t: NCCL's logger, printf-like. Levels and subsystems as NCCL numbers them.
using DebugLogger = void (*)(int level, unsigned long flags, const char* file, int line,
                             const char* fmt, ...);
inline constexpr int kLogInfo = 3;
inline constexpr unsigned long kLogSubsysInit = 0x1;

// Event types (eDescr->type, and the bits of the activation mask init returns).
inline constexpr std::uint64_t kEventGroup = 1U << 0;
inline constexpr std::uint64_t kEventColl = 1U << 1;
inline constexpr std::uint64_t kEventP2p = 1U << 2;
inline constexpr std::uint64_t kEventProxyOp = 1U << 3;
inline constexpr std::uint64_t kEventProxyStep = 1U << 4;
inline constexpr std::uint64_t kEventProxyCtrl = 1U << 5;
inline constexpr std::uint64_t kEventKernelCh = 1U << 6;
inline constexpr std::uint64_t kEventNetPlugin = 1U << 7;
inline constexpr std::uint64_t kEventGroupApi = 1U << 8;      // v5
inline constexpr std::uint64_t kEventCollApi = 1U << 9;       // v5
inline constexpr std::uint64_t kEventP2pApi = 1U << 10;       // v5
inline constexpr std::uint64_t kEventKernelLaunch = 1U << 11;  // v5

// ncclProfilerEventState_t values the plugin acts on (the enum has explicit values from v4 on).
inline constexpr int kStateKernelChStop = 22;  // args->kernelCh.pTimer is the GPU stop time

// ---- Event descriptors ----

struct CollDescrV4 {
  std::uint64_t seqNumber;
  const char* func;  // "AllReduce", "AllGather", ...
  const void* sendBuff;
  void* recvBuff;
  std::size_t count;  // elements per rank, as the API call gave them
  int root;
  const char* datatype;  // "ncclFloat32", ...
  std::uint8_t nChannels;
  std::uint8_t nWarps;
  const char* algo;
  const char* proto;
};

struct CollDescrV5 {
  std::uint64_t seqNumber;
  const char* func;
  const void* sendBuff;
  void* recvBuff;
  std::size_t count;
  int root;
  const char* datatype;
  std::uint8_t nChannels;
  std::uint8_t nWarps;
  const char* algo;
  const char* proto;
  void* parentGroup;  // the v4-style group parent
};

struct P2pDescrV4 {
  const char* func;  // "Send" or "Recv"
  void* buff;
  const char* datatype;
  std::size_t count;
  int peer;
  std::uint8_t nChannels;
};

struct P2pDescrV5 {
  const char* func;
  void* buff;
  const char* datatype;
  std::size_t count;
  int peer;
  std::uint8_t nChannels;
  void* parentGroup;
};

struct ProxyOpDescr {
  pid_t pid;
  std::uint8_t channelId;
  int peer;
  int nSteps;
  int chunkSize;
  int isSend;
};

struct ProxyStepDescr {
  int step;
};

struct KernelChDescr {
  std::uint8_t channelId;
  std::uint64_t pTimer;  // the channel's start on the GPU's globaltimer (ns)
};

struct NetPluginDescr {
  std::int64_t id;
  void* data;
};

struct GroupApiDescr {
  bool graphCaptured;
  int groupDepth;
};

struct CollApiDescr {
  const char* func;
  std::size_t count;
  const char* datatype;
  int root;
  void* stream;
  bool graphCaptured;
};

struct P2pApiDescr {
  const char* func;
  std::size_t count;
  const char* datatype;
  void* stream;
  bool graphCaptured;
};

struct KernelLaunchDescr {
  void* stream;
};

// ncclProfilerEventDescr_v4_t: the type is one byte.
struct EventDescrV4 {
  std::uint8_t type;
  void* parentObj;  // for a kernel channel: the handle the plugin returned for its coll or p2p
  int rank;
  union {
    CollDescrV4 coll;
    P2pDescrV4 p2p;
    ProxyOpDescr proxyOp;
    ProxyStepDescr proxyStep;
    KernelChDescr kernelCh;
    NetPluginDescr netPlugin;
  };
};

// ncclProfilerEventDescr_v5_t: the type is eight bytes, and the API-level events are added.
struct EventDescrV5 {
  std::uint64_t type;
  void* parentObj;
  int rank;
  union {
    GroupApiDescr groupApi;
    CollApiDescr collApi;
    P2pApiDescr p2pApi;
    KernelLaunchDescr kernelLaunch;
    CollDescrV5 coll;
    P2pDescrV5 p2p;
    ProxyOpDescr proxyOp;
    ProxyStepDescr proxyStep;
    KernelChDescr kernelCh;
    NetPluginDescr netPlugin;
  };
};

// ncclProfilerEventStateArgs_v4_t and _v5_t (the same layout).
struct ProxyStepArgs {
  std::size_t transSize;
};
struct ProxyCtrlArgs {
  int appendedProxyOps;
};
struct NetPluginArgs {
  void* data;
};
struct KernelChArgs {
  std::uint64_t pTimer;  // with kStateKernelChStop: the channel's stop on the GPU
};
union EventStateArgs {
  ProxyStepArgs proxyStep;
  ProxyCtrlArgs proxyCtrl;
  NetPluginArgs netPlugin;
  KernelChArgs kernelCh;
};

// ---- The exported structs ----

struct ProfilerV4 {
  const char* name;
  Result (*init)(void** context, int* eActivationMask, const char* commName,
                 std::uint64_t commHash, int nNodes, int nranks, int rank, DebugLogger logfn);
  Result (*startEvent)(void* context, void** eHandle, EventDescrV4* eDescr);
  Result (*stopEvent)(void* eHandle);
  Result (*recordEventState)(void* eHandle, int eState, EventStateArgs* eStateArgs);
  Result (*finalize)(void* context);
};

struct ProfilerV5 {
  const char* name;
  Result (*init)(void** context, std::uint64_t commId, int* eActivationMask, const char* commName,
                 int nNodes, int nranks, int rank, DebugLogger logfn);
  Result (*startEvent)(void* context, void** eHandle, EventDescrV5* eDescr);
  Result (*stopEvent)(void* eHandle);
  Result (*recordEventState)(void* eHandle, int eState, EventStateArgs* eStateArgs);
  Result (*finalize)(void* context);
};

// The layout NCCL builds on x86-64 and aarch64 (LP64): what the plugin reads must sit where NCCL
// writes it.
static_assert(sizeof(void*) == 8, "the profiler ABI is declared for LP64 targets");
static_assert(offsetof(EventDescrV4, parentObj) == 8 && offsetof(EventDescrV4, rank) == 16 &&
              offsetof(EventDescrV4, coll) == 24);
static_assert(offsetof(EventDescrV5, parentObj) == 8 && offsetof(EventDescrV5, rank) == 16 &&
              offsetof(EventDescrV5, coll) == 24);
static_assert(offsetof(CollDescrV4, func) == 8 && offsetof(CollDescrV4, count) == 32 &&
              offsetof(CollDescrV4, datatype) == 48 && offsetof(CollDescrV4, nChannels) == 56 &&
              sizeof(CollDescrV4) == 80);
static_assert(offsetof(CollDescrV5, nChannels) == 56 && offsetof(CollDescrV5, parentGroup) == 80);
static_assert(offsetof(P2pDescrV4, datatype) == 16 && offsetof(P2pDescrV4, count) == 24 &&
              offsetof(P2pDescrV4, nChannels) == 36);
static_assert(offsetof(P2pDescrV5, nChannels) == 36 && offsetof(P2pDescrV5, parentGroup) == 40);
static_assert(offsetof(KernelChDescr, pTimer) == 8 && sizeof(EventStateArgs) == 8);
static_assert(sizeof(EventDescrV4) == 24 + sizeof(CollDescrV4));
static_assert(sizeof(EventDescrV5) == 24 + sizeof(CollDescrV5));

}  // namespace ringleader::profiler::abi
