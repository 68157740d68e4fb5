// File helpers that never leave a half-written file behind.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace tl {

// Writes `bytes` to `path` atomically: a temporary file in the same folder, fsync, rename,
// fsync of the folder. Readers see the old file or the new one, never a torn one.
// Throws InputError naming the path when it cannot be written.
//
// The temporary is `.<name>.tmp.<pid>@<host>.XXXXXX`, flock'ed by its writer until it is
// renamed or removed. A writer killed mid-write leaves it behind; the next write of the same
// file removes such leftovers (removeStaleTemporaries).
void writeFileAtomic(const std::string& path, std::string_view bytes);

// Removes the temporaries of writeFileAtomic in `dir` whose writer is provably dead: named
// after a process of this host that has ended (none of that pid, or a zombie), and not locked. Anything else (a live
// writer's, another host's, a name of another form) is kept. `name` empty: temporaries of
// every file, else only those of `dir/name`. Returns the paths removed.
std::vector<std::string> removeStaleTemporaries(const std::string& dir,
                                                const std::string& name = "");

// This machine's host name ("localhost" when it has none).
std::string hostName();

// Reads a whole file. Throws InputError naming the path when it is missing or unreadable.
std::string readFile(const std::string& path);

// True when anything (a file, a folder, ...) is at `path`; see requireRegularFile for readers.
bool fileExists(const std::string& path);

// Throws InputError "<what> '<path>' is missing", "... is not a regular file (a folder)", "... is
// not a regular file" or "... cannot be read: <reason>" unless `path` names a regular file (links
// followed). Readers call it first: a folder opens like a file and reports a nonsense size.
void requireRegularFile(const std::string& what, const std::string& path);

// Creates `dir` (and parents) if needed and checks that a file can be created in it.
// Throws InputError: "<what> '<dir>' is not writable: <reason>".
void ensureWritableDir(const std::string& dir, const std::string& what = "output directory");

// Joins two path pieces with exactly one '/'.
std::string joinPath(const std::string& a, const std::string& b);

}  // namespace tl
