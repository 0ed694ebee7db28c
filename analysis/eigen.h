// eigen.h — eigenvalues of a symmetric matrix, in float64, for the
// diagnostics (effective rank, HTSR alpha, Gram-matrix isometry).
//
// The cyclic Jacobi method: repeatedly pick an off-diagonal pair (p, q) and
// rotate rows and columns p, q by the angle that zeroes a_pq. Each rotation
// keeps the eigenvalues and lowers the off-diagonal mass, so the matrix
// converges to a diagonal of eigenvalues (Golub & Van Loan, section 8.5). It
// is slower than QR methods for big matrices but short, easy to check and
// accurate to a few ulps even for tiny eigenvalues.
#pragma once

#include <cstdint>
#include <vector>

namespace nc {
namespace diag {

struct SymmetricEigen {
    std::vector<double> values;   // ascending
    std::vector<double> vectors;  // n x n, column j is the eigenvector of values[j] (empty unless asked)
};

// `a`: a symmetric n x n matrix, row-major (only the symmetric part is used).
// Throws nc::Error if a is not n x n.
SymmetricEigen symmetric_eigen(const std::vector<double>& a, int64_t n, bool with_vectors = false);

}  // namespace diag
}  // namespace nc
