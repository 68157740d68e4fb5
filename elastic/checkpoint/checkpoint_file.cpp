#include "elastic/checkpoint/checkpoint_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ATen/ATen.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <limits>
#include <memory>
#include <unordered_set>

#include "common/check.h"
#include "common/files.h"
#include "common/sha256.h"
#include "common/version.h"
#include "elastic/checkpoint/checkpoint_format.h"

namespace tl::elastic {
namespace {

using format::kChecksumBytes;
using format::kFixedHeaderBytes;

template <typename... Args>
[[noreturn]] void badFile(const std::string& path, const Args&... what) {
  inputError("checkpoint '", path, "' ", what...);
}

// The whole file in one allocation, left uninitialised: a checkpoint can be hundreds of MB and
// zero-filling it first would cost as much as reading it.
struct FileBytes {
  std::unique_ptr<char[]> data;
  size_t size = 0;
};

FileBytes readWholeFile(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) badFile(path, "does not exist");
    inputError("cannot open checkpoint '", path, "': ", std::strerror(errno));
  }
  struct CloseOnExit {
    int fd;
    ~CloseOnExit() { ::close(fd); }
  } closeOnExit{fd};
  struct stat st;
  if (::fstat(fd, &st) != 0) inputError("cannot stat checkpoint '", path, "': ", std::strerror(errno));
  if (!S_ISREG(st.st_mode)) badFile(path, "is not a regular file");

  FileBytes file;
  file.data.reset(new char[std::max<size_t>(size_t(st.st_size), 1)]);
  while (file.size < size_t(st.st_size)) {
    ssize_t n = ::read(fd, file.data.get() + file.size, size_t(st.st_size) - file.size);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) inputError("cannot read checkpoint '", path, "': ", std::strerror(errno));
    if (n == 0) break;  // shrank while we read: the checks below report what is there
    file.size += size_t(n);
  }
  return file;
}

// Checks everything that does not need the index: magic, version, length, checksum. After this
// the bytes are exactly what a tl writer produced, so the index can be parsed.
format::FixedHeader verifyContainer(const FileBytes& file, const std::string& path) {
  const char* bytes = file.data.get();
  size_t magicBytes = std::min(file.size, sizeof(format::kMagic));
  if (std::memcmp(bytes, format::kMagic, magicBytes) != 0) {
    badFile(path, "is not a tl checkpoint (wrong magic bytes)");
  }
  if (file.size < kFixedHeaderBytes) {
    badFile(path, "is truncated: ", file.size, " bytes, shorter than the ", kFixedHeaderBytes,
            "-byte header");
  }
  auto header = format::decodeFixedHeader(bytes);
  if (header.version != format::kVersion) {
    badFile(path, "has unsupported format version ", header.version, " (this tl, ", tlVersion(),
            ", reads version ", format::kVersion, ")");
  }
  if (file.size < header.fileLength) {
    badFile(path, "is truncated: ", file.size, " of ", header.fileLength, " bytes");
  }
  if (file.size > header.fileLength) {
    badFile(path, "is corrupt: it has ", file.size, " bytes but its header says ", header.fileLength);
  }
  if (header.fileLength < kFixedHeaderBytes + kChecksumBytes) {
    badFile(path, "is corrupt: its header gives an impossible length of ", header.fileLength,
            " bytes");
  }
  size_t checked = header.fileLength - kChecksumBytes;
  Sha256 sha;
  sha.update(bytes, checked);
  auto digest = sha.digest();
  if (std::memcmp(digest.data(), bytes + checked, kChecksumBytes) != 0) {
    badFile(path, "is corrupt: checksum mismatch");
  }
  return header;
}

std::string dumpIndex(const nlohmann::json& index, const std::string& path) {
  try {
    return index.dump();
  } catch (const nlohmann::json::exception& e) {
    // Only invalid UTF-8 in a tensor name or a manifest string gets here: a caller bug.
    throw Error(str("cannot write checkpoint '", path, "': ", e.what()));
  }
}

// The bytes that get stored for `tensor`: its values, contiguous, on the CPU, with lazy
// conjugation or negation applied. No copy when the tensor already is all that.
at::Tensor storedValue(const std::string& name, const at::Tensor& tensor, const std::string& path) {
  TL_CHECK(tensor.defined(), "checkpoint '", path, "': tensor '", name, "' is undefined");
  TL_CHECK(tensor.layout() == at::kStrided, "checkpoint '", path, "': tensor '", name,
           "' has layout ", tensor.layout(), "; only strided tensors can be stored");
  return tensor.detach().cpu().resolve_conj().resolve_neg().contiguous();
}

std::string describeSource(const std::string& source) {
  return source.empty() ? std::string("(in memory)") : "'" + source + "'";
}

}  // namespace

const at::Tensor& CheckpointData::tensor(const std::string& name) const {
  for (const auto& entry : tensors) {
    if (entry.first == name) return entry.second;
  }
  inputError("checkpoint ", describeSource(source), " has no tensor '", name, "'");
}

bool CheckpointData::hasTensor(const std::string& name) const {
  return std::any_of(tensors.begin(), tensors.end(), [&](const auto& e) { return e.first == name; });
}

NamedTensors CheckpointData::withPrefix(const std::string& prefix) const {
  NamedTensors matching;
  for (const auto& [name, value] : tensors) {
    if (name.compare(0, prefix.size(), prefix) == 0) matching.emplace_back(name.substr(prefix.size()), value);
  }
  return matching;
}

void CheckpointData::addWithPrefix(const std::string& prefix, const NamedTensors& named) {
  for (const auto& [name, value] : named) tensors.emplace_back(prefix + name, value);
}

