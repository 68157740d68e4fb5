// The data and TorchScript modules the own-model tests train on, made once per test binary:
// synthetic CIFAR-10 images, synthetic tokens (200 validation tokens), and the modules
// tests/launcher/own_models.py exports with TL_TORCH_PYTHON (skipped where it has no torch).
// Header-only; the including test is an e2e test with TOOLS tl-data (TL_DATA_BIN).
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "tests/support/run_command.h"

namespace tl::testing {

class OwnModelFixture : public ::testing::Test {
 protected:
  static std::string& images() { static std::string dir; return dir; }
  static std::string& tokens() { static std::string dir; return dir; }
  static std::string& modules() { static std::string dir; return dir; }
  static bool& noTorch() { static bool none = false; return none; }
  static std::string script() { return std::string(TL_SOURCE_DIR) + "/tests/launcher/own_models.py"; }
  static std::string module(const std::string& name) { return modules() + "/" + name; }

  // From SetUpTestSuite: the folders are named after `prefix`.
  static void prepare(const std::string& prefix) {
    std::string error;
    images() = makeSyntheticCifar(prefix + "_data", 256, 64, 1, &error);
    ASSERT_EQ(error, "");
    tokens() = freshDir(prefix + "_tokens");
    auto t = runCommand(std::string(TL_DATA_BIN) + " tokens-synth --out " + tokens() + " --train 2000 --val 200 --vocab 32",
                        60, tokens());
    ASSERT_EQ(t.exitCode, 0) << t.err;
    modules() = freshDir(prefix + "_modules");
    auto r = runCommand(std::string(TL_TORCH_PYTHON) + " " + script() + " export " + modules(), 300, modules());
    noTorch() = r.exitCode == 77;
    ASSERT_TRUE(r.exitCode == 0 || noTorch()) << r.out << r.err;
  }

  void SetUp() override {
    if (noTorch()) GTEST_SKIP() << TL_TORCH_PYTHON << " has no torch: cannot export TorchScript modules";
  }
};

}  // namespace tl::testing
