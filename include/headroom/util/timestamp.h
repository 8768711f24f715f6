// TimeStamp, a file's modification time as the disk seam reports it and the graph stores it.
#pragma once

#include <cstdint>

namespace headroom {

// Nanoseconds since the epoch; 0 = file missing; -1 = not yet stat'ed.
using TimeStamp = int64_t;

}  // namespace headroom
