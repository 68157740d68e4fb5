// Helpers shared by the checkpoint tests: sample data, raw-byte comparison, error capture, and
// re-sealing a deliberately damaged image so that it passes the checksum.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

#include "elastic/checkpoint/checkpoint_file.h"

namespace tl::elastic::testing {

// The exact bytes of a tensor's values (contiguous, row-major).
std::string rawBytes(const at::Tensor& tensor);

// A float32 / float64 tensor holding exactly these bit patterns (NaN payloads, -0.0, ...).
at::Tensor floatFromBits(const std::vector<uint32_t>& bits);
at::Tensor doubleFromBits(const std::vector<uint64_t>& bits);

// Every dtype the format holds, 0-dim and empty tensors, odd names, and a nested manifest.
CheckpointData sampleCheckpoint();

// Same names, dtypes, shapes and bytes; same manifest.
void expectIdentical(const CheckpointData& expected, const CheckpointData& actual);

// The message of the tl::InputError that `action` throws; a test failure if it throws nothing or
// something else.
std::string inputErrorOf(const std::function<void()>& action);
// Fails unless `message` contains every one of `parts`.
void expectContains(const std::string& message, const std::vector<std::string>& parts);

std::string readBytes(const std::string& path);
void writeBytes(const std::string& path, const std::string& bytes);

// A checkpoint file taken apart along the format's regions, to be changed and sealed again.
struct CheckpointImage {
  uint32_t version = 0;
  nlohmann::json index;
  std::string payload;
};
CheckpointImage splitImage(const std::string& bytes);
// Lays the image out with correct lengths, padding and checksum.
std::string sealImage(const CheckpointImage& image);
// Like sealImage, but with the index text given verbatim (for unparsable indexes).
std::string sealImage(uint32_t version, const std::string& indexText, const std::string& payload);

}  // namespace tl::elastic::testing
