// llmc_steps.c — llm.c's CPU GPT-2 trainer (train_gpt2.c) run on the batches
// `normcore train --no-shuffle` sees: the baseline of bench/llmc/compare_llmc.sh.
//
// Built against a checkout of https://github.com/karpathy/llm.c (not part of
// normcore): its train_gpt2.c is included whole, with its own main() renamed,
// and its functions are called as its main() calls them — gpt2_forward,
// gpt2_zero_grad, gpt2_backward, gpt2_update (AdamW) — on our batches instead
// of its data loader's. Nothing of llm.c is changed or copied here.
//
//   gcc -Ofast -march=native -fopenmp -DOMP -I LLMC_DIR bench/llmc/llmc_steps.c -lm -o llmc_steps
//   llmc_steps MODEL.bin TOKENS.tok B T STEPS LR BETA1 BETA2 EPS WEIGHT_DECAY
//
// MODEL.bin: an llm.c checkpoint (bench/llmc/write_weights.py writes one);
// TOKENS.tok: a normcore token file (`normcore tokenize`). Batch i holds
// the B windows of T + 1 tokens that start at token (i B + j) T, j < B:
// inputs the first T, targets the last T (normcore's --no-shuffle rule).
// Prints each step's loss and time, then the median time of the steps after
// the first two: the first allocates llm.c's activations, gradients and
// AdamW state, and normcore bench and bench/compare_pytorch.py leave two
// warm-up steps out of theirs.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define main llmc_train_gpt2_main  // llm.c's own main(), unused
#include "train_gpt2.c"
#undef main

static double now_seconds(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int compare_doubles(const void* a, const void* b) {
    double x = *(const double*)a, y = *(const double*)b;
    return (x > y) - (x < y);
}

// A normcore token file: "NCTOKENS", uint32 version 1, uint32 bytes per id
// (2 or 4), uint64 vocabulary size, uint64 count, then the ids (little-endian,
// as on every machine this runs on). Exits with a message on anything else.
static int* read_token_file(const char* path, size_t* count) {
    FILE* f = fopen(path, "rb");
    if (!f) { fprintf(stderr, "llmc_steps: cannot open the token file '%s'\n", path); exit(2); }
    char magic[8];
    uint32_t version = 0, width = 0;
    uint64_t vocab = 0, n = 0;
    if (fread(magic, 1, 8, f) != 8 || memcmp(magic, "NCTOKENS", 8) != 0 || fread(&version, 4, 1, f) != 1 ||
        fread(&width, 4, 1, f) != 1 || fread(&vocab, 8, 1, f) != 1 || fread(&n, 8, 1, f) != 1 || version != 1 ||
        (width != 2 && width != 4)) {
        fprintf(stderr, "llmc_steps: '%s' is not a normcore token file (version 1, 2 or 4 bytes per id)\n", path);
        exit(2);
    }
    int* ids = (int*)malloc(n * sizeof(int));
    for (uint64_t i = 0; i < n; ++i) {
        uint32_t id = 0;
        if (fread(&id, width, 1, f) != 1) { fprintf(stderr, "llmc_steps: '%s' ends early\n", path); exit(2); }
        ids[i] = (int)id;
    }
    fclose(f);
    *count = n;
    return ids;
}

int main(int argc, char** argv) {
    if (argc != 11) {
        fprintf(stderr, "usage: llmc_steps MODEL.bin TOKENS.tok B T STEPS LR BETA1 BETA2 EPS WEIGHT_DECAY\n");
        return 2;
    }
    const int B = atoi(argv[3]), T = atoi(argv[4]), steps = atoi(argv[5]);
    const float lr = (float)atof(argv[6]), beta1 = (float)atof(argv[7]), beta2 = (float)atof(argv[8]),
                eps = (float)atof(argv[9]), weight_decay = (float)atof(argv[10]);
    size_t count = 0;
    int* ids = read_token_file(argv[2], &count);
    if (B < 1 || T < 1 || steps < 1 || (size_t)steps * B * T + 1 > count) {
        fprintf(stderr, "llmc_steps: need B, T, STEPS >= 1 and STEPS x B x T + 1 <= %zu tokens\n", count);
        return 2;
    }
    GPT2 model;
    gpt2_build_from_checkpoint(&model, argv[1]);  // prints the model's shape
    if (T > model.config.max_seq_len) {
        fprintf(stderr, "llmc_steps: T = %d is longer than the model's %d positions\n", T, model.config.max_seq_len);
        return 2;
    }
    int* inputs = (int*)malloc((size_t)B * T * sizeof(int));
    int* targets = (int*)malloc((size_t)B * T * sizeof(int));
    double* seconds = (double*)malloc((size_t)steps * sizeof(double));
    for (int step = 0; step < steps; ++step) {
        for (int j = 0; j < B; ++j) {
            const int* window = ids + ((size_t)step * B + j) * T;
            memcpy(inputs + (size_t)j * T, window, (size_t)T * sizeof(int));
            memcpy(targets + (size_t)j * T, window + 1, (size_t)T * sizeof(int));
        }
        double start = now_seconds();
        gpt2_forward(&model, inputs, targets, B, T);
        gpt2_zero_grad(&model);
        gpt2_backward(&model);
        gpt2_update(&model, lr, beta1, beta2, eps, weight_decay, step + 1);
        seconds[step] = now_seconds() - start;
        printf("step %d loss %.6f ms %.1f\n", step + 1, model.mean_loss, seconds[step] * 1e3);
    }
    if (steps > 2) {
        qsort(seconds + 2, steps - 2, sizeof(double), compare_doubles);
        printf("llm.c: median %.1f ms/step over steps 3-%d (B=%d, T=%d)\n", seconds[2 + (steps - 2) / 2] * 1e3,
               steps, B, T);
    }
    gpt2_free(&model);
    free(ids);
    free(inputs);
    free(targets);
    free(seconds);
    return 0;
}
