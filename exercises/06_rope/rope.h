// Exercise 6 (chapter 6): RoPE by hand, in the pairing of the original
// paper and of Meta's Llama code.
//
// x holds T rows of D values (one head; row m is position m), row-major.
// Rotate each neighbouring pair (x[m][2i], x[m][2i+1]) by the angle m f_i,
// f_i = theta^(-2i/D):
//
//     y[m][2i]   = x[m][2i] cos(m f_i) - x[m][2i+1] sin(m f_i)
//     y[m][2i+1] = x[m][2i] sin(m f_i) + x[m][2i+1] cos(m f_i)
//
// Plain loops over the vector are enough: no tensors, no autograd.
//
// The library (nn/rope.h) pairs feature i with feature i + D/2 instead,
// Hugging Face's rotate_half form. The check shows that the two are the
// same rotation of permuted features: your y equals the library's output on
// x with its even features moved to the first half and its odd ones to the
// second, permuted back. That permutation is what Hugging Face's script
// applies to Meta's query and key weights when it converts a checkpoint.
#pragma once

#include <cstdint>
#include <vector>

namespace exercise {

std::vector<double> rope_interleaved(const std::vector<double>& x, int64_t T, int64_t D, double theta);

}  // namespace exercise
