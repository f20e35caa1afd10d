/* rcclx/dda/lamport.h - one-shot AllReduce with the flag in the data, for
 * the smallest messages (TensorRT-LLM's "Lamport" scheme): no barrier.
 *
 * Every rank's Lamport area (rcclx/comm.h) holds 3 rotating buffers, each
 * with one slot per source rank.  All bytes start as 0xFF: all-ones is a
 * NaN in fp32, fp16 and bf16 alike, and means "not arrived" for every
 * dtype, so the area needs no per-dtype reset.  A call k, in block b:
 *   1. clears (to all-ones) what block b read from buffer (k+2)%3 (that
 *      is, in call k-1), and its header there;
 *   2. pushes its input vectors into slot `rank` of buffer k%3 of every
 *      rank (this one included), and a header word (the call fingerprint)
 *      for block b;
 *   3. spins on its own buffer k%3 until every source's header and vectors
 *      hold no all-ones element, then reduces in rank order 0..nranks-1 in
 *      fp32 and rounds once: bitwise the flat kernel's result.
 * Why three buffers suffice, with no fence: buffer (k+2)%3 is next written
 * by the peers' call k+2.  A peer starts call k+2 only after it received
 * this rank's call-(k+1) push, which a LATER kernel on this rank's stream
 * makes, after this kernel (and its clear) completed.  Nobody reads the
 * buffer any more: only its owner reads it, and it finished call k-1.
 * Inputs whose bits are all-ones (one particular NaN) are sent as the
 * canonical quiet NaN: the result is NaN either way (sum), or the NaN is
 * ignored either way (max/min); only a NaN's payload bits can differ from
 * the flat kernel's.  A rank that passes another count or dtype is caught
 * by the header (RCCLX_ERR_RANK_MISMATCH), never by a hang.
 */
#pragma once

#include <rcclx/dda/flat.h>

#if defined(RCCLX_GPU_LANG)

/* Where source `src`'s slot of buffer `buf` lives in rank `owner`'s area. */
RCCLX_DEVICE char* rcclx_lamport_slot(const rcclx_dev_comm& c, int owner, uint32_t buf, int src) {
  return (char*)c.bufs[owner] + RCCLX_NUM_REGIONS * c.region_bytes +
         ((size_t)buf * RCCLX_MAX_RANKS + (size_t)src) * RCCLX_LAMPORT_SLOT_BYTES;
}

/* Whether any of the first `lanes` elements of x is all-ones (not arrived). */
template <typename T>
RCCLX_DEVICE int rcclx_lamport_pending(const rcclx_vec16& x, int lanes) {
  int pending = 0;
  if (sizeof(T) == 4) {
    RCCLX_UNROLL
    for (int i = 0; i < 4; ++i) pending |= i < lanes && x.w[i] == 0xFFFFFFFFu;
  } else {
    RCCLX_UNROLL
    for (int i = 0; i < 8; ++i) pending |= i < lanes && (uint16_t)(x.w[i / 2] >> (16 * (i % 2))) == 0xFFFFu;
  }
  return pending;
}

/* x with every all-ones element replaced by the canonical quiet NaN of T. */
template <typename T>
RCCLX_DEVICE rcclx_vec16 rcclx_lamport_scrub(rcclx_vec16 x) {
  if (sizeof(T) == 4) {
    RCCLX_UNROLL
    for (int i = 0; i < 4; ++i)
      if (x.w[i] == 0xFFFFFFFFu) x.w[i] = 0x7FC00000u;
  } else {
    const uint32_t qnan = rcclx_dtype_of<T>::value == RCCLX_BFLOAT16 ? 0x7FC0u : 0x7E00u;
    RCCLX_UNROLL
    for (int i = 0; i < 4; ++i) {
      if ((x.w[i] & 0xFFFFu) == 0xFFFFu) x.w[i] = (x.w[i] & 0xFFFF0000u) | qnan;
      if ((x.w[i] >> 16) == 0xFFFFu) x.w[i] = (x.w[i] & 0xFFFFu) | (qnan << 16);
    }
  }
  return x;
}

/* Spin (relaxed, never-cached 16-byte loads) until the first `lanes`
 * elements at p have arrived; *x receives them.  Returns 1 if the watchdog
 * fired (recorded), else 0. */
template <typename T>
RCCLX_DEVICE int rcclx_lamport_wait(const rcclx_dev_comm& c, const char* p, int lanes, rcclx_vec16* x, int slot,
                                    int peer, uint32_t call) {
  uint32_t spins = 0;
  uint64_t t0 = 0;
  rcclx_vec16 v = rcclx_ld16_volatile(p);
  while (rcclx_lamport_pending<T>(v, lanes)) {
    if (rcclx_watchdog_expired(c, &spins, &t0, slot, peer, call)) return 1;
    v = rcclx_ld16_volatile(p);
  }
  *x = v;
  return 0;
}

