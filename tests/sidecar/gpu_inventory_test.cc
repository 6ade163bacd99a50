// The GPU stack as the sidecar sees it. Runs everywhere the NCCL parts are built; the checks
// that need a GPU skip cleanly on machines without one.
#include "sidecar/gpu/gpu_inventory.h"

#include <gtest/gtest.h>

namespace ringleader::gpu {
namespace {

TEST(GpuInventoryTest, FormatsNcclVersionCodes) {
  EXPECT_EQ(FormatNcclVersion(22809), "2.28.9");
  EXPECT_EQ(FormatNcclVersion(21903), "2.19.3");
}

// The library loaded at run time, which may be another patch release than the headers (a GPU
// image's NCCL 2.28.3 under a build against 2.28.9 ran here): the same 2.minor series.
TEST(GpuInventoryTest, ReportsTheLoadedNcclOfTheSeriesItWasBuiltWith) {
  const GpuInventory inventory = InspectGpus();
  EXPECT_EQ(inventory.nccl_version_code / 100, CompiledNcclVersionCode() / 100);
  EXPECT_EQ(inventory.nccl_version, FormatNcclVersion(inventory.nccl_version_code));
}

TEST(GpuInventoryTest, ReportsDevicesOrSaysWhyThereAreNone) {
  const GpuInventory inventory = InspectGpus();
  if (inventory.device_count == 0) {
    EXPECT_FALSE(inventory.unavailable_reason.empty());
    GTEST_SKIP() << "no GPU here: " << inventory.unavailable_reason;
  }
  EXPECT_GT(inventory.device_count, 0);
  EXPECT_TRUE(inventory.unavailable_reason.empty());
}

}  // namespace
}  // namespace ringleader::gpu
