#include "tools/submit/launch_check.h"

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "common/check.h"
#include "tools/submit/child_process.h"

namespace tl::submit {
namespace {

constexpr std::streamoff kLogTail = 64 * 1024;  // an error line is near the end of a log

std::string tail(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return "";
  const std::streamoff size = in.tellg();
  in.seekg(size > kLogTail ? size - kLogTail : 0);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string lastLine(const std::string& text) {
  size_t end = text.find_last_not_of("\r\n ");
  if (end == std::string::npos) return "";
  size_t begin = text.rfind('\n', end);
  return text.substr(begin == std::string::npos ? 0 : begin + 1,
                     end + 1 - (begin == std::string::npos ? 0 : begin + 1));
}

}  // namespace

std::string errorLineOf(const std::string& output) {
  const size_t at = output.rfind(": error: ");
  if (at == std::string::npos) return "";
  const size_t begin = output.rfind('\n', at);
  const size_t end = output.find('\n', at);
  const size_t from = begin == std::string::npos ? 0 : begin + 1;
  return output.substr(from, end == std::string::npos ? std::string::npos : end - from);
}

std::string errorLineOfLog(const std::string& path) { return errorLineOf(tail(path)); }

LaunchCheck checkWithTlLaunch(const std::string& tlLaunch, int processes,
                              const std::vector<std::string>& launchFlags,
                              const std::map<std::string, std::string>& setEnv) {
  const char* tmp = std::getenv("TMPDIR");
  std::string log = std::string(tmp && *tmp ? tmp : "/tmp") + "/tl-launch-check.XXXXXX";
  int fd = ::mkstemp(log.data());
  if (fd < 0) inputError("cannot create a temporary file to check a job with tl-launch: ", log);
  ::close(fd);
  std::vector<std::string> argv = {tlLaunch, "--check", "--check-processes",
                                   std::to_string(processes)};
  argv.insert(argv.end(), launchFlags.begin(), launchFlags.end());
  LaunchCheck result;
  try {
    ChildExit exit = waitChild(startChild({argv, setEnv, log}));
    const std::string output = tail(log);
    result.ok = exit.exitCode == 0;
    if (!result.ok) {
      std::string line = errorLineOf(output);
      const std::string prefix = "tl-launch: error: ";
      if (line.rfind(prefix, 0) == 0) line = line.substr(prefix.size());
      if (line.empty()) line = lastLine(output);
      result.error =
          line.empty() ? tl::str("tl-launch --check ended with exit status ", exit.exitCode) : line;
    }
  } catch (...) {
    ::unlink(log.c_str());
    throw;
  }
  ::unlink(log.c_str());
  return result;
}

}  // namespace tl::submit
