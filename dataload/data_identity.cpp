#include "dataload/data_identity.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>

#include "common/check.h"
#include "common/files.h"
#include "common/sha256.h"
#include "dataload/array_dataset.h"
#include "dataload/cifar10.h"
#include "dataload/image_folder.h"

namespace tl::data {
namespace {

constexpr int64_t kSampledFiles = 64;
constexpr int64_t kBlockBytes = 4096;

// The files the training split of `kind` reads, relative to `dir`, in reading order.
std::vector<std::string> trainingFiles(const std::string& kind, const std::string& dir) {
  std::vector<std::string> names;
  auto addIfPresent = [&](const std::string& name) {
    if (fileExists(joinPath(dir, name))) names.push_back(name);
  };
  if (kind == "cifar10") {
    for (const std::string& name : cifar10FileNames(Split::Train)) addIfPresent(name);
  } else if (kind == "mnist" || kind == "fashion-mnist") {
    // The reader takes the plain file when both are there.
    for (const std::string name : {"train-images-idx3-ubyte", "train-labels-idx1-ubyte"}) {
      if (fileExists(joinPath(dir, name)))
        names.push_back(name);
      else
        addIfPresent(name + ".gz");
    }
  } else if (kind == "imagefolder") {
    const ImageFolderDataset folder(dir, Split::Train, DatasetOptions{});
    const std::string prefix = joinPath(dir, "");
    for (int64_t i = 0; i < folder.size(); ++i) {
      const std::string path = folder.path(i);
      names.push_back(path.compare(0, prefix.size(), prefix) == 0 ? path.substr(prefix.size())
                                                                  : path);
    }
  } else if (isArrayDataset(kind)) {
    names = arrayDatasetFiles(kind, dir, Split::Train);
  } else {
    inputError("unknown dataset kind '", kind, "'");
  }
  return names;
}

int64_t fileBytes(const std::string& path) {
  requireRegularFile("data file", path);
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0)
    inputError("data file '", path, "' cannot be read: ", std::strerror(errno));
  return int64_t(info.st_size);
}

// The first and last kBlockBytes of a file (all of it when smaller than two blocks).
void hashEnds(Sha256& hash, const std::string& path, int64_t bytes) {
  std::ifstream in(path, std::ios::binary);
  TL_REQUIRE(in, "data file '", path, "' cannot be read");
  std::string block(size_t(std::min(bytes, 2 * kBlockBytes)), '\0');
  if (bytes <= 2 * kBlockBytes) {
    in.read(block.data(), std::streamsize(block.size()));
  } else {
    in.read(block.data(), kBlockBytes);
    in.seekg(bytes - kBlockBytes);
    in.read(block.data() + kBlockBytes, kBlockBytes);
  }
  TL_REQUIRE(in, "data file '", path, "' cannot be read (it changed while being identified)");
  hash.update(block.data(), block.size());
}

std::string absolute(const std::string& dir) {
  std::error_code error;
  const auto path = std::filesystem::absolute(dir, error);
  return error ? dir : path.lexically_normal().string();
}

}  // namespace

DataIdentity identifyData(const std::string& kind, const std::string& dir) {
  DataIdentity id;
  id.kind = kind;
  id.dir = absolute(dir);
  const std::vector<std::string> names = trainingFiles(kind, id.dir);
  id.fileCount = int64_t(names.size());
  Sha256 hash;
  const std::string header = "tl-data-identity-1\n" + kind + "\n";
  hash.update(header.data(), header.size());
  std::vector<int64_t> sizes;
  for (const std::string& name : names) {
    const int64_t bytes = fileBytes(joinPath(id.dir, name));
    sizes.push_back(bytes);
    id.totalBytes += bytes;
    const std::string entry = name + '\0' + std::to_string(bytes) + '\n';
    hash.update(entry.data(), entry.size());
    if (id.fileCount <= DataIdentity::kListedFiles) id.files.push_back({name, bytes});
  }
  // Contents: the ends of every file, or of an even sample of a large set.
  const int64_t sampled = std::min(id.fileCount, kSampledFiles);
  for (int64_t k = 0; k < sampled; ++k) {
    const int64_t i = sampled == id.fileCount ? k : k * (id.fileCount - 1) / (sampled - 1);
    hashEnds(hash, joinPath(id.dir, names[size_t(i)]), sizes[size_t(i)]);
  }
  id.fingerprint = hash.hexDigest();
  return id;
}

std::string describeDataDifference(const DataIdentity& saved, const DataIdentity& now) {
  if (saved.fingerprint == now.fingerprint) return "";
  std::vector<std::string> items;
  if (saved.kind != now.kind)
    items.push_back(str("dataset kind ", now.kind, " (then ", saved.kind, ")"));
  if (!saved.files.empty() && !now.files.empty()) {
    std::map<std::string, int64_t> before, after;
    for (const DataFile& f : saved.files) before[f.name] = f.bytes;
    for (const DataFile& f : now.files) after[f.name] = f.bytes;
    for (const auto& [name, bytes] : before) {
      const auto it = after.find(name);
      if (it == after.end())
        items.push_back(str(name, " is missing (then ", bytes, " bytes)"));
      else if (it->second != bytes)
        items.push_back(str(name, " has ", it->second, " bytes (then ", bytes, ")"));
    }
    for (const auto& [name, bytes] : after) {
      if (!before.count(name)) items.push_back(str(name, " is new (", bytes, " bytes)"));
    }
  } else if (saved.fileCount != now.fileCount || saved.totalBytes != now.totalBytes) {
    items.push_back(str(now.fileCount, " files of ", now.totalBytes, " bytes (then ",
                        saved.fileCount, " files of ", saved.totalBytes, " bytes)"));
  }
  if (items.empty()) items.push_back("the same files and sizes, but other contents");
  std::string text;
  for (size_t i = 0; i < items.size() && i < 5; ++i) text += (i ? "; " : "") + items[i];
  if (items.size() > 5) text += str("; and ", items.size() - 5, " more");
  return text;
}

}  // namespace tl::data
