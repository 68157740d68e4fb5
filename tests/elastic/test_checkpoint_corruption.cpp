// Every way a checkpoint file can be damaged is an InputError naming the file and the problem:
// never a crash, never a partial load.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include "common/files.h"
#include "elastic/checkpoint/checkpoint_file.h"
#include "elastic/checkpoint/checkpoint_format.h"
#include "tests/elastic/checkpoint_test_util.h"
#include "tests/support/run_command.h"

namespace tl::elastic {
namespace {

using namespace tl::elastic::testing;

class CheckpointCorruption : public ::testing::Test {
 protected:
  void SetUp() override {
    auto name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    dir_ = tl::testing::freshDir(std::string("ckpt_corrupt_") + name);
    path_ = checkpointPath(dir_);
    writeCheckpoint(path_, sampleCheckpoint());
    good_ = readBytes(path_);
  }

  // Writes `bytes` as the checkpoint and returns the reader's error message.
  std::string errorFor(const std::string& bytes) {
    writeBytes(path_, bytes);
    return inputErrorOf([&] { readCheckpoint(path_); });
  }

  // Applies `change` to the index, seals the file again with a valid checksum, and returns the
  // reader's error: what the index validation alone must catch.
  std::string errorForIndex(const std::function<void(nlohmann::json&)>& change) {
    CheckpointImage image = splitImage(good_);
    change(image.index);
    return errorFor(sealImage(image));
  }

