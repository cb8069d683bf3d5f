#include "examples/trainer/gemm.h"

#include <cblas.h>

namespace trainer {

void Gemm(Transpose trans_a, Transpose trans_b, int m, int n, int k, float alpha, const float* a,
          const float* b, float beta, float* c) {
  GemmStrided(trans_a, trans_b, m, n, k, alpha, a, trans_a == Transpose::kNo ? k : m, b,
              trans_b == Transpose::kNo ? n : k, beta, c, n);
}

void GemmStrided(Transpose trans_a, Transpose trans_b, int m, int n, int k, float alpha, const float* a,
                 int lda, const float* b, int ldb, float beta, float* c, int ldc) {
  cblas_sgemm(CblasRowMajor, trans_a == Transpose::kNo ? CblasNoTrans : CblasTrans,
              trans_b == Transpose::kNo ? CblasNoTrans : CblasTrans, m, n, k, alpha, a, lda, b, ldb, beta,
              c, ldc);
}

void SetBlasThreads(int threads) { openblas_set_num_threads(threads); }

}  // namespace trainer
