#include "dataload/image_folder.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <system_error>
#include <thread>

#include <spdlog/spdlog.h>

#include "common/check.h"
#include "common/files.h"
#include "dataload/jpeg_codec.h"

namespace tl::data {
namespace {

namespace fs = std::filesystem;

bool isJpegName(const std::string& name) {
  const size_t dot = name.rfind('.');
  if (dot == std::string::npos) return false;
  std::string extension = name.substr(dot + 1);
  for (char& c : extension) c = char(std::tolower(static_cast<unsigned char>(c)));
  return extension == "jpg" || extension == "jpeg";
}

// The entries of `dir` that are folders (wantFolders) or JPEG files, sorted by name.
std::vector<std::string> sortedEntries(const std::string& dir, bool wantFolders) {
  std::error_code error;
  fs::directory_iterator it(dir, error);
  TL_REQUIRE(!error, "image folder '", dir, "' cannot be read: ", error.message());
  std::vector<std::string> names;
  for (; it != fs::directory_iterator(); it.increment(error)) {
    TL_REQUIRE(!error, "image folder '", dir, "' cannot be read: ", error.message());
    const std::string name = it->path().filename().string();
    std::error_code typeError;  // a dangling link is neither, and not an error
    if (wantFolders) {
      if (it->is_directory(typeError)) names.push_back(name);
    } else if (isJpegName(name) && it->exists(typeError)) {
      // An image name on a folder (or a fifo) would be data silently left out.
      requireRegularFile("image", it->path().string());
      names.push_back(name);
    }
  }
  TL_REQUIRE(!error, "image folder '", dir, "' cannot be read: ", error.message());
  std::sort(names.begin(), names.end());
  return names;
}

// Reads a whole file into `bytes` (reused across calls, so no allocation per sample). With
// `dropFromPageCache` the file's pages are dropped from the kernel's page cache afterwards.
void readWholeFile(const std::string& path, std::vector<uint8_t>& bytes, bool dropFromPageCache) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  TL_REQUIRE(fd >= 0, "image '", path, "' cannot be opened: ", std::strerror(errno));
  struct stat info {};
  if (::fstat(fd, &info) != 0) {
    const int saved = errno;
    ::close(fd);
    inputError("image '", path, "' cannot be read: ", std::strerror(saved));
  }
  if (!S_ISREG(info.st_mode)) {
    ::close(fd);
    requireRegularFile("image", path);  // names what it is; replaced since it was listed
    inputError("image '", path, "' is not a regular file");
  }
  bytes.resize(size_t(info.st_size));
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t got = ::read(fd, bytes.data() + done, bytes.size() - done);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) {
      const int saved = errno;
      ::close(fd);
      inputError("image '", path, "' cannot be read: ",
                 got == 0 ? "it shrank while being read" : std::strerror(saved));
    }
    done += size_t(got);
  }
  // Advice only: a kernel that ignores it leaves the pages cached, which changes no byte.
  if (dropFromPageCache) (void)::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  ::close(fd);
}

std::string joinNames(const std::vector<std::string>& names) {
  std::string out;
  for (size_t i = 0; i < names.size() && i < 5; ++i) out += (i ? ", " : "") + names[i];
  if (names.size() > 5) out += ", ... (" + std::to_string(names.size()) + " in all)";
  return out;
}

// InputError naming the first class that one split has and the other lacks.
void requireSameClasses(const std::string& valDir, const std::vector<std::string>& val,
                        const std::string& trainDir, const std::vector<std::string>& train) {
  if (val == train) return;
  std::vector<std::string> onlyVal, onlyTrain;
  std::set_difference(val.begin(), val.end(), train.begin(), train.end(),
                      std::back_inserter(onlyVal));
  std::set_difference(train.begin(), train.end(), val.begin(), val.end(),
                      std::back_inserter(onlyTrain));
  inputError("the class folders of '", valDir, "' (", val.size(), ") differ from those of '",
             trainDir, "' (", train.size(), "): only in val: ",
             onlyVal.empty() ? "none" : joinNames(onlyVal),
             "; only in train: ", onlyTrain.empty() ? "none" : joinNames(onlyTrain));
}

}  // namespace

const char* imageFolderSplitName(Split split) { return split == Split::Train ? "train" : "val"; }

std::vector<int64_t> ImageFolderDataset::corruptSamplesSkipped() const {
  std::vector<int64_t> out;
  if (!knownCorrupt_) return out;
  for (int64_t i = 0; i < size(); ++i) {
    if (knownCorrupt_[size_t(i)].load(std::memory_order_relaxed)) out.push_back(i);
  }
  return out;
}

std::vector<std::string> imageFolderClasses(const std::string& splitDir) {
  std::error_code error;
  TL_REQUIRE(fs::is_directory(splitDir, error), "image folder '", splitDir,
             "' is missing (an image-folder dataset holds train/<class>/*.jpg and "
             "val/<class>/*.jpg)");
  return sortedEntries(splitDir, true);
}