template <typename T, int OP, int NMAX>
RCCLX_GLOBAL void RCCLX_LAUNCH_BOUNDS(RCCLX_DDA_MAX_THREADS)
    rcclx_dda_lamport_kernel(rcclx_dev_comm c, const T* send, T* recv, size_t n, uint32_t sig) {
  /* Indices read once: under HIP they are runtime calls until the device
   * libraries are linked, and CI's ISA build links none. */
  const int b = (int)blockIdx.x, tid = (int)threadIdx.x, V = RCCLX_PACK_ELEMS(T);
  rcclx_signal* me = c.sigs[c.rank];
  const uint32_t k = *(volatile const uint32_t*)&me->lamport_calls[b];
  const uint32_t buf = k % 3u, clr = (k + 2u) % 3u;
  const size_t nthr = blockDim.x, nvec = (n + V - 1) / V, stride = (size_t)gridDim.x * nthr;
  const size_t v0 = (size_t)b * nthr + (size_t)tid;
  const rcclx_vec16 ones = {{0xFFFFFFFFu, 0xFFFFFFFFu, 0xFFFFFFFFu, 0xFFFFFFFFu}};

  /* 1. Clear buffer (k+2)%3: the vectors this block read there in call k-1. */
  const size_t old = *(volatile const uint32_t*)&me->lamport_nvec[b][clr];
  for (int q = 0; q < c.nranks; ++q) {
    char* s = rcclx_lamport_slot(c, c.rank, clr, q);
    for (size_t v = v0; v < old; v += stride) rcclx_st16(s + RCCLX_LAMPORT_HEADER_BYTES + v * 16, ones);
    if (tid == 0) rcclx_st16(s + (size_t)b * 16, ones);
  }
  /* (No fence: peers write there only after this kernel completed.) */

  /* 2. Push into slot `rank` of buffer k%3 of every rank. */
  for (size_t v = v0; v < nvec; v += stride) {
    const rcclx_vec16 x = rcclx_lamport_scrub<T>(rcclx_load_vec_clipped(send, v, n));
    RCCLX_UNROLL
    for (int q = 0; q < NMAX; ++q)
      if (q < c.nranks) rcclx_st16(rcclx_lamport_slot(c, q, buf, c.rank) + RCCLX_LAMPORT_HEADER_BYTES + v * 16, x);
  }
  if (tid == 0) {
    const rcclx_vec16 h = {{sig, 0u, 0u, 0u}};
    for (int q = 0; q < c.nranks; ++q) rcclx_st16(rcclx_lamport_slot(c, q, buf, c.rank) + (size_t)b * 16, h);
  }

  /* 3. Headers: every source reached this call with the same fingerprint. */
  int bad = 0;
  if (tid < c.nranks) {
    rcclx_vec16 h;
    const int q = tid;
    if (rcclx_lamport_wait<float>(c, rcclx_lamport_slot(c, c.rank, buf, q) + (size_t)b * 16, 1, &h, b, q, k)) bad = 1;
    else if (h.w[0] != sig) {
      rcclx_record_error(c, RCCLX_ERR_RANK_MISMATCH, b, q, k);
      bad = 2;
    }
  }
  if (__syncthreads_or(bad)) return; /* the communicator must be rebuilt (rcclx_comm_check) */

  /* 3b. Data: sources taken in rank order, four at a time: a group's four
   * vectors are loaded at once (four loads in flight; eight would spill at
   * the 64-register co-residency budget), any not yet arrived is re-polled,
   * and each is added in fp32 as it is taken. */
  for (size_t v = v0; v < nvec; v += stride) {
    const int lanes = (v + 1) * V <= n ? V : (int)(n - v * V);
    const char* base = rcclx_lamport_slot(c, c.rank, buf, 0) + RCCLX_LAMPORT_HEADER_BYTES + v * 16;
    float acc[RCCLX_PACK_ELEMS(T)], y[RCCLX_PACK_ELEMS(T)];
    RCCLX_NO_UNROLL /* unrolled, the second batch's loads are hoisted: CDNA spills */
    for (int g = 0; g < NMAX; g += 4) {
      rcclx_vec16 x[4];
      RCCLX_UNROLL
      for (int j = 0; j < 4; ++j)
        if (g + j < c.nranks) x[j] = rcclx_ld16_volatile(base + (size_t)(g + j) * RCCLX_LAMPORT_SLOT_BYTES);
      int timeout = 0;
      RCCLX_UNROLL
      for (int j = 0; j < 4; ++j) {
        const int q = g + j;
        if (q < c.nranks && !timeout) {
          if (rcclx_lamport_pending<T>(x[j], lanes))
            timeout = rcclx_lamport_wait<T>(c, base + (size_t)q * RCCLX_LAMPORT_SLOT_BYTES, lanes, &x[j], b, q, k);
          rcclx_unpack16<T>(x[j], y);
          RCCLX_UNROLL
          for (int i = 0; i < V; ++i) acc[i] = q == 0 ? y[i] : rcclx_reduce_f32<OP>(acc[i], y[i]);
        }
      }
      if (timeout) return;
    }
    rcclx_store_vec_clipped(recv, v, n, rcclx_pack16<T>(acc));
  }
  /* 4. What buffer k%3 must have cleared in call k+2, and the call count.
   * (Every thread read both counters above; the next call is a later
   * kernel on the same stream.) */
  __syncthreads();
  if (tid == 0) {
    me->lamport_nvec[b][buf] = (uint32_t)nvec;
    me->lamport_calls[b] = k + 1u;
  }
}

#endif /* RCCLX_GPU_LANG */
