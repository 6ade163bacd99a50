// GPU inventory through the CUDA runtime and NCCL; neither call needs a GPU to answer.
#include "sidecar/gpu/gpu_inventory.h"

#include <cuda_runtime_api.h>
#include <nccl.h>

namespace ringleader::gpu {

std::string FormatNcclVersion(int code) {
  return std::to_string(code / 10000) + "." + std::to_string(code / 100 % 100) + "." +
         std::to_string(code % 100);
}

int CompiledNcclVersionCode() { return NCCL_VERSION_CODE; }

GpuInventory InspectGpus() {
  GpuInventory inventory;
  int count = 0;
  const cudaError_t error = cudaGetDeviceCount(&count);
  if (error == cudaSuccess) {
    inventory.device_count = count;
  } else {
    inventory.unavailable_reason = cudaGetErrorString(error);
  }
  int version = 0;
  if (ncclGetVersion(&version) == ncclSuccess) {
    inventory.nccl_version_code = version;
    inventory.nccl_version = FormatNcclVersion(version);
  }
  return inventory;
}

}  // namespace ringleader::gpu
