// What the sidecar can see of the GPU stack: CUDA devices and the NCCL library version. Built only
// when CMake finds CUDA and NCCL; the info metric and the NCCL backend start from it.
#pragma once

#include <string>

namespace ringleader::gpu {

struct GpuInventory {
  int device_count = 0;
  // Why there are no devices ("no CUDA driver", "no CUDA-capable device"), empty otherwise.
  std::string unavailable_reason;
  int nccl_version_code = 0;   // as ncclGetVersion reports it, e.g. 22809
  std::string nccl_version;    // "2.28.9"
};

GpuInventory InspectGpus();

// NCCL_VERSION_CODE of the headers this binary was compiled against.
int CompiledNcclVersionCode();

// 22809 -> "2.28.9" (NCCL >= 2.9 encodes major*10000 + minor*100 + patch).
std::string FormatNcclVersion(int code);

}  // namespace ringleader::gpu
