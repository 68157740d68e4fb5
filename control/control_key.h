// The job's control key: 32 random bytes, stored as 64 hex characters and a newline in
// <job-dir>/control.key, mode 0600. Whoever can read it can steer the job.
#pragma once

#include <string>

#include "control/control_protocol.h"

namespace tl::control {

constexpr size_t kKeyBytes = 32;

std::string keyPath(const std::string& jobDir);      // <job-dir>/control.key
std::string addressPath(const std::string& jobDir);  // <job-dir>/control.json

// The job's side. Creates control.key with a fresh random key, never through a symlink and
// never half-written (written to a private temporary file, then hard-linked into place, which
// fails if anything already has the name). An existing control.key is reused, as by a resumed
// job or a new lead process, if it is a regular file (not a symlink) owned by this user, not
// readable or writable by group or others, and holds a well-formed key. InputError naming the
// file and what is wrong otherwise.
Key createOrReuseKey(const std::string& jobDir);

// The client's side: reads a key file (a job's control.key or a copy). InputError naming the
// file when it is missing, not a regular file, readable by group or others, or malformed.
Key readKeyFile(const std::string& path);

// Hex text of a key as stored in a key file (with the trailing newline).
std::string keyFileText(const Key& key);

}  // namespace tl::control
