// A GoogleTest fixture with a fresh end-to-end bed for every TEST, skipped where this machine
// cannot run Pods (EndToEnd::Supported).
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "tests/e2e/end_to_end.h"

namespace ringleader::testing {

class BedTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!EndToEnd::Supported(&why)) {
      GTEST_SKIP() << "end-to-end runs need network namespaces: " << why;
    }
    bed_ = std::make_unique<EndToEnd>();
  }

  std::unique_ptr<EndToEnd> bed_;
};

}  // namespace ringleader::testing
