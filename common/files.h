// File helpers that never leave a half-written file behind.
#pragma once

#include <string>
#include <string_view>

namespace tl {

// Writes `bytes` to `path` atomically: a temporary file in the same folder, fsync, rename,
// fsync of the folder. Readers see the old file or the new one, never a torn one.
// Throws InputError naming the path when it cannot be written.
void writeFileAtomic(const std::string& path, std::string_view bytes);

// Reads a whole file. Throws InputError naming the path when it is missing or unreadable.
std::string readFile(const std::string& path);

bool fileExists(const std::string& path);

// Creates `dir` (and parents) if needed and checks that a file can be created in it.
// Throws InputError: "<what> '<dir>' is not writable: <reason>".
void ensureWritableDir(const std::string& dir, const std::string& what = "output directory");

// Joins two path pieces with exactly one '/'.
std::string joinPath(const std::string& a, const std::string& b);

}  // namespace tl
