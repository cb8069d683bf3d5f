#include "interpose/mpi/errors.h"

#include <mutex>
#include <string>

#include "interpose/mpi/report.h"

namespace chorus_mpi {
namespace {

int codes[chorusNumResults];

void MakeCodes() {
  for (int result = 0; result < chorusNumResults; ++result) {
    codes[result] = MPI_ERR_OTHER;
    if (result == chorusSuccess) {
      codes[result] = MPI_SUCCESS;
      continue;
    }
    int code = 0;
    if (PMPI_Add_error_code(MPI_ERR_OTHER, &code) != MPI_SUCCESS) continue;
    std::string text = std::string("Chorus collective failed: ") +
                       chorusGetErrorString(static_cast<chorusResult_t>(result));
    PMPI_Add_error_string(code, text.c_str());
    codes[result] = code;
  }
}

}  // namespace

int ErrorCode(chorusResult_t result) {
  static std::once_flag once;
  std::call_once(once, MakeCodes);
  if (result < 0 || result >= chorusNumResults) return MPI_ERR_OTHER;
  return codes[result];
}

int RaiseError(MPI_Comm comm, chorusComm_t chorus_comm, chorusResult_t result, const char* call) {
  // Later calls on a failed communicator fail at once; say why only once.
  static std::mutex mutex;
  static void* last_logged = nullptr;
  bool log = false;
  {
    std::lock_guard<std::mutex> lock(mutex);
    log = last_logged != chorus_comm;
    last_logged = chorus_comm;
  }
  if (log) {
    const char* message = chorus_comm != nullptr ? chorusGetLastError(chorus_comm) : "";
    if (message == nullptr || *message == '\0') message = chorusGetLastError(nullptr);
    LogWarn("%s failed: %s: %s", call, chorusGetErrorString(result), message);
  }
  const int code = ErrorCode(result);
  PMPI_Comm_call_errhandler(comm, code);
  return code;
}

}  // namespace chorus_mpi
