/* rcclx/rcclx.h - the umbrella header.
 *
 * Host C++ (no GPU compiler) gets the scalar pieces: status codes, dtypes,
 * fp8 formats, the pack layout and argument checks.  HIP or CUDA builds get
 * the device functions, kernels and host launchers as well. */
#pragma once
#include <rcclx/platform.h>
#include <rcclx/status.h>
#include <rcclx/types.h>
#include <rcclx/comm.h>
#include <rcclx/comm_setup.h>
#include <rcclx/signal.h>
#include <rcclx/dda/dda.h>
#include <rcclx/fp8/fp8.h>
