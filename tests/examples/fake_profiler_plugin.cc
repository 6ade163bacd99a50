// A fake NCCL profiler plugin for the example trainer's stand-in tests: it exports
// ncclProfiler_v4 (built with RINGLEADER_FAKE_PROFILER_WITHOUT_STRUCT, no profiler struct at all)
// and writes every call it receives to a trace, one line each, that the test reads back.
#include <cstdint>
#include <string>

#include "sidecar/profiler/nccl_profiler_abi.h"

namespace {

namespace abi = ringleader::profiler::abi;

std::string g_trace;
int g_activation_mask = static_cast<int>(abi::kEventColl | abi::kEventKernelCh);
abi::Result g_init_result = abi::kSuccess;

#ifndef RINGLEADER_FAKE_PROFILER_WITHOUT_STRUCT
// The handles handed out: their addresses say what was started.
char g_context = 0;
char g_coll = 0;
char g_channel = 0;

std::string Name(const void* handle) {
  if (handle == nullptr) {
    return "null";
  }
  if (handle == &g_coll) {
    return "coll";
  }
  if (handle == &g_channel) {
    return "kernelCh";
  }
  return handle == &g_context ? "context" : "unknown";
}

std::string Text(const char* text) { return text != nullptr ? text : "null"; }

abi::Result Init(void** context, int* activation_mask, const char* name, std::uint64_t comm_hash,
                 int nnodes, int nranks, int rank, abi::DebugLogger logger) {
  g_trace += "init name=" + Text(name) + " hash=" + std::to_string(comm_hash) +
             " nnodes=" + std::to_string(nnodes) + " nranks=" + std::to_string(nranks) +
             " rank=" + std::to_string(rank) + " logger=" + (logger != nullptr ? "set" : "null") +
             "\n";
  *context = &g_context;
  *activation_mask = g_activation_mask;
  return g_init_result;
}

abi::Result StartEvent(void* context, void** handle, abi::EventDescrV4* descr) {
  const std::string common = " rank=" + std::to_string(descr->rank) +
                             " parent=" + Name(descr->parentObj) + " context=" + Name(context);
  if (descr->type == abi::kEventColl) {
    const abi::CollDescrV4& coll = descr->coll;
    g_trace += "start coll func=" + Text(coll.func) + " datatype=" + Text(coll.datatype) +
               " count=" + std::to_string(coll.count) +
               " nChannels=" + std::to_string(coll.nChannels) +
               " seq=" + std::to_string(coll.seqNumber) + common + "\n";
    *handle = &g_coll;
  } else if (descr->type == abi::kEventKernelCh) {
    g_trace += "start kernelCh channel=" + std::to_string(descr->kernelCh.channelId) +
               " pTimer=" + std::to_string(descr->kernelCh.pTimer) + common + "\n";
    *handle = &g_channel;
  } else {
    g_trace += "start type=" + std::to_string(descr->type) + common + "\n";
    *handle = nullptr;
  }
  return abi::kSuccess;
}

abi::Result StopEvent(void* handle) {
  g_trace += "stop " + Name(handle) + "\n";
  return abi::kSuccess;
}

abi::Result RecordEventState(void* handle, int state, abi::EventStateArgs* args) {
  g_trace += "state " + Name(handle) + " " + std::to_string(state) +
             " pTimer=" + std::to_string(args != nullptr ? args->kernelCh.pTimer : 0) + "\n";
  return abi::kSuccess;
}

abi::Result Finalize(void* context) {
  g_trace += "finalize " + Name(context) + "\n";
  return abi::kSuccess;
}
#endif

}  // namespace

extern "C" {
#ifndef RINGLEADER_FAKE_PROFILER_WITHOUT_STRUCT
__attribute__((visibility("default"))) abi::ProfilerV4 ncclProfiler_v4 = {
    "fake", &Init, &StartEvent, &StopEvent, &RecordEventState, &Finalize};
#endif

// What the next init answers, and the trace so far (cleared by the next configure). The test
// looks them up with dlsym.
__attribute__((visibility("default"))) void ringleader_fake_profiler_configure(int activation_mask,
                                                                              int init_result);
__attribute__((visibility("default"))) const char* ringleader_fake_profiler_trace();

void ringleader_fake_profiler_configure(int activation_mask, int init_result) {
  g_activation_mask = activation_mask;
  g_init_result = static_cast<abi::Result>(init_result);
  g_trace.clear();
}
const char* ringleader_fake_profiler_trace() {
  return g_trace.c_str();
}
}
