#include "examples/trainer/gemm.h"

#include <cblas.h>

namespace trainer {

void Gemm(Transpose trans_a, Transpose trans_b, int m, int n, int k, float alpha, const float* a,
          const float* b, float beta, float* c) {
  const int lda = trans_a == Transpose::kNo ? k : m;
  const int ldb = trans_b == Transpose::kNo ? n : k;
  cblas_sgemm(CblasRowMajor, trans_a == Transpose::kNo ? CblasNoTrans : CblasTrans,
              trans_b == Transpose::kNo ? CblasNoTrans : CblasTrans, m, n, k, alpha, a, lda, b, ldb, beta,
              c, n);
}

void SetBlasThreads(int threads) { openblas_set_num_threads(threads); }

}  // namespace trainer
