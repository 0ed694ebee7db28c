// Exercise 11 (chapter 11): the paired 95% interval a study's verdicts
// rest on.
//
// Two variants trained with the same n seeds end at validation losses
// variant[i] and baseline[i] (seed i of both drew the same batches and, as
// far as the variants allow, the same initial weights). The question is
// the difference of their true mean losses. Write the 95% confidence
// interval for it from these 2n numbers: its center, and its ends.
//
// Think about what varies between seeds. A lucky seed (easy batches) makes
// *both* variants' losses low, so the two numbers of seed i are not
// independent. Which n numbers are, and what is their spread? With n of
// them, the standard error of their mean is s / sqrt(n) (s the sample
// standard deviation, dividing by n - 1), and the interval is the mean
// +- t * s / sqrt(n), with t the 97.5% point of Student's t with n - 1
// degrees of freedom (t_975 below: with few seeds s is itself uncertain,
// so t is larger than the normal 1.96).
//
// The check compares your interval with the formula on fixed numbers and
// then simulates 4,000 studies of 3 seeds whose true difference is known:
// a right interval contains it about 95% of the time. An interval that
// treats the two variants as independent samples is far too wide there
// (it contains the truth almost always), and fails.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

namespace exercise {

// The 97.5% point of Student's t with df = 1..9 degrees of freedom
// (standard tables).
inline double t_975(int df) {
    static const double table[9] = {12.7062, 4.3027, 3.1824, 2.7764, 2.5706, 2.4469, 2.3646, 2.3060, 2.2622};
    if (df < 1 || df > 9) throw std::runtime_error("t_975: this table has 1..9 degrees of freedom, not " + std::to_string(df));
    return table[df - 1];
}

struct Interval {
    double mean = 0, low = 0, high = 0;
};

// The 95% interval of mean(variant) - mean(baseline), the seeds paired: the
// same length n, 2 <= n <= 10.
Interval paired_interval(const std::vector<double>& variant, const std::vector<double>& baseline);

}  // namespace exercise
