// Your patch embedding backward: replace the throw (see
// patch_embedding_backward.h), then run
//     make exercises
#include "exercises/07_patch_embedding_backward/patch_embedding_backward.h"

#include "exercises/exercise.h"

namespace exercise {

PatchEmbeddingGrads patch_embedding_backward(const std::vector<double>& images, const std::vector<double>& W,
                                             int64_t B, int64_t ch, int64_t H, int64_t p, int64_t C,
                                             const std::vector<double>& de) {
    (void)images, (void)W, (void)B, (void)ch, (void)H, (void)p, (void)C, (void)de;
    throw NotYet("derive and write the patch embedding's backward in exercises/07_patch_embedding_backward/patch_embedding_backward.cpp");
}

}  // namespace exercise
