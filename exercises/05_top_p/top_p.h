// Exercise 5 (chapter 5): a sampling strategy, nucleus (top-p) sampling
// (Holtzman et al. 2020).
//
// Top-k (nn/generate.h, pick_token) keeps a fixed number of tokens, too
// many when the model is sure and too few when it is not. Top-p keeps the
// smallest set of the most likely tokens whose probabilities add up to at
// least top_p, so the set grows and shrinks with the model's uncertainty.
// Write the distribution it samples from:
//
//   p = softmax(logits / temperature)
//   keep the most likely tokens until their probabilities add up to >= top_p
//   (tokens exactly as likely as the last one kept are kept too, so the
//   answer does not depend on how a sort orders ties);
//   set the others to 0 and divide the kept ones by their sum.
//
// It must not overflow: logits of 1000 and -1000 are fine (subtract the
// largest before exp). top_p = 1 keeps every token; temperature > 0.
#pragma once

#include <vector>

namespace exercise {

std::vector<double> top_p_distribution(const std::vector<double>& logits, double temperature, double top_p);

}  // namespace exercise
