#include "common/allocator_tuning.h"

#include <malloc.h>

namespace tl {

void tuneAllocatorForTraining() {
  mallopt(M_MMAP_THRESHOLD, 512 << 20);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
}

}  // namespace tl