void writeCheckpoint(const std::string& path, const CheckpointData& data) {
  std::vector<at::Tensor> values;
  std::vector<uint64_t> offsets;
  values.reserve(data.tensors.size());
  offsets.reserve(data.tensors.size());
  auto entries = nlohmann::json::array();
  std::unordered_set<std::string> names;
  uint64_t payloadLength = 0;
  for (const auto& [name, tensor] : data.tensors) {
    TL_CHECK(names.insert(name).second, "checkpoint '", path, "': tensor name '", name,
             "' appears twice");
    at::Tensor value = storedValue(name, tensor, path);
    auto dtype = format::dtypeName(value.scalar_type());
    TL_CHECK(dtype.has_value(), "checkpoint '", path, "': tensor '", name, "' has dtype ",
             value.scalar_type(), ", which a checkpoint cannot hold");
    uint64_t offset = format::alignUp(payloadLength);
    uint64_t length = uint64_t(value.numel()) * value.element_size();
    entries.push_back({{"name", name}, {"dtype", *dtype}, {"shape", value.sizes().vec()},
                       {"offset", offset}, {"length", length}});
    payloadLength = offset + length;
    values.push_back(std::move(value));
    offsets.push_back(offset);
  }
  nlohmann::json index = {{"byte_order", format::nativeByteOrder()}, {"manifest", data.manifest},
                          {"payload_length", payloadLength}, {"tensors", std::move(entries)}};
  std::string indexText = dumpIndex(index, path);
  TL_CHECK_LE(indexText.size(), size_t(std::numeric_limits<uint32_t>::max()),
              "checkpoint '", path, "': the index is too large");

  format::FixedHeader header;
  header.indexLength = uint32_t(indexText.size());
  uint64_t payloadStart = format::payloadOffset(header.indexLength);
  header.fileLength = payloadStart + payloadLength + kChecksumBytes;

  // One copy of every tensor into the image; reserve() keeps it from being zero-filled first.
  std::string image;
  image.reserve(header.fileLength);
  image.resize(kFixedHeaderBytes);
  format::encodeFixedHeader(header, image.data());
  image += indexText;
  for (size_t i = 0; i < values.size(); ++i) {
    image.resize(payloadStart + offsets[i], '\0');
    uint64_t length = uint64_t(values[i].numel()) * values[i].element_size();
    if (length > 0) image.append(static_cast<const char*>(values[i].data_ptr()), length);
  }
  image.resize(payloadStart + payloadLength, '\0');
  Sha256 sha;
  sha.update(image.data(), image.size());
  auto digest = sha.digest();
  image.append(reinterpret_cast<const char*>(digest.data()), digest.size());
  TL_CHECK_EQ(image.size(), header.fileLength);

  writeFileAtomic(path, image);
}

CheckpointData readCheckpoint(const std::string& path) {
  FileBytes file = readWholeFile(path);
  format::FixedHeader header = verifyContainer(file, path);
  const char* bytes = file.data.get();

  uint64_t payloadStart = format::payloadOffset(header.indexLength);
  if (payloadStart + kChecksumBytes > header.fileLength) {
    badFile(path, "has an inconsistent index: an index of ", header.indexLength,
            " bytes does not fit in a file of ", header.fileLength, " bytes");
  }
  nlohmann::json index;
  try {
    const char* indexBegin = bytes + kFixedHeaderBytes;
    index = nlohmann::json::parse(indexBegin, indexBegin + header.indexLength);
  } catch (const nlohmann::json::exception& e) {
    badFile(path, "has an unreadable index: ", e.what());
  }
  uint64_t payloadLength = header.fileLength - kChecksumBytes - payloadStart;
  auto entries = format::parseIndex(index, payloadLength, path);

  CheckpointData data;
  data.source = path;
  data.manifest = std::move(index["manifest"]);
  data.tensors.reserve(entries.size());
  for (const auto& entry : entries) {
    const char* src = bytes + payloadStart + entry.offset;
    if (entry.dtype == at::kBool) {
      // Any byte but 0 and 1 in a bool tensor is undefined behaviour in libtorch's kernels.
      const char* bad = std::find_if(src, src + entry.length, [](char b) { return uint8_t(b) > 1; });
      if (bad != src + entry.length) {
        badFile(path, "is corrupt: bool tensor '", entry.name, "' holds byte value ", int(uint8_t(*bad)));
      }
    }
    at::Tensor value = at::empty(entry.shape, at::TensorOptions().dtype(entry.dtype));
    if (entry.length > 0) std::memcpy(value.data_ptr(), src, entry.length);
    data.tensors.emplace_back(entry.name, std::move(value));
  }
  return data;
}

std::string checkpointPath(const std::string& dir) { return joinPath(dir, "checkpoint.tl"); }

bool hasCheckpoint(const std::string& dir) { return fileExists(checkpointPath(dir)); }

void writeCheckpointDir(const std::string& dir, const CheckpointData& data) {
  ensureWritableDir(dir, "checkpoint directory");
  writeCheckpoint(checkpointPath(dir), data);
}

CheckpointData readCheckpointDir(const std::string& dir, const std::string& what) {
  std::string path = checkpointPath(dir);
  if (!fileExists(path)) {
    std::error_code ec;
    bool dirExists = std::filesystem::is_directory(dir, ec);
    inputError(what, " '", dir, "': no checkpoint found (expected ", path, ")",
               dirExists ? "" : "; the directory does not exist");
  }
  return readCheckpoint(path);
}

}  // namespace tl::elastic
