// Loads an NCCL profiler plugin the way NCCL does, for the programs that stand in for NCCL (the
// example trainer, the plugin's tests). Never linked into the plugin itself.
#pragma once

#include <memory>
#include <string>

#include "sidecar/profiler/nccl_profiler_abi.h"

namespace ringleader::profiler {

// A plugin library opened by path with dlopen(RTLD_NOW | RTLD_LOCAL), as NCCL opens
// NCCL_PROFILER_PLUGIN, and its ncclProfiler_v5 and ncclProfiler_v4 structs. Closed when
// destroyed, so no pointer it gave may be used after.
class PluginLibrary {
 public:
  // nullptr when dlopen fails; *error is then dlerror()'s message (or the path if it has none).
  // A library without either struct opens; see newest_version().
  static std::unique_ptr<PluginLibrary> Open(const std::string& path, std::string* error);
  ~PluginLibrary();
  PluginLibrary(const PluginLibrary&) = delete;
  PluginLibrary& operator=(const PluginLibrary&) = delete;

  // The exported struct, or nullptr when the symbol is missing or one of the functions NCCL calls
  // (init, startEvent, stopEvent, recordEventState, finalize) is null.
  const abi::ProfilerV5* v5() const { return v5_; }
  const abi::ProfilerV4* v4() const { return v4_; }
  // The version NCCL would drive: 5 when v5() is usable, else 4 when v4() is, else 0.
  int newest_version() const;
  // dlsym of any other name, e.g. to show that older versions are not exported.
  void* Symbol(const char* name) const;

 private:
  explicit PluginLibrary(void* handle);

  void* handle_;
  const abi::ProfilerV5* v5_ = nullptr;
  const abi::ProfilerV4* v4_ = nullptr;
};

}  // namespace ringleader::profiler
