/* rcclx/status.h - error codes returned by every rcclx host function. */
#pragma once

#include <rcclx/platform.h>

typedef enum rcclx_status : int {
  RCCLX_SUCCESS = 0,
  RCCLX_ERR_NULL_POINTER,      /* a required pointer is NULL */
  RCCLX_ERR_MISALIGNED,        /* a pointer or size breaks its alignment rule */
  RCCLX_ERR_INVALID_COUNT,     /* element count out of range */
  RCCLX_ERR_UNSUPPORTED_DTYPE, /* dtype not handled by this call */
  RCCLX_ERR_UNSUPPORTED_OP,    /* reduce op not handled by this call */
  RCCLX_ERR_INVALID_ARGUMENT,  /* any other argument out of its range */
  RCCLX_ERR_INVALID_NRANKS,    /* nranks outside 2..8 */
  RCCLX_ERR_INVALID_RANK,      /* rank outside 0..nranks-1 */
  RCCLX_ERR_BUFFER_TOO_SMALL,  /* registered buffer cannot hold the request */
  RCCLX_ERR_RANK_MISMATCH,     /* ranks passed views/arguments that disagree */
  RCCLX_ERR_PEER_ACCESS,       /* peer access or IPC mapping failed */
  RCCLX_ERR_NO_DEVICE,         /* no GPU visible to the runtime */
  RCCLX_ERR_OUT_OF_MEMORY,     /* device or host allocation failed */
  RCCLX_ERR_RUNTIME,           /* the HIP/CUDA runtime returned an error */
  RCCLX_ERR_PEER_TIMEOUT,      /* the watchdog saw a peer that never arrived;
                                  the communicator must be destroyed */
  RCCLX_STATUS_COUNT
} rcclx_status;

/* A readable, static string for every status (never NULL). */
RCCLX_HOST const char* rcclx_status_string(rcclx_status s) {
  switch (s) {
    case RCCLX_SUCCESS: return "success";
    case RCCLX_ERR_NULL_POINTER: return "null pointer";
    case RCCLX_ERR_MISALIGNED: return "misaligned pointer or size";
    case RCCLX_ERR_INVALID_COUNT: return "invalid element count";
    case RCCLX_ERR_UNSUPPORTED_DTYPE: return "unsupported dtype";
    case RCCLX_ERR_UNSUPPORTED_OP: return "unsupported reduce op";
    case RCCLX_ERR_INVALID_ARGUMENT: return "invalid argument";
    case RCCLX_ERR_INVALID_NRANKS: return "nranks outside 2..8";
    case RCCLX_ERR_INVALID_RANK: return "rank outside 0..nranks-1";
    case RCCLX_ERR_BUFFER_TOO_SMALL: return "registered buffer too small";
    case RCCLX_ERR_RANK_MISMATCH: return "ranks disagree";
    case RCCLX_ERR_PEER_ACCESS: return "peer access or IPC mapping failed";
    case RCCLX_ERR_NO_DEVICE: return "no GPU device";
    case RCCLX_ERR_OUT_OF_MEMORY: return "out of memory";
    case RCCLX_ERR_RUNTIME: return "GPU runtime error";
    case RCCLX_ERR_PEER_TIMEOUT: return "peer timeout (watchdog); destroy the communicator";
    default: return "unknown rcclx status";
  }
}

/* Return from the calling function with `expr`'s status if it fails. */
#define RCCLX_TRY(expr)                       \
  do {                                        \
    rcclx_status rcclx_try_s_ = (expr);       \
    if (rcclx_try_s_ != RCCLX_SUCCESS) return rcclx_try_s_; \
  } while (0)
