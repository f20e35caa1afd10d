/* rcclx/fp8/fp8.h - everything FP8: scalar formats, block-scaled pack and
 * the ready quantize kernels. */
#pragma once
#include <rcclx/fp8/format.h>
#include <rcclx/fp8/pack.h>
#include <rcclx/fp8/quantize.h>
#include <rcclx/fp8/lowp_plan.h>
