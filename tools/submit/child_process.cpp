#include "tools/submit/child_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "common/check.h"

namespace tl::submit {
namespace {

ChildExit fromStatus(int status) {
  ChildExit out;
  out.exited = true;
  if (WIFEXITED(status)) {
    out.exitCode = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    out.signal = WTERMSIG(status);
    out.exitCode = 128 + out.signal;
  }
  return out;
}

}  // namespace

pid_t startChild(const ChildSpec& spec) {
  TL_CHECK(!spec.argv.empty());
  int logFd = ::open(spec.logPath.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (logFd < 0) inputError("cannot create log file '", spec.logPath, "': ", std::strerror(errno));
  // Everything the child needs is prepared before fork: after it, only async-signal-safe calls.
  std::vector<char*> args;
  for (const auto& a : spec.argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  std::vector<std::string> envStrings;
  for (char** e = environ; *e; ++e) {
    std::string entry = *e;
    std::string name = entry.substr(0, entry.find('='));
    if (spec.setEnv.count(name) == 0) envStrings.push_back(entry);
  }
  for (const auto& [name, value] : spec.setEnv) envStrings.push_back(name + "=" + value);
  std::vector<char*> env;
  for (auto& e : envStrings) env.push_back(e.data());
  env.push_back(nullptr);
  std::string failure = "cannot execute '" + spec.argv[0] + "'\n";

  std::fflush(stdout);
  std::fflush(stderr);
  pid_t pid = ::fork();
  if (pid < 0) {
    ::close(logFd);
    throw Error(tl::str("fork failed: ", std::strerror(errno)));
  }
  if (pid == 0) {
    ::setpgid(0, 0);
    ::signal(SIGINT, SIG_DFL);
    ::signal(SIGTERM, SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::dup2(logFd, STDOUT_FILENO);
    ::dup2(logFd, STDERR_FILENO);
    int devNull = ::open("/dev/null", O_RDONLY);
    if (devNull >= 0) ::dup2(devNull, STDIN_FILENO);
    ::execvpe(args[0], args.data(), env.data());
    ssize_t ignored = ::write(STDERR_FILENO, failure.data(), failure.size());
    (void)ignored;
    ::_exit(127);
  }
  ::setpgid(pid, pid);  // also from the parent, so a signal sent right away finds the group
  ::close(logFd);
  return pid;
}

ChildExit pollChild(pid_t pid) {
  int status = 0;
  pid_t r;
  do {
    r = ::waitpid(pid, &status, WNOHANG);
  } while (r < 0 && errno == EINTR);
  if (r == 0) return {};
  TL_CHECK(r == pid, "waitpid(", pid, ") failed: ", std::strerror(errno));
  return fromStatus(status);
}

ChildExit waitChild(pid_t pid) {
  int status = 0;
  pid_t r;
  do {
    r = ::waitpid(pid, &status, 0);
  } while (r < 0 && errno == EINTR);
  TL_CHECK(r == pid, "waitpid(", pid, ") failed: ", std::strerror(errno));
  return fromStatus(status);
}

std::string shellQuoted(const std::vector<std::string>& argv) {
  std::string out;
  for (const auto& a : argv) {
    if (!out.empty()) out += ' ';
    bool plain = !a.empty() &&
                 a.find_first_not_of(
                     "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,+@%") ==
                     std::string::npos;
    if (plain) {
      out += a;
      continue;
    }
    out += '\'';
    for (char c : a) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    out += '\'';
  }
  return out;
}

std::string executableDir() {
  std::error_code ec;
  auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return ".";
  return exe.parent_path().string();
}

}  // namespace tl::submit
