#include "algorithms/schedule.h"

#include <sstream>

namespace chorus {

namespace {

const char* StepKindName(StepKind kind) {
  switch (kind) {
    case StepKind::kSend:
      return "send";
    case StepKind::kRecv:
      return "recv";
    case StepKind::kRecvReduce:
      return "recvreduce";
    case StepKind::kCopy:
      return "copy";
    case StepKind::kReduce:
      return "reduce";
  }
  return "unknown";
}

const char* BufferName(BufferId buffer) {
  switch (buffer) {
    case BufferId::kSend:
      return "send";
    case BufferId::kRecv:
      return "recv";
    case BufferId::kScratch:
      return "scratch";
  }
  return "unknown";
}

void DescribeRange(std::ostream& out, const char* label, const BufferRange& range) {
  out << ' ' << label << '=' << BufferName(range.buffer) << '+' << range.offset;
}

}  // namespace

std::string DescribeSchedule(const Schedule& schedule) {
  std::ostringstream out;
  out << "schedule algorithm=" << (schedule.algorithm.empty() ? "?" : schedule.algorithm)
      << " dtype=" << DataTypeName(schedule.dtype) << " op=" << ReduceOpName(schedule.op)
      << " element_size=" << schedule.element_size << " scratch_bytes=" << schedule.scratch_bytes
      << " steps=" << schedule.steps.size() << '\n';
  for (size_t i = 0; i < schedule.steps.size(); ++i) {
    const Step& step = schedule.steps[i];
    out << "  #" << i << ' ' << StepKindName(step.kind);
    const bool has_peer =
        step.kind == StepKind::kSend || step.kind == StepKind::kRecv || step.kind == StepKind::kRecvReduce;
    if (has_peer) out << " peer=" << step.peer;
    if (step.kind != StepKind::kRecv) DescribeRange(out, "src", step.src);
    if (step.kind == StepKind::kReduce) DescribeRange(out, "src2", step.src2);
    if (step.kind != StepKind::kSend) DescribeRange(out, "dst", step.dst);
    out << " bytes=" << step.bytes;
    if (step.paced) out << " paced";
    if (!step.deps.empty()) {
      out << " deps=[";
      for (size_t d = 0; d < step.deps.size(); ++d) out << (d ? "," : "") << step.deps[d];
      out << ']';
    }
    out << '\n';
  }
  return out.str();
}

}  // namespace chorus
