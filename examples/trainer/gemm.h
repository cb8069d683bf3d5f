// Row-major single-precision matrix product through OpenBLAS (cblas_sgemm):
// C = alpha * op(A) * op(B) + beta * C, op(A) is m x k, op(B) is k x n.
#pragma once

namespace trainer {

enum class Transpose { kNo, kYes };

void Gemm(Transpose trans_a, Transpose trans_b, int m, int n, int k, float alpha, const float* a,
          const float* b, float beta, float* c);

// The same on sub-matrices: lda, ldb and ldc are the row strides (in floats)
// of the row-major arrays that a, b and c point into.
void GemmStrided(Transpose trans_a, Transpose trans_b, int m, int n, int k, float alpha, const float* a,
                 int lda, const float* b, int ldb, float beta, float* c, int ldc);

// Limits OpenBLAS to `threads` threads in this process (one per rank when
// ranks share a machine).
void SetBlasThreads(int threads);

}  // namespace trainer
