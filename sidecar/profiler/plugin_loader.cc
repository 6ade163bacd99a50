// Opening a profiler plugin as NCCL does (plugin_loader.h).
#include "sidecar/profiler/plugin_loader.h"

#include <dlfcn.h>

namespace ringleader::profiler {
namespace {

// Null when any function NCCL calls is missing: NCCL could not drive such a struct.
template <typename Profiler>
const Profiler* Complete(void* symbol) {
  const auto* profiler = static_cast<const Profiler*>(symbol);
  if (profiler == nullptr || profiler->init == nullptr || profiler->startEvent == nullptr ||
      profiler->stopEvent == nullptr || profiler->recordEventState == nullptr ||
      profiler->finalize == nullptr) {
    return nullptr;
  }
  return profiler;
}

}  // namespace

std::unique_ptr<PluginLibrary> PluginLibrary::Open(const std::string& path, std::string* error) {
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    *error = why != nullptr ? why : path;
    return nullptr;
  }
  return std::unique_ptr<PluginLibrary>(new PluginLibrary(handle));
}

PluginLibrary::PluginLibrary(void* handle)
    : handle_(handle),
      v5_(Complete<abi::ProfilerV5>(dlsym(handle, "ncclProfiler_v5"))),
      v4_(Complete<abi::ProfilerV4>(dlsym(handle, "ncclProfiler_v4"))) {}

PluginLibrary::~PluginLibrary() { dlclose(handle_); }

int PluginLibrary::newest_version() const {
  if (v5_ != nullptr) {
    return 5;
  }
  return v4_ != nullptr ? 4 : 0;
}

void* PluginLibrary::Symbol(const char* name) const { return dlsym(handle_, name); }

}  // namespace ringleader::profiler
