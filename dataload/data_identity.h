// The identity of a job's training data, kept in its checkpoints so that a resume on other
// data is refused instead of silently training on it.
//
// It is cheap enough for large sets: the names and sizes of every file the training split reads,
// plus the first and last 4 KiB of at most 64 of them (all of them for CIFAR-10, IDX and the
// array datasets' .npy/.bin files, an even sample of an image folder), hashed into one SHA-256 fingerprint. The folder itself is not part
// of it: data that moved keeps its fingerprint.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tl::data {

struct DataFile {
  std::string name;  // relative to the data folder
  int64_t bytes = 0;
};

struct DataIdentity {
  std::string kind;  // the dataset kind ("cifar10", ...)
  std::string dir;   // absolute path of the folder it was found in
  int64_t fileCount = 0;
  int64_t totalBytes = 0;
  std::vector<DataFile> files;  // every file, for sets of at most kListedFiles; else empty
  std::string fingerprint;      // 64 hex characters

  static constexpr int64_t kListedFiles = 256;
};

// Identifies the training split of a `kind` dataset in `dir` (relative paths are made absolute).
// Files the split needs but that are missing are left out (the reader names them); InputError
// when a file cannot be read or an image folder cannot be listed.
DataIdentity identifyData(const std::string& kind, const std::string& dir);

// Empty when `now` is the same data as `saved` (same fingerprint); otherwise what differs, for
// messages: "data_batch_3.bin has 307300 bytes (then 1536500); ...", at most a few items.
std::string describeDataDifference(const DataIdentity& saved, const DataIdentity& now);

}  // namespace tl::data
