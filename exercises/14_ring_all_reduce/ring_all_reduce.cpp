// Your ring all-reduce: replace the throw (see ring_all_reduce.h), then run
//     make exercises
// The check compares every rank's buffer with the float64 sum and counts
// the rounds and the numbers sent.
#include "exercises/14_ring_all_reduce/ring_all_reduce.h"

#include "exercises/exercise.h"

namespace exercise {

void ring_all_reduce(std::vector<std::vector<double>>& buffers, Ring& ring) {
    (void)buffers, (void)ring;
    throw NotYet("write the ring all-reduce in exercises/14_ring_all_reduce/ring_all_reduce.cpp");
}

}  // namespace exercise
