// The user's end of the control channel: where a job listens, and one authenticated
// request/reply exchange with it.
#pragma once

#include <string>

#include "common/check.h"
#include "control/control_protocol.h"

namespace tl::control {

struct Target {
  std::string host;
  int port = 0;
  Key key;
  std::string jobDir;  // set by targetFromJobDir: where to look again after a Moved reply
};

// Reads <dir>/control.json and <dir>/control.key. InputError naming the file when one is
// missing or malformed (control.json missing: "no job is serving control in '<dir>'").
Target targetFromJobDir(const std::string& dir);
// "HOST:PORT" and a key file (control_key.h's readKeyFile). InputError when either is bad.
Target targetFromAddress(const std::string& hostPort, const std::string& keyFile);

// The job would not read the request: it answered with a rejection frame.
class RejectedError : public Error {
 public:
  RejectedError(Rejection why, const std::string& what) : Error(what), why_(why) {}
  Rejection why() const { return why_; }

 private:
  Rejection why_;
};

// Sends `r` (a fresh nonce, the current time) and returns the job's authenticated reply.
// Throws InputError when the request breaks the protocol's limits, TimeoutError when no
// reply came within timeoutSeconds (the job may still carry the request out), RejectedError
// when the job refused to read it (wrong key, clock skew, ...), and Error when the job cannot
// be reached or its reply fails authentication or does not echo the nonce.
Reply send(const Target& t, const Request& r, double timeoutSeconds);

}  // namespace tl::control
