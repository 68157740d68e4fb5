// One live job per folder. A job's lead rank holds `<folder>/.tl-job.lock` (flock) for the
// job's whole life, so a second job pointed at the same folder — by the same path, a symlink
// or a relative spelling — is refused before it writes anything. The kernel drops the lock
// when its holder dies however it dies; the file, naming the holder, stays behind until the
// next job takes it over.
#pragma once

#include <string>

namespace tl::launcher {

inline constexpr const char* kJobLockName = ".tl-job.lock";

class JobLock {
 public:
  JobLock() = default;
  // Takes the lock of `dir` (which exists). InputError "<what> '<dir>' is in use by another job
  // (<holder>)" while a live job holds it. When the file names a job that ended without
  // releasing it, `tookOver()` says which.
  JobLock(const std::string& dir, const std::string& what);
  JobLock(JobLock&& other) noexcept;
  JobLock& operator=(JobLock&& other) noexcept;
  JobLock(const JobLock&) = delete;
  JobLock& operator=(const JobLock&) = delete;
  ~JobLock();  // removes the file, then lets go

  bool held() const { return fd_ >= 0; }
  const std::string& tookOver() const { return previousHolder_; }  // empty: the folder was free

 private:
  void release();
  std::string path_;
  int fd_ = -1;
  std::string previousHolder_;
};

// Who holds `dir`'s lock ("pid 12 on host h since 2026-01-02 03:04:05"), or "" when no live job
// does. Changes nothing.
std::string jobLockHolder(const std::string& dir);

}  // namespace tl::launcher
