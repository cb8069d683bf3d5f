// Splitting `count` elements into `parts` contiguous segments as evenly as
// possible in whole elements: the first count % parts segments get one
// element more. Some segments are empty when count < parts.
#pragma once

#include <cstddef>

namespace chorus {

struct Segment {
  size_t offset = 0;  // elements
  size_t count = 0;   // elements
};

inline Segment EvenSegment(size_t count, size_t parts, size_t index) {
  const size_t base = count / parts;
  const size_t extra = count % parts;
  Segment segment;
  segment.offset = index * base + (index < extra ? index : extra);
  segment.count = base + (index < extra ? 1 : 0);
  return segment;
}

}  // namespace chorus
