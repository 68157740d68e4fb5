// The precompiled header every tl target reuses. libtorch headers are expensive (~11 s per
// translation unit); precompiling them once keeps a full build to a few minutes.
#pragma once
#include <torch/torch.h>
