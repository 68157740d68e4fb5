// Whole-file reads for the dataset readers, plain or gzip-compressed, with errors that name the
// dataset, the file and what is wrong.
#pragma once

#include <string>

namespace tl::data {

// Reads `path` completely; a name ending in ".gz" is decompressed with zlib. `what` names the
// dataset for messages ("CIFAR-10", "MNIST"). Throws InputError: "<what> file '<path>' is
// missing", "... cannot be read: <reason>", "... is a truncated gzip stream", "... is not
// valid gzip data: <reason>".
std::string readDatasetFile(const std::string& what, const std::string& path);

}  // namespace tl::data
