// End-to-end: tl-launch under real mpirun on array datasets written by `tl-data tensors-synth`
// and `tokens-synth`. The built-in mlp trains on image-shaped float32 .npy samples to the same
// parameters in DDP mode (4 processes) and with placement 3,1 on 2; bad folders and flags stop
// tl-launch before the first step with one message and exit status 2.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "tests/support/run_command.h"

namespace {

using tl::testing::CommandResult;
using tl::testing::freshDir;
using tl::testing::runCommand;
using tl::testing::slurp;

std::string gTensors, gTokens;

class ArrayDataE2E : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    gTensors = freshDir("array_e2e_tensors");
    gTokens = freshDir("array_e2e_tokens");
    auto r = runCommand(std::string(TL_DATA_BIN) + " tensors-synth --out " + gTensors +
                            " --train 96 --test 16 --shape 1,8,8 --classes 4 --seed 3",
                        60, gTensors);
    ASSERT_EQ(r.exitCode, 0) << r.err;
    r = runCommand(std::string(TL_DATA_BIN) + " tokens-synth --out " + gTokens +
                       " --train 2000 --val 200 --vocab 32",
                   60, gTokens);
    ASSERT_EQ(r.exitCode, 0) << r.err;
  }

  static std::string launchArgs(const std::string& data, const std::string& out) {
    return std::string(TL_LAUNCH_BIN) + " --dataset tensors --data-dir " + data +
           " --model mlp --batch 8 --steps 6 --log-every 0 --seed 5 --output-dir " + out;
  }

  static nlohmann::json summary(const std::string& outDir) {
    return nlohmann::json::parse(slurp(outDir + "/summary.json"));
  }

  // tl-launch alone (one process): bad input is found before any training.
  static CommandResult single(const std::string& args) {
    const std::string out = freshDir("array_e2e_single");
    return runCommand(std::string(TL_LAUNCH_BIN) + " --steps 1 --output-dir " + out + " " + args, 60, out);
  }
};

TEST_F(ArrayDataE2E, DdpModeAndPlacement31GiveTheSameParams) {
  const std::string ddp = freshDir("array_e2e_ddp"), packed = freshDir("array_e2e_31");
  const CommandResult a = runCommand(std::string(TL_MPIEXEC) + " --oversubscribe -np 4 " +
                                         launchArgs(gTensors, ddp) + " --workers 1 --eval",
                                     300, ddp);
  ASSERT_EQ(a.exitCode, 0) << a.out << a.err;
  const CommandResult b = runCommand(std::string(TL_MPIEXEC) + " --oversubscribe -np 2 " +
                                         launchArgs(gTensors, packed) +
                                         " --logical-workers 4 --placement 3,1 --workers 2",
                                     300, packed);
  ASSERT_EQ(b.exitCode, 0) << b.out << b.err;
  const nlohmann::json sa = summary(ddp), sb = summary(packed);
  EXPECT_EQ(sa["steps"], 6);
  EXPECT_EQ(sa["params_sha256"].get<std::string>().size(), 64u);
  EXPECT_EQ(sa["params_sha256"], sb["params_sha256"]);
  EXPECT_TRUE(sa.contains("test_acc")) << sa.dump();
}

TEST_F(ArrayDataE2E, ToolInfoDescribesBothSplits) {
  const CommandResult r = runCommand(std::string(TL_DATA_BIN) + " info --kind tokens --dir " +
                                         gTokens + " --seq-len 16",
                                     60, gTokens);
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_NE(r.out.find("tokens train, 124 samples of 16 tokens (2000 int32 tokens)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("samples int64 (16,), targets int64 (16,)"), std::string::npos) << r.out;
}

TEST_F(ArrayDataE2E, BadInputIsOneMessageAndExitStatus2) {
  // A Fortran-order x, written by hand.
  const std::string fortran = freshDir("array_e2e_fortran");
  std::filesystem::copy(gTensors, fortran, std::filesystem::copy_options::overwrite_existing | std::filesystem::copy_options::recursive);
  {
    std::string bytes = slurp(fortran + "/train_x.npy");
    const size_t at = bytes.find("'fortran_order': False");
    ASSERT_NE(at, std::string::npos);
    bytes.replace(at, 22, "'fortran_order': True ");
    std::ofstream(fortran + "/train_x.npy", std::ios::binary | std::ios::trunc) << bytes;
  }
  // x and y of different lengths.
  const std::string uneven = freshDir("array_e2e_uneven");
  std::filesystem::copy(gTensors, uneven, std::filesystem::copy_options::overwrite_existing | std::filesystem::copy_options::recursive);
  std::filesystem::copy_file(gTensors + "/test_y.npy", uneven + "/train_y.npy",
                             std::filesystem::copy_options::overwrite_existing | std::filesystem::copy_options::recursive);
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"--dataset tensors --data-dir " + fortran, "'" + fortran + "/train_x.npy' is in Fortran order"},
      {"--dataset tensors --data-dir " + uneven, "do not match: 96 samples in x but 16 in y"},
      {"--dataset tensors --data-dir " + gTensors + " --seq-len 4",
       "--seq-len and --token-dtype apply to --dataset tokens only"},
      {"--dataset tokens --data-dir " + gTokens + " --seq-len 5000", "--seq-len 5000 is longer than the data"},
      {"--dataset tokens --data-dir " + gTokens, "--seq-len: --dataset tokens needs the tokens per sample"},
      {"--dataset tokens --data-dir " + gTokens + " --seq-len 8 --model mlp",
       "--model mlp takes float32 inputs, but --dataset tokens gives int64 (8,)"},
      {"--dataset tensors --data-dir " + gTensors + " --model resnet --depth 8 --token-dtype uint16",
       "--seq-len and --token-dtype apply to --dataset tokens only"},
  };
  for (const auto& [args, message] : cases) {
    const CommandResult r = single(args);
    EXPECT_EQ(r.exitCode, 2) << args << "\n" << r.out << r.err;
    EXPECT_NE(r.err.find(message), std::string::npos) << args << "\n" << r.err;
  }
}

}  // namespace
