/* The results of the calls whose checks need no GPU (NULL handles, group
 * misuse, version), one line each, so that nccl_abi_test can compare
 * Chorus's libnccl.so.2 with NVIDIA's, which runs these without a driver.
 * Built like nccl_abi_check: against nccl.h, linked with -lnccl. */
#include <nccl.h>
#include <stdio.h>

#define SHOW(call) printf("%s -> %d\n", #call, (int)(call))

int main(void) {
  float buf[4] = {0, 0, 0, 0};
  int value = 0;
  SHOW(ncclGetVersion(&value));
  printf("version %d\n", value);
  SHOW(ncclAllReduce(buf, buf, 4, ncclFloat32, ncclSum, NULL, NULL));
  SHOW(ncclBroadcast(buf, buf, 4, ncclFloat32, 0, NULL, NULL));
  SHOW(ncclBcast(buf, 4, ncclFloat32, 0, NULL, NULL));
  SHOW(ncclReduce(buf, buf, 4, ncclFloat32, ncclSum, 0, NULL, NULL));
  SHOW(ncclAllGather(buf, buf, 1, ncclFloat32, NULL, NULL));
  SHOW(ncclReduceScatter(buf, buf, 1, ncclFloat32, ncclSum, NULL, NULL));
  SHOW(ncclAlltoAll(buf, buf, 1, ncclFloat32, NULL, NULL));
  SHOW(ncclGather(buf, buf, 1, ncclFloat32, 0, NULL, NULL));
  SHOW(ncclScatter(buf, buf, 1, ncclFloat32, 0, NULL, NULL));
  SHOW(ncclSend(buf, 4, ncclFloat32, 0, NULL, NULL));
  SHOW(ncclRecv(buf, 4, ncclFloat32, 0, NULL, NULL));
  SHOW(ncclCommCount(NULL, &value));
  SHOW(ncclCommUserRank(NULL, &value));
  SHOW(ncclCommCuDevice(NULL, &value));
  ncclResult_t async;
  SHOW(ncclCommGetAsyncError(NULL, &async));
  SHOW(ncclCommFinalize(NULL));
  SHOW(ncclCommDestroy(NULL));
  SHOW(ncclCommAbort(NULL));
  SHOW(ncclGroupEnd());
  SHOW(ncclGroupStart());
  SHOW(ncclGroupStart());
  SHOW(ncclGroupEnd());
  SHOW(ncclGroupEnd());
  SHOW(ncclRedOpDestroy(ncclSum, NULL));
  return 0;
}
