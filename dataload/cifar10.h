// CIFAR-10 binary format ("CIFAR-10 binary version"): data_batch_1.bin .. data_batch_5.bin for
// training, test_batch.bin for testing. A record is one label byte followed by the 32x32 red
// plane, then green, then blue, each row-major. A file may hold any number of records.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "dataload/dataset.h"

namespace tl::data {

constexpr int kCifarSide = 32;
constexpr int kCifarChannels = 3;
constexpr int kCifarClasses = 10;
constexpr int64_t kCifarImageBytes = kCifarSide * kCifarSide * kCifarChannels;  // 3072
constexpr int64_t kCifarRecordBytes = 1 + kCifarImageBytes;                     // 3073

// The file names of a split, in reading order.
std::vector<std::string> cifar10FileNames(Split split);

// Decodes one batch file and appends its images (converted to HWC) and labels. Throws
// InputError naming the file when it is missing, truncated or holds a label >= 10.
void readCifar10File(const std::string& path, std::vector<uint8_t>& hwcPixels,
                     std::vector<int64_t>& labels);

// Encodes `count` HWC images with their labels as CIFAR-10 records (planes, not HWC).
std::string encodeCifar10Records(const uint8_t* hwcPixels, const int64_t* labels, int64_t count);

// All files of a split from `dir`; InputError if one is missing or bad, or the split is empty.
std::unique_ptr<Dataset> openCifar10(const std::string& dir, Split split);

}  // namespace tl::data