  std::string dir_, path_, good_;
};

TEST_F(CheckpointCorruption, TruncationAtEveryOffsetSaysTruncatedWithBothSizes) {
  size_t indexLength = format::decodeFixedHeader(good_.data()).indexLength;
  ASSERT_GT(good_.size(), 1000u);
  for (size_t keep = 0; keep < good_.size(); ++keep) {
    std::string message = errorFor(good_.substr(0, keep));
    expectContains(message, {"'" + path_ + "'", "is truncated: " + std::to_string(keep)});
    if (keep >= format::kFixedHeaderBytes) {
      expectContains(message, {std::to_string(keep) + " of " + std::to_string(good_.size()) + " bytes"});
    }
    if (::testing::Test::HasFailure()) {
      FAIL() << "at offset " << keep << " (index ends at " << 24 + indexLength << ")";
    }
  }
}

TEST_F(CheckpointCorruption, FlippedByteInEveryRegionIsDetected) {
  for (size_t offset = 0; offset < good_.size(); ++offset) {
    std::string bad = good_;
    bad[offset] = char(bad[offset] ^ 0x10);
    std::string message = errorFor(bad);
    std::vector<std::string> expected = {"'" + path_ + "'"};
    if (offset < 8) {
      expected.push_back("is not a tl checkpoint");
    } else if (offset < 12) {
      expected.push_back("unsupported format version");
    } else if (offset >= 16 && offset < 24) {
      // A damaged file-length field reads as a length mismatch; either message names both sizes.
      uint64_t claimed = format::decodeFixedHeader(bad.data()).fileLength;
      expected.push_back(claimed > good_.size() ? "is truncated" : "is corrupt");
      expected.push_back(std::to_string(claimed));
    } else {
      // Index length, index, padding, payload and the checksum itself.
      expected.push_back("is corrupt: checksum mismatch");
    }
    expectContains(message, expected);
    if (::testing::Test::HasFailure()) FAIL() << "at offset " << offset;
  }
}

TEST_F(CheckpointCorruption, TrailingBytesAreReported) {
  expectContains(errorFor(good_ + "junk"),
                 {"is corrupt: it has " + std::to_string(good_.size() + 4) + " bytes",
                  "header says " + std::to_string(good_.size())});
}

TEST_F(CheckpointCorruption, OtherFilesAreNotTlCheckpoints) {
  for (std::string other : {std::string("PK\x03\x04 a zip file from torch.save"),
                            std::string("{\"json\": true}"), std::string("\x89TLCKPX\n", 8) + "1234"}) {
    expectContains(errorFor(other), {"'" + path_ + "'", "is not a tl checkpoint"});
  }
}

TEST_F(CheckpointCorruption, MissingFileAndDirectoryInsteadOfFile) {
  auto missing = dir_ + "/none.tl";
  expectContains(inputErrorOf([&] { readCheckpoint(missing); }),
                 {"checkpoint '" + missing + "' does not exist"});
  expectContains(inputErrorOf([&] { readCheckpoint(dir_); }),
                 {"checkpoint '" + dir_ + "' is not a regular file"});
}

TEST_F(CheckpointCorruption, NewerFormatVersionIsUnsupported) {
  CheckpointImage image = splitImage(good_);
  image.version = 2;
  expectContains(errorFor(sealImage(image)),
                 {"'" + path_ + "'", "unsupported format version 2", "reads version 1"});
}

TEST_F(CheckpointCorruption, UnparsableIndexIsReported) {
  CheckpointImage image = splitImage(good_);
  expectContains(errorFor(sealImage(1, "{\"tensors\": [", image.payload)),
                 {"'" + path_ + "'", "has an unreadable index"});
  expectContains(errorFor(sealImage(1, "[]", image.payload)), {"index is not a JSON object"});
}

TEST_F(CheckpointCorruption, IndexInconsistentWithThePayloadIsReported) {
  const std::string inconsistent = "'" + path_ + "' has an inconsistent index: ";
  size_t payloadLength = splitImage(good_).payload.size();
  expectContains(errorForIndex([&](auto& index) { index["tensors"][0]["offset"] = payloadLength; }),
                 {inconsistent, "tensor 'model/conv1.weight' occupies bytes",
                  "payload of " + std::to_string(payloadLength)});
  expectContains(errorForIndex([](auto& index) { index["tensors"][0]["offset"] = UINT64_MAX; }),
                 {inconsistent, "occupies bytes"});
  expectContains(errorForIndex([](auto& index) { index["tensors"][1]["length"] = 8; }),
                 {inconsistent, "tensor 'model/fc.bias' of dtype float64 and shape [10] needs 80 bytes",
                  "gives 8"});
  expectContains(errorForIndex([](auto& index) { index["tensors"][1]["shape"] = {5, 3}; }),
                 {inconsistent, "needs 120 bytes"});
  expectContains(errorForIndex([](auto& index) { index["tensors"][0]["dtype"] = "float8"; }),
                 {inconsistent, "unknown dtype 'float8'"});
  expectContains(errorForIndex([](auto& index) { index["tensors"][0]["shape"] = {-1, 4}; }),
                 {inconsistent, "shape dimension -1"});
  expectContains(errorForIndex([](auto& index) {
                   index["tensors"][0]["shape"] = {uint64_t(1) << 62, uint64_t(1) << 62};
                 }),
                 {inconsistent, "too large"});
  expectContains(errorForIndex([](auto& index) { index["tensors"][1]["name"] = "model/conv1.weight"; }),
                 {inconsistent, "tensor name 'model/conv1.weight' appears twice"});
  expectContains(errorForIndex([](auto& index) { index["tensors"][2].erase("dtype"); }),
                 {inconsistent, "tensor 'half' has no 'dtype'"});
  expectContains(errorForIndex([](auto& index) { index["tensors"][2]["name"] = 7; }),
                 {inconsistent, "tensor #2 has 'name' = 7, not a string"});
  expectContains(errorForIndex([](auto& index) { index["tensors"] = "none"; }),
                 {inconsistent, "'tensors' is not a list"});
  expectContains(errorForIndex([](auto& index) { index.erase("manifest"); }),
                 {inconsistent, "the index has no 'manifest'"});
  expectContains(errorForIndex([&](auto& index) { index["payload_length"] = payloadLength + 64; }),
                 {inconsistent, "payload_length is " + std::to_string(payloadLength + 64)});
  expectContains(errorForIndex([](auto& index) { index["byte_order"] = "big"; }),
                 {"'" + path_ + "' holds big-endian tensors"});
}

TEST_F(CheckpointCorruption, BoolTensorWithAByteOtherThanZeroOrOneIsReported) {
  CheckpointImage image = splitImage(good_);
  for (const auto& entry : image.index["tensors"]) {
    if (entry["name"] == "bool") image.payload[entry["offset"].get<size_t>() + 1] = 2;
  }
  expectContains(errorFor(sealImage(image)),
                 {"'" + path_ + "' is corrupt: bool tensor 'bool' holds byte value 2"});
}

TEST_F(CheckpointCorruption, ResealedUnchangedImageStillReads) {
  // Guards the tests above: the re-sealing helper itself produces valid files.
  writeBytes(path_, sealImage(splitImage(good_)));
  expectIdentical(sampleCheckpoint(), readCheckpoint(path_));
}

}  // namespace
}  // namespace tl::elastic
