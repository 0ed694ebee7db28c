// fused_ops.h — the header of every fused op listed in ops.def: each
// declares its kernels' signatures, its raw ops and its differentiable op.
#pragma once

#include "tensor/ops/adamw.h"
#include "tensor/ops/attention.h"
#include "tensor/ops/cross_entropy.h"
#include "tensor/ops/dyt.h"
#include "tensor/ops/geodesic_update.h"
#include "tensor/ops/norms.h"
#include "tensor/ops/rope.h"
#include "tensor/ops/scale_shift.h"
