#include "launcher/output_paths.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <filesystem>

#include "common/check.h"
#include "common/files.h"

namespace tl::launcher {
namespace {

namespace fs = std::filesystem;

std::string folderOf(const OutputPath& p) {
  if (!p.isFile) return p.path;
  fs::path parent = fs::path(p.path).parent_path();
  return parent.empty() ? "." : parent.string();
}

// The folder's resolved path (symlinks followed as far as it exists), to tell one folder named
// twice from two folders.
std::string resolved(const std::string& dir) {
  std::error_code ec;
  fs::path p = fs::weakly_canonical(fs::absolute(dir), ec);
  return ec ? dir : p.string();
}

bool inside(const std::string& dir, const std::string& folder) {
  return dir == folder || dir.rfind(folder + "/", 0) == 0;
}

void checkFileTarget(const OutputPath& p) {
  TL_REQUIRE(!p.path.empty() && p.path.back() != '/', p.flag, " '", p.path,
             "' names a folder, not a file");
  std::error_code ec;
  if (fs::is_directory(p.path, ec)) inputError(p.flag, " '", p.path, "' is a folder, not a file");
}

}  // namespace

std::vector<OutputPath> outputPaths(const LaunchOptions& options) {
  std::vector<OutputPath> paths;
  if (!options.job.outputDir.empty()) paths.push_back({"--output-dir", options.job.outputDir});
  if (!options.checkpointDir.empty()) paths.push_back({"--checkpoint-dir", options.checkpointDir});
  if (!options.job.saveModel.empty())
    paths.push_back({"--save-model", options.job.saveModel, true});
  return paths;
}

HeldOutputs prepareOutputs(const LaunchOptions& options) {
  HeldOutputs held;
  std::vector<std::string> lockedFolders;
  for (const OutputPath& p : outputPaths(options)) {
    if (p.isFile) checkFileTarget(p);
    const std::string dir = folderOf(p);
    ensureWritableDir(dir, p.isFile ? p.flag + " '" + p.path + "': folder" : p.flag);
    if (p.isFile) continue;  // the file's folder is written once, at the end
    const std::string real = resolved(dir);
    bool covered = false;
    for (const auto& f : lockedFolders) covered = covered || inside(real, f);
    // A folder inside one already locked (the default checkpoint folder inside the output
    // folder) needs no lock of its own, but its leftovers are swept all the same.
    if (!covered) {
      JobLock lock(dir, p.flag);
      if (!lock.tookOver().empty()) {
        spdlog::warn("{} '{}': taking over from a job that ended without letting go of it ({})",
                     p.flag, dir, lock.tookOver());
      }
      held.locks.push_back(std::move(lock));
      lockedFolders.push_back(real);
    }
    for (const auto& stale : removeStaleTemporaries(dir)) {
      spdlog::info("removed {}, left by a writer that died", stale);
    }
  }
  return held;
}

void checkOutputs(const LaunchOptions& options) {
  for (const OutputPath& p : outputPaths(options)) {
    if (p.isFile) checkFileTarget(p);
    const std::string what = p.isFile ? p.flag + " '" + p.path + "': folder" : p.flag;
    const std::string dir = folderOf(p);
    // The folder, or the nearest part of it that exists, must be a folder we may write into.
    fs::path existing = fs::absolute(dir).lexically_normal();
    std::error_code ec;
    while (!fs::exists(existing, ec) && existing.has_parent_path() &&
           existing != existing.parent_path()) {
      existing = existing.parent_path();
    }
    if (!fs::is_directory(existing, ec)) {
      inputError(what, " '", dir, "' is not writable: '", existing.string(), "' is not a folder");
    }
    if (::access(existing.c_str(), W_OK | X_OK) != 0) {
      inputError(what, " '", dir, "' is not writable: '", existing.string(), "' is read-only");
    }
    if (!p.isFile && existing == fs::absolute(dir).lexically_normal()) {
      const std::string holder = jobLockHolder(dir);
      if (!holder.empty()) {
        inputError(p.flag, " '", dir, "' is in use by another job (", holder, "; lock ",
                   joinPath(dir, kJobLockName), ")");
      }
    }
  }
}

}  // namespace tl::launcher
