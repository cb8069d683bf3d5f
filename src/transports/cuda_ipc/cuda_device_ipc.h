// DeviceIpc over the CUDA runtime (legacy IPC: cudaIpcGetMemHandle /
// cudaIpcOpenMemHandle), for CUDA builds. Works on the device current on the
// creating thread (the communicator's, as NCCL binds a communicator to the
// device current at its creation), whichever thread calls later.
#pragma once

#include <memory>

#include "transports/cuda_ipc/device_ipc.h"

namespace chorus {

// chorusSystemError naming what is missing without a driver or device.
Status CreateCudaDeviceIpc(std::unique_ptr<DeviceIpc>* out);

}  // namespace chorus
