/* rcclx/trace.h - an optional timestamp hook in the DDA kernels, for
 * diagnosis (bench/bench_latency.cpp traces the library's own kernels with
 * it).  RCCLX_TRACE(c, call, stage) is reached by every thread of every
 * block at each stage boundary of a call:
 *   0  the call's counters are read (the stream's previous kernel is done)
 *   1  this rank's data is out (flat / tree: staged; LL: its lines written)
 *   2  the peers' data is here (the first barrier passed; LL: this
 *      thread's vectors polled and reduced)
 *   3  the block's results are written (LL, which closes no call
 *      block-wide: this thread's polls and headers done)
 *   4  the call is closed (LL: where 3 is)
 * c is the rank's view, call the block slot's call count.  A program that
 * defines RCCLX_TRACE before including any rcclx header gets the calls; its
 * hook may only read its arguments and write memory no collective reads.
 * By default it is nothing. */
#pragma once

#ifndef RCCLX_TRACE
#define RCCLX_TRACE(c, call, stage) ((void)0)
#endif
