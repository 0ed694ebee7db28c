// The check of exercise 11: the paired interval against its formula on
// fixed numbers, then its coverage, measured: 4,000 simulated studies of 3
// seeds each, where seed i shares a large luck term between the variants
// and the true difference is known. A 95% interval must contain it in 93%
// to 97% of them (the binomial spread of 4,000 trials is 0.34%); treating
// the variants as independent gives about 100%, and centering or scaling
// wrong gives less.
#include <cmath>
#include <string>
#include <vector>

#include "exercises/11_paired_interval/paired_interval.h"
#include "exercises/exercise.h"
#include "tensor/random.h"
#include "tensor/raw_ops.h"

int main() {
    return exercise::run("11 (paired interval)", [] {
        // Fixed numbers: d = (-0.1, -0.06, -0.11), mean -0.09, s = 0.026458,
        // half-width 4.3027 x 0.026458 / sqrt 3 = 0.065726.
        exercise::Interval fixed = exercise::paired_interval({2.0, 2.1, 1.95}, {2.1, 2.16, 2.06});
        exercise::expect_close(fixed.mean, -0.09, 1e-12, "the center of the interval for d = (-0.1, -0.06, -0.11)");
        exercise::expect_close(fixed.high - fixed.mean, 0.0657258, 1e-5, "the half-width for d = (-0.1, -0.06, -0.11)");
        exercise::expect_close(fixed.mean - fixed.low, 0.0657258, 1e-5, "the lower half-width for d = (-0.1, -0.06, -0.11)");

        // Simulated studies: loss = 2 + luck_i + (variant ? effect : 0) + noise,
        // luck ~ N(0, 0.2) shared by both variants of seed i, noise ~ N(0, 0.02) each.
        nc::Generator gen(11);
        const int studies = 4000, seeds = 3;
        const double effect = -0.05;
        std::vector<double> draws = nc::raw::randn({studies, seeds, 3}, gen, nc::kFloat64).to_vector();
        int covered = 0;
        for (int s = 0; s < studies; ++s) {
            std::vector<double> variant(seeds), baseline(seeds);
            for (int i = 0; i < seeds; ++i) {
                const double* z = &draws[(s * seeds + i) * 3];
                double luck = 0.2 * z[0];
                variant[i] = 2 + luck + effect + 0.02 * z[1];
                baseline[i] = 2 + luck + 0.02 * z[2];
            }
            exercise::Interval got = exercise::paired_interval(variant, baseline);
            exercise::expect(got.low <= got.mean && got.mean <= got.high, "an interval's low end must not exceed its high end");
            if (got.low <= effect && effect <= got.high) ++covered;
        }
        double coverage = (double)covered / studies;
        exercise::expect(coverage >= 0.93 && coverage <= 0.97,
                         "your 95% intervals contained the true difference in " + exercise::number(100 * coverage) +
                             "% of 4,000 simulated studies, not about 95%" +
                             (coverage > 0.97 ? " (too wide: are the seeds paired?)" : " (too narrow or off center)"));
    });
}
