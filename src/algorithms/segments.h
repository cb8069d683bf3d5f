// Splitting buffers: EvenSegment splits `count` elements into `parts`
// contiguous segments as evenly as possible in whole elements (the first
// count % parts segments get one element more; some are empty when
// count < parts). PipelineSegment cuts one step into the fixed-size pipeline
// segments of CollectiveArgs::segment_bytes.
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

namespace chorus {

// The byte length of the pipeline segments a builder cuts a step of `bytes`
// into: `segment_bytes` rounded down to whole elements (at least one
// element), or the whole step when segment_bytes is 0.
inline size_t PipelineSegmentBytes(size_t segment_bytes, size_t element_size, size_t bytes) {
  if (segment_bytes == 0 || segment_bytes >= bytes) return bytes == 0 ? 1 : bytes;
  const size_t whole = segment_bytes / element_size * element_size;
  return whole == 0 ? element_size : whole;
}

// Number of pipeline segments of a step of `bytes` (0 for an empty step).
inline size_t PipelineSegmentCount(size_t bytes, size_t segment) { return (bytes + segment - 1) / segment; }

// Segment `index` of a step of `bytes`, as a byte range relative to the step.
struct ByteRange {
  size_t offset = 0;
  size_t bytes = 0;
};
inline ByteRange PipelineSegment(size_t bytes, size_t segment, size_t index) {
  ByteRange range;
  range.offset = index * segment;
  range.bytes = range.offset >= bytes ? 0 : (bytes - range.offset < segment ? bytes - range.offset : segment);
  return range;
}

// Calls visit(part) for each pipeline segment of a step of `bytes` in order
// (segment_bytes and element_size as PipelineSegmentBytes takes them); part
// is relative to the step. Nothing for an empty step.
template <typename Visit>
void ForEachPipelineSegment(size_t segment_bytes, size_t element_size, size_t bytes, Visit&& visit) {
  const size_t segment = PipelineSegmentBytes(segment_bytes, element_size, bytes);
  for (size_t s = 0; s < PipelineSegmentCount(bytes, segment); ++s) visit(PipelineSegment(bytes, segment, s));
}

}  // namespace chorus
