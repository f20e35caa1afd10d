/* rcclx/dda/dda.h - everything DDA: device pieces, kernels, host launcher. */
#pragma once
#include <rcclx/dda/plan.h>
#include <rcclx/dda/flat.h>
#include <rcclx/dda/tree.h>
#include <rcclx/dda/kernels.h>
#include <rcclx/dda/allreduce.h>