ImageFolderDataset::ImageFolderDataset(const std::string& dir, Split split,
                                       const DatasetOptions& options)
    : splitDir_(joinPath(dir, imageFolderSplitName(split))), options_(options) {
  classNames_ = imageFolderClasses(splitDir_);
  TL_REQUIRE(!classNames_.empty(), "image folder '", splitDir_,
             "' has no class folders (expected one subfolder per class holding .jpg files)");
  if (split == Split::Test) {
    // Evaluation reads labels by index, so val's class k must be train's class k.
    const std::string trainDir = joinPath(dir, imageFolderSplitName(Split::Train));
    std::error_code error;
    if (fs::is_directory(trainDir, error)) {
      requireSameClasses(splitDir_, classNames_, trainDir, imageFolderClasses(trainDir));
    }
  }
  fileOffsets_.push_back(0);
  for (const std::string& className : classNames_) {
    classBegin_.push_back(int64_t(fileOffsets_.size()) - 1);
    const std::string classDir = joinPath(splitDir_, className);
    const std::vector<std::string> files = sortedEntries(classDir, false);
    TL_REQUIRE(!files.empty(), "class folder '", classDir, "' holds no .jpg or .jpeg images");
    for (const std::string& file : files) {
      fileNames_ += file;
      fileOffsets_.push_back(fileNames_.size());
    }
  }
  classBegin_.push_back(size());
  if (options_.skipCorrupt) {
    knownCorrupt_ = std::make_unique<std::atomic<bool>[]>(size_t(size()));
    for (int64_t i = 0; i < size(); ++i) knownCorrupt_[size_t(i)].store(false);
  }
  if (options_.cacheBytes >= 0) cache_ = std::make_unique<SampleCache>(size(), options_.cacheBytes);
}

std::string ImageFolderDataset::describe() const {
  return str(
      "image folder ", splitDir_, ", ", size(), " JPEG images, ", numClasses(), " classes",
      options_.skipCorrupt ? ", corrupt files skipped" : "",
      cache_ ? str(", cache of ", double(cache_->stats().budgetBytes) / 1048576.0, " MiB") : "",
      options_.storageBytesPerSecond > 0
          ? str(", storage emulated at ", options_.storageBytesPerSecond / 1e6, " MB/s")
          : "");
}

int64_t ImageFolderDataset::label(int64_t index) const {
  TL_CHECK(index >= 0 && index < size(), "sample ", index, " outside ", describe());
  return int64_t(std::upper_bound(classBegin_.begin(), classBegin_.end(), index) -
                 classBegin_.begin()) - 1;
}

std::string ImageFolderDataset::path(int64_t index) const {
  TL_CHECK(index >= 0 && index < size(), "sample ", index, " outside ", describe());
  const size_t begin = size_t(fileOffsets_[size_t(index)]);
  const size_t length = size_t(fileOffsets_[size_t(index) + 1]) - begin;
  return joinPath(joinPath(splitDir_, classNames_[size_t(label(index))]),
                  fileNames_.substr(begin, length));
}

ImageView ImageFolderDataset::image(int64_t index, std::vector<uint8_t>& scratch) const {
  return imageAtReduction(index, scratch, {});
}

ImageView ImageFolderDataset::imageAtReduction(int64_t index, std::vector<uint8_t>& scratch,
                                               const PickReduction& pick) const {
  return options_.skipCorrupt ? decodeSkippingCorrupt(index, scratch, pick)
                              : decodeFile(index, scratch, pick);
}

void ImageFolderDataset::waitForEmulatedStorage(std::chrono::steady_clock::time_point readStart,
                                                size_t bytes) const {
  if (options_.storageBytesPerSecond <= 0) return;
  std::this_thread::sleep_until(
      readStart +
      std::chrono::duration_cast<std::chrono::steady_clock::duration>(
          std::chrono::duration<double>(double(bytes) / options_.storageBytesPerSecond)));
}

ImageView ImageFolderDataset::decodeFile(int64_t index, std::vector<uint8_t>& scratch,
                                         const PickReduction& pick) const {
  // The encoded bytes stay per thread between samples; the decoded pixels go to the caller's
  // scratch, which the returned view points into.
  thread_local std::vector<uint8_t> fileBytes;
  const std::string file = path(index);
  if (!cache_) {
    const auto start = std::chrono::steady_clock::now();
    readWholeFile(file, fileBytes, false);
    waitForEmulatedStorage(start, fileBytes.size());
  } else if (!cache_->fetch(index, fileBytes)) {
    const auto start = std::chrono::steady_clock::now();
    readWholeFile(file, fileBytes, true);
    waitForEmulatedStorage(start, fileBytes.size());
    const std::chrono::duration<double> read = std::chrono::steady_clock::now() - start;
    cache_->offer(index, fileBytes.data(), int64_t(fileBytes.size()), read.count());
  }
  const JpegDecodeResult decoded =
      decodeJpeg(fileBytes.data(), fileBytes.size(), file, scratch, pick);
  return ImageView(scratch.data(), decoded.shape, decoded.reduction, decoded.storedShape);
}

ImageView ImageFolderDataset::decodeSkippingCorrupt(int64_t index, std::vector<uint8_t>& scratch,
                                                    const PickReduction& pick) const {
  const int64_t label = this->label(index);
  const int64_t begin = classBegin_[size_t(label)];
  const int64_t count = classBegin_[size_t(label) + 1] - begin;
  for (int64_t step = 0; step < count; ++step) {
    const int64_t candidate = begin + (index - begin + step) % count;
    if (knownCorrupt_[size_t(candidate)].load(std::memory_order_relaxed)) continue;
    try {
      return decodeFile(candidate, scratch, pick);
    } catch (const CorruptImageError& e) {
      // Whichever thread finds the file first reports it; the outcome is the same for all.
      if (!knownCorrupt_[size_t(candidate)].exchange(true)) {
        corruptFound_.fetch_add(1, std::memory_order_relaxed);
        spdlog::warn("skipping a corrupt image (--skip-corrupt): {}", e.what());
      }
    }
  }
  inputError("every image of class '", classNames_[size_t(label)], "' in '", splitDir_,
             "' is corrupt: there is nothing to replace sample ", index, " with");
}

}  // namespace tl::data
