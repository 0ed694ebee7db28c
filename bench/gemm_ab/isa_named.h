// isa_named.h — the micro-kernel a name stands for, on one side of the GEMM
// A/B comparison (side.cpp, side16.cpp). A name, not the enum, crosses
// between the two sides, whose enums live in different namespaces.
#pragma once

#include <cstring>
#include <stdexcept>
#include <string>

#include "tensor/cpu/gemm_kernels.h"

// The micro-kernel named `name` ("avx2", ...: simd_isa_name's names), or
// this CPU's best when `name` is empty. Every value of the enum is tried
// (simd_isa_name says "?" past the last), so that older revisions, whose
// enum has fewer kernels, work too.
static nc::cpu::SimdIsa isa_named(const char* name) {
    if (!name || !*name) return nc::cpu::best_simd_isa();
    std::string known;
    for (int value = 0; value < 8; ++value) {
        const auto isa = static_cast<nc::cpu::SimdIsa>(value);
        const char* isa_name = nc::cpu::simd_isa_name(isa);
        if (std::strcmp(isa_name, "?") == 0) continue;
        if (std::strcmp(isa_name, name) == 0) return isa;
        known += known.empty() ? isa_name : std::string(", ") + isa_name;
    }
    throw std::runtime_error(std::string("gemm_ab: no micro-kernel named '") + name + "' (GEMM_AB_ISA; the names: " +
                             known + ")");
}
