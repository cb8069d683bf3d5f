// Public event entry points (chorusEvent*, chorusStreamWaitEvent).
#include "core/handles.h"

using chorus::InvalidArgument;
using chorus::Status;

extern "C" {

chorusResult_t chorusEventCreate(chorusEvent_t* event) {
  if (event == nullptr) return chorus::Report(nullptr, InvalidArgument("chorusEventCreate: event is NULL"));
  *event = new chorusEvent();
  return chorusSuccess;
}

chorusResult_t chorusEventRecord(chorusEvent_t event, chorusStream_t stream) {
  if (event == nullptr) return chorus::Report(nullptr, InvalidArgument("chorusEventRecord: event is NULL"));
  chorus::HostEvent::Record(event->event, stream == nullptr ? nullptr : &stream->stream);
  return chorusSuccess;
}

chorusResult_t chorusEventQuery(chorusEvent_t event) {
  if (event == nullptr) return chorus::Report(nullptr, InvalidArgument("chorusEventQuery: event is NULL"));
  Status status = event->event->Query();
  if (status.code() == chorusInProgress) return chorusInProgress;
  return chorus::Report(nullptr, status);
}

chorusResult_t chorusEventSynchronize(chorusEvent_t event) {
  if (event == nullptr) return chorus::Report(nullptr, InvalidArgument("chorusEventSynchronize: event is NULL"));
  return chorus::Report(nullptr, event->event->Wait());
}

chorusResult_t chorusStreamWaitEvent(chorusStream_t stream, chorusEvent_t event) {
  if (event == nullptr) return chorus::Report(nullptr, InvalidArgument("chorusStreamWaitEvent: event is NULL"));
  if (stream == nullptr) return chorus::Report(nullptr, event->event->Wait());
  chorus::HostEvent::EnqueueWait(event->event, &stream->stream);
  return chorusSuccess;
}

chorusResult_t chorusEventDestroy(chorusEvent_t event) {
  if (event == nullptr) return chorus::Report(nullptr, InvalidArgument("chorusEventDestroy: event is NULL"));
  delete event;  // pending markers keep the shared state alive
  return chorusSuccess;
}

}  // extern "C"
