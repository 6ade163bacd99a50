// Container logs on disk: each run's output apart, a log without notes one run.
#include "tests/devcluster/kubelet/container_log.h"

#include <gtest/gtest.h>

#include <fstream>

#include "tests/support/test_environment.h"

namespace ringleader::devcluster::kubelet {
namespace {

void Append(const std::filesystem::path& dir, const std::string& text) {
  std::ofstream(ContainerLogPath(dir, "c"), std::ios::app) << text;
}

TEST(ContainerLogTest, EachRunReadsBackApartAndTheOneBeforeIsKept) {
  const std::filesystem::path dir = ringleader::testing::MakeTempDir("container-log-test");
  std::filesystem::create_directories(dir / "logs");
  EXPECT_EQ(ReadContainerRun(dir, "c", ContainerRun::kLast), "");
  Append(dir, "before any note\n");
  EXPECT_EQ(ReadContainerRun(dir, "c", ContainerRun::kLast), "before any note\n");
  EXPECT_EQ(ReadContainerRun(dir, "c", ContainerRun::kBeforeLast), "");
  NoteContainerRunStart(dir, "c");
  Append(dir, "first\n");
  NoteContainerRunStart(dir, "c");
  EXPECT_EQ(ReadContainerRun(dir, "c", ContainerRun::kLast), "");
  Append(dir, "second\n");
  EXPECT_EQ(ReadContainerRun(dir, "c", ContainerRun::kLast), "second\n");
  EXPECT_EQ(ReadContainerRun(dir, "c", ContainerRun::kBeforeLast), "first\n");
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace ringleader::devcluster::kubelet
