/* rcclx/comm_setup.h - building and tearing down rank views (GPU builds).
 * Included by rcclx/comm.h; see there for the buffer layout and fixed grid.
 *
 *   rcclx_comms_init_local  one process drives every rank: one GPU per rank
 *                           (peer access enabled) or several ranks on one
 *                           GPU (virtual ranks), or a mix;
 *   rcclx_comm_init_ipc     one process per rank; IPC handles exchanged by
 *                           an all-gather the caller supplies (MPI,
 *                           torch.distributed, a socket, a file...);
 *   rcclx_comm_destroy      releases everything; safe on a zeroed or
 *                           half-built comm and after a failed init;
 *   rcclx_comm_check        reads and clears the error a kernel recorded.
 */
#pragma once

#include <rcclx/comm.h>
#include <rcclx/dda/kernels.h>
#include <rcclx/dda/plan.h>
#include <rcclx/fp8/lowp_plan.h>

#if defined(RCCLX_GPU_LANG)

/* rank_bytes is what each rank contributes; all receives nranks * that,
 * rank r's part at offset r * rank_bytes.  Returns 0 on success. */
typedef int (*rcclx_allgather_fn)(void* ctx, const void* mine, void* all, size_t rank_bytes);

/* Restores the caller's current device on scope exit (C style: call it). */
RCCLX_HOST rcclx_status rcclx_set_device_(int device, int* previous) {
  if (hipGetDevice(previous) != hipSuccess) return RCCLX_ERR_NO_DEVICE;
  if (*previous != device && hipSetDevice(device) != hipSuccess) return RCCLX_ERR_NO_DEVICE;
  return RCCLX_SUCCESS;
}

/* Makes the rank's GPU current, as a host call that launches into the
 * rank's stream needs (one host thread may drive ranks on several GPUs);
 * *previous gets the caller's device, to give back with hipSetDevice.
 * Every rcclx launcher does this itself; a user's launcher of a fused
 * kernel calls it (examples/). */
RCCLX_HOST rcclx_status rcclx_comm_use_device(const rcclx_comm* comm, int* previous) {
  if (!comm || !previous) return RCCLX_ERR_NULL_POINTER;
  return rcclx_set_device_(comm->device, previous);
}
/* The end of such a launcher: the status of the launch it just made
 * (RCCLX_ERR_RUNTIME if the launch failed; the error is consumed), with the
 * caller's device `previous` (from rcclx_comm_use_device) current again. */
RCCLX_HOST rcclx_status rcclx_comm_launched(int previous) {
  const hipError_t e = hipGetLastError();
  (void)hipSetDevice(previous);
  return e == hipSuccess ? RCCLX_SUCCESS : RCCLX_ERR_RUNTIME;
}

/* What an occupancy query (rcclx_comm_check_coresident_memo,
 * rcclx_comm_persistent_grid) remembers of one kernel, per device
 * (ordinals below RCCLX_OCCUPANCY_MEMO_DEVICES; others are asked every
 * time): the block size asked for, the kernel's blocks per multiprocessor
 * and the multiprocessor count, packed in one word (0: not asked yet, no
 * block size being 0).  Keep one per kernel, zero-initialised (a
 * function-local static). */
#define RCCLX_OCCUPANCY_MEMO_DEVICES 16
typedef struct rcclx_occupancy_memo {
  uint64_t word[RCCLX_OCCUPANCY_MEMO_DEVICES];
} rcclx_occupancy_memo;

/* `kernel`'s blocks of `threads` threads per multiprocessor of the rank's
 * GPU (*occ) and its multiprocessor count (*sms).  With memo NULL the
 * runtime is asked every time; with a memo (for a launcher that asks for
 * the same kernel on every call) once per device and block size, later
 * calls read it.  The first ask also loads the kernel, as rcclx/comm.h
 * requires.  Any host thread may call it (the word is read and written
 * atomically; two first calls may both ask, with the same answer). */
RCCLX_HOST rcclx_status rcclx_comm_occupancy_(const rcclx_comm* comm, const void* kernel, int threads,
                                              rcclx_occupancy_memo* memo, long* occ, long* sms) {
  const int d = comm->device;
  uint64_t* slot = memo && d >= 0 && d < RCCLX_OCCUPANCY_MEMO_DEVICES ? &memo->word[d] : NULL;
  uint64_t w = slot ? __atomic_load_n(slot, __ATOMIC_RELAXED) : 0u;
  if ((long)(w >> 40) != (long)threads) {
    /* The occupancy query answers for the current device: make it the
     * rank's for the call (a host thread may drive ranks on several GPUs). */
    int o = 0, n = 0, prev = 0;
    RCCLX_TRY(rcclx_set_device_(d, &prev));
    const hipError_t e = hipOccupancyMaxActiveBlocksPerMultiprocessor(&o, kernel, threads, 0);
    if (prev != d) (void)hipSetDevice(prev);
    if (e != hipSuccess || hipDeviceGetAttribute(&n, hipDeviceAttributeMultiprocessorCount, d) != hipSuccess ||
        o < 0 || o > 0xFFFF || n < 0 || n > 0xFFFFFF)
      return RCCLX_ERR_RUNTIME;
    w = ((uint64_t)(uint32_t)threads << 40) | ((uint64_t)n << 16) | (uint64_t)o;
    if (slot) __atomic_store_n(slot, w, __ATOMIC_RELAXED);
  }
  *occ = (long)(w & 0xFFFFu);
  *sms = (long)((w >> 16) & 0xFFFFFFu);
  return RCCLX_SUCCESS;
}

/* Whether `grid` blocks of `threads` threads of `kernel` on this rank can be
 * co-resident with the same grid of every other rank on its GPU, as a
 * kernel that waits on peers (a barrier, a tile wait) needs.  For kernels
 * other than the DDA ones the communicator's grid was sized for.
 * RCCLX_SUCCESS, or RCCLX_ERR_INVALID_ARGUMENT when it cannot be
 * (RCCLX_ERR_RUNTIME if the runtime cannot say).  memo: as
 * rcclx_comm_occupancy_. */
RCCLX_HOST rcclx_status rcclx_comm_check_coresident_memo(const rcclx_comm* comm, const void* kernel, int threads,
                                                         int grid, rcclx_occupancy_memo* memo) {
  long occ = 0, sms = 0;
  RCCLX_TRY(rcclx_comm_occupancy_(comm, kernel, threads, memo, &occ, &sms));
  return occ * sms < (long)grid * comm->ranks_on_device ? RCCLX_ERR_INVALID_ARGUMENT : RCCLX_SUCCESS;
}
/* The same, asking the runtime every time: what a user's fused kernel
 * calls before launching. */
RCCLX_HOST rcclx_status rcclx_comm_check_coresident(const rcclx_comm* comm, const void* kernel, int threads, int grid) {
  return rcclx_comm_check_coresident_memo(comm, kernel, threads, grid, NULL);
}

/* The grid for a persistent kernel that waits on its peers (a fused GEMM
 * that publishes and waits for tiles, rcclx/tile.h): the most blocks, at
 * most `want`, of `threads` threads of `kernel` that every rank may run at
 * once without the ranks' grids keeping each other, or the producer kernels
 * of ranks that have not reached their call yet, from running.
 *   One rank on its GPU: the kernel's full occupancy (its blocks per
 *     multiprocessor times the multiprocessors), all co-resident.
 *   Ranks sharing a GPU: the rank's share of it, the nblocks
 *     multiprocessors its collective grid is sized for (rcclx_comm_grid_),
 *     each filled with as many of this kernel's blocks as fit on one; so
 *     the ranks' grids together stay within the envelope that leaves
 *     RCCLX_SHARED_GPU_FREE_SMS multiprocessors to other kernels, whatever
 *     the kernel's block size, registers or shared memory.
 * *grid >= 1 on success; RCCLX_ERR_INVALID_ARGUMENT if want or threads is
 * below 1 or the kernel cannot run a block (RCCLX_ERR_RUNTIME if the
 * runtime cannot say).  Every rank must use the same grid (rcclx/tile.h:
 * tile t by block t % gridDim.x): it does when the ranks run the same
 * kernel on the same kind of GPU with the same communicator settings,
 * which the communicator's init checked.  memo: as rcclx_comm_occupancy_
 * (a launcher called every layer keeps one per kernel; NULL asks the
 * runtime every time). */
RCCLX_HOST rcclx_status rcclx_comm_persistent_grid(const rcclx_comm* comm, const void* kernel, int threads, int want,
                                                   rcclx_occupancy_memo* memo, int* grid) {
  if (!comm || !comm->kind || !kernel || !grid) return RCCLX_ERR_NULL_POINTER;
  if (threads < 1 || want < 1) return RCCLX_ERR_INVALID_ARGUMENT;
  long occ = 0, sms = 0;
  RCCLX_TRY(rcclx_comm_occupancy_(comm, kernel, threads, memo, &occ, &sms));
  const long most = comm->ranks_on_device > 1 ? occ * comm->view.nblocks : occ * sms;
  if (most < 1) return RCCLX_ERR_INVALID_ARGUMENT;
  *grid = most < (long)want ? (int)most : want;
  return RCCLX_SUCCESS;
}

/* Grid of every collective kernel of a rank: co-resident with the grids of
 * the other ranks that share its GPU.  With several ranks on one GPU the
 * grids together also leave whole multiprocessors free (at most one block
 * per multiprocessor, RCCLX_SHARED_GPU_FREE_SMS of them untouched): while
 * some ranks' collectives spin, a rank that has not reached its collective
 * yet must still run its producer kernel (a GEMM), and a multiprocessor
 * that hosts a spinning block may not take a block of a kernel with another
 * shared-memory configuration until it drains.  Filling every
 * multiprocessor deadlocked the 8-rank fused-GEMM test (bench/RESULTS.md,
 * run 3).  One rank per GPU keeps the full occupancy grid. */
#define RCCLX_SHARED_GPU_FREE_SMS 4
RCCLX_HOST rcclx_status rcclx_comm_grid_(const rcclx_config* cfg, int device, int ranks_on_device, int* nblocks) {
  int sms = 0;
  if (hipDeviceGetAttribute(&sms, hipDeviceAttributeMultiprocessorCount, device) != hipSuccess) return RCCLX_ERR_RUNTIME;
  const int occ = rcclx_dda_min_occupancy(cfg->nthreads);
  if (occ < 1) return RCCLX_ERR_RUNTIME;
  int b = sms * occ;
  if (ranks_on_device > 1) {
    /* RCCLX_PDL_EARLY: each rank's stream may hold two grids (the running
     * call's and the next one, waiting), so each grid gets half: together
     * they keep the same one-block-per-multiprocessor envelope, which is
     * what lets rcclx_comm_fill_view_ set RCCLX_VIEW_LAUNCH_EARLY. */
    const int grids = cfg->pdl == RCCLX_PDL_EARLY && rcclx_pdl_supported(device) ? 2 * ranks_on_device : ranks_on_device;
    b = (sms > 2 * RCCLX_SHARED_GPU_FREE_SMS ? sms - RCCLX_SHARED_GPU_FREE_SMS : sms / 2) / grids;
  }
  if (b > cfg->max_blocks) b = cfg->max_blocks;
  if (b < 1) return RCCLX_ERR_INVALID_NRANKS; /* more ranks than co-resident blocks */
  *nblocks = b;
  return RCCLX_SUCCESS;
}

/* This rank's two allocations (rcclx/comm.h): the registered buffer, and
 * the polled area in memory peers may poll (rcclx_malloc_polled). */
RCCLX_HOST rcclx_status rcclx_comm_alloc_(rcclx_comm* c, const rcclx_config* cfg) {
  const size_t bytes = RCCLX_NUM_REGIONS * cfg->region_bytes;
  if (hipMalloc(&c->alloc, bytes) != hipSuccess) {
    c->alloc = NULL;
    return RCCLX_ERR_OUT_OF_MEMORY;
  }
  if (rcclx_malloc_polled(&c->polled, RCCLX_POLLED_BYTES) != hipSuccess) {
    c->polled = NULL;
    return RCCLX_ERR_OUT_OF_MEMORY;
  }
  /* Zeroed before init returns: the signal and LL areas must read zero to
   * the first collective, and kernels on non-blocking streams do not wait
   * for the null stream these memsets run on. */
  if (hipMemset(c->alloc, 0, bytes) != hipSuccess || hipMemset(c->polled, 0, RCCLX_POLLED_BYTES) != hipSuccess ||
      hipStreamSynchronize(0) != hipSuccess)
    return RCCLX_ERR_RUNTIME;
  return RCCLX_SUCCESS;
}

RCCLX_HOST void rcclx_comm_destroy(rcclx_comm* c) {
  if (!c) return;
  int prev = 0;
  const int switched = c->kind && rcclx_set_device_(c->device, &prev) == RCCLX_SUCCESS;
  for (int r = 0; r < RCCLX_MAX_RANKS; ++r) {
    if (c->ipc_mapped[r]) (void)hipIpcCloseMemHandle(c->ipc_mapped[r]);
    if (c->ipc_polled_mapped[r]) (void)hipIpcCloseMemHandle(c->ipc_polled_mapped[r]);
  }
  if (c->alloc) (void)hipFree(c->alloc);
  if (c->polled) (void)hipFree(c->polled);
  if (switched && prev != c->device) (void)hipSetDevice(prev);
  memset(c, 0, sizeof *c);
}

/* c->device and c->ranks_on_device set.  RCCLX_VIEW_LAUNCH_EARLY
 * (RCCLX_PDL_EARLY only): with one rank per GPU the next kernel can only
 * take what this grid leaves (it is scheduled once every block of this one
 * runs), and no kernel of another rank shares the GPU; with several, two
 * grids of every rank must fit (a stream never holds more:
 * rcclx_dda_launch_next_early), which rcclx_comm_grid_ sized nblocks for
 * (the grid all ranks agree on is never larger than any rank's). */
RCCLX_HOST void rcclx_comm_fill_view_(rcclx_comm* c, int rank, int nranks, const rcclx_config* cfg, int nblocks,
                                      uint32_t flags) {
  c->view.rank = rank;
  c->view.flags = flags;
  c->view.nranks = nranks;
  c->view.nblocks = nblocks;
  c->view.nthreads = cfg->nthreads;
  c->view.region_bytes = cfg->region_bytes;
  c->view.watchdog_ns = cfg->watchdog_ns;
  c->flat_max_bytes = rcclx_default_flat_max_bytes(nranks);
  c->ll_max_bytes = rcclx_default_ll_max_bytes(nranks);
  c->direct_min_bytes = rcclx_default_direct_min_bytes(nranks);
  c->lowp = rcclx_lowp_switches_from_env();
  c->lowp_flat_max_bytes = rcclx_lowp_default_flat_max_bytes(nranks);
  c->pdl = cfg->pdl != RCCLX_PDL_OFF && rcclx_pdl_supported(c->device);
  if (c->pdl && cfg->pdl == RCCLX_PDL_EARLY) c->view.flags |= RCCLX_VIEW_LAUNCH_EARLY;
}
RCCLX_HOST void rcclx_comm_set_peer_(rcclx_comm* c, int r, void* alloc, void* polled) {
  c->view.bufs[r] = alloc;
  c->view.sigs[r] = (rcclx_signal*)polled;
}

/* One process, nranks ranks; rank r runs on devices[r].  Fills comms[0..nranks).
 * On failure every comm is destroyed (zeroed) and the status returned. */
RCCLX_HOST rcclx_status rcclx_comms_init_local(int nranks, const int* devices, const rcclx_config* config,
                                               rcclx_comm* comms) {
  if (!devices || !comms) return RCCLX_ERR_NULL_POINTER;
  if (nranks < 2 || nranks > RCCLX_MAX_RANKS) return RCCLX_ERR_INVALID_NRANKS;
  rcclx_config cfg;
  RCCLX_TRY(rcclx_config_resolve(config, &cfg));
  int ndev = 0;
  if (hipGetDeviceCount(&ndev) != hipSuccess || ndev < 1) return RCCLX_ERR_NO_DEVICE;
  for (int r = 0; r < nranks; ++r)
    if (devices[r] < 0 || devices[r] >= ndev) return RCCLX_ERR_NO_DEVICE;
  memset(comms, 0, sizeof(rcclx_comm) * (size_t)nranks);
  int one_device = 1;
  for (int r = 1; r < nranks; ++r) one_device &= devices[r] == devices[0];
  uint32_t flags = one_device && !cfg.system_scope ? RCCLX_VIEW_ONE_DEVICE : 0u;
  if (cfg.direct == RCCLX_DIRECT_ON || (cfg.direct == RCCLX_DIRECT_AUTO && one_device)) flags |= RCCLX_VIEW_DIRECT;
  flags |= rcclx_config_ll_push_flag(&cfg, one_device);
  int prev = 0;
  rcclx_status st = rcclx_set_device_(devices[0], &prev);
  if (st != RCCLX_SUCCESS) return st;
  /* One grid for all ranks (they must agree): the tightest device decides. */
  int nblocks = RCCLX_MAX_BLOCKS;
  for (int r = 0; r < nranks && st == RCCLX_SUCCESS; ++r) {
    int share = 0, b = 0;
    for (int q = 0; q < nranks; ++q) share += devices[q] == devices[r];
    if ((st = rcclx_set_device_(devices[r], &b)) == RCCLX_SUCCESS) st = rcclx_comm_grid_(&cfg, devices[r], share, &b);
    if (st == RCCLX_SUCCESS && b < nblocks) nblocks = b;
    comms[r].ranks_on_device = share;
  }
  for (int r = 0; r < nranks && st == RCCLX_SUCCESS; ++r) {
    comms[r].device = devices[r];
    comms[r].kind = RCCLX_COMM_LOCAL;
    rcclx_comm_fill_view_(&comms[r], r, nranks, &cfg, nblocks, flags);
    if ((st = rcclx_set_device_(devices[r], &ndev)) == RCCLX_SUCCESS) st = rcclx_comm_alloc_(&comms[r], &cfg);
    for (int q = 0; q < nranks && st == RCCLX_SUCCESS; ++q) {
      if (devices[q] == devices[r]) continue;
      int can = 0;
      if (hipDeviceCanAccessPeer(&can, devices[r], devices[q]) != hipSuccess || !can) {
        st = RCCLX_ERR_PEER_ACCESS;
      } else {
        hipError_t e = hipDeviceEnablePeerAccess(devices[q], 0);
        if (e == hipErrorPeerAccessAlreadyEnabled) (void)hipGetLastError();
        else if (e != hipSuccess) st = RCCLX_ERR_PEER_ACCESS;
      }
    }
  }
  for (int r = 0; r < nranks && st == RCCLX_SUCCESS; ++r)
    for (int q = 0; q < nranks; ++q) rcclx_comm_set_peer_(&comms[r], q, comms[q].alloc, comms[q].polled);
  (void)hipSetDevice(prev);
  if (st != RCCLX_SUCCESS)
    for (int r = 0; r < nranks; ++r) rcclx_comm_destroy(&comms[r]);
  return st;
}

/* What each rank publishes in the IPC all-gather. */
typedef struct rcclx_ipc_card {
  hipIpcMemHandle_t handle, polled_handle; /* registered buffer, polled area */
  int32_t rank, nranks, nthreads, max_blocks;
  rcclx_pci_location pci; /* which GPU: the ranks sharing it (rcclx_ranks_on_gpu) */
  int32_t system_scope, ll_push;
  uint64_t region_bytes, watchdog_ns;
} rcclx_ipc_card;

/* One process per rank.  Every rank calls it with the same nranks and
 * config; `allgather` runs twice (cards, then grid sizes).  Ranks on the
 * same GPU (several processes sharing it) size the grid for co-residency.
 * Returns RCCLX_ERR_RANK_MISMATCH when ranks disagree on the shape. */
RCCLX_HOST rcclx_status rcclx_comm_init_ipc(int rank, int nranks, int device, const rcclx_config* config,
                                            rcclx_allgather_fn allgather, void* ctx, rcclx_comm* c) {
  if (!allgather || !c) return RCCLX_ERR_NULL_POINTER;
  if (nranks < 2 || nranks > RCCLX_MAX_RANKS) return RCCLX_ERR_INVALID_NRANKS;
  if (rank < 0 || rank >= nranks) return RCCLX_ERR_INVALID_RANK;
  rcclx_config cfg;
  RCCLX_TRY(rcclx_config_resolve(config, &cfg));
  memset(c, 0, sizeof *c);
  int prev = 0;
  RCCLX_TRY(rcclx_set_device_(device, &prev));
  c->device = device;
  c->kind = RCCLX_COMM_IPC;
  rcclx_ipc_card cards[RCCLX_MAX_RANKS], mine;
  memset(&mine, 0, sizeof mine);
  rcclx_status st = rcclx_comm_alloc_(c, &cfg);
  if (st == RCCLX_SUCCESS && (hipIpcGetMemHandle(&mine.handle, c->alloc) != hipSuccess ||
                              hipIpcGetMemHandle(&mine.polled_handle, c->polled) != hipSuccess))
    st = RCCLX_ERR_PEER_ACCESS;
  if (st == RCCLX_SUCCESS &&
      (hipDeviceGetAttribute(&mine.pci.domain, hipDeviceAttributePciDomainID, device) != hipSuccess ||
       hipDeviceGetAttribute(&mine.pci.bus, hipDeviceAttributePciBusId, device) != hipSuccess ||
       hipDeviceGetAttribute(&mine.pci.device, hipDeviceAttributePciDeviceId, device) != hipSuccess))
    st = RCCLX_ERR_RUNTIME;
  mine.rank = rank;
  mine.nranks = nranks;
  mine.nthreads = cfg.nthreads;
  mine.max_blocks = cfg.max_blocks;
  mine.region_bytes = cfg.region_bytes;
  mine.watchdog_ns = cfg.watchdog_ns;
  mine.system_scope = cfg.system_scope;
  mine.ll_push = cfg.ll_push;
  /* Even a failed rank joins the exchange, so the others do not wait forever. */
  if (st != RCCLX_SUCCESS) mine.nranks = -1;
  if (allgather(ctx, &mine, cards, sizeof(rcclx_ipc_card)) != 0) st = RCCLX_ERR_RUNTIME;
  rcclx_pci_location where[RCCLX_MAX_RANKS];
  for (int q = 0; q < nranks && st == RCCLX_SUCCESS; ++q) {
    const rcclx_ipc_card* k = &cards[q];
    if (k->nranks == -1) st = RCCLX_ERR_PEER_ACCESS;
    else if (k->rank != q || k->nranks != nranks || k->nthreads != mine.nthreads || k->max_blocks != mine.max_blocks ||
             k->region_bytes != mine.region_bytes || k->watchdog_ns != mine.watchdog_ns ||
             k->system_scope != mine.system_scope || k->ll_push != mine.ll_push)
      st = RCCLX_ERR_RANK_MISMATCH;
    where[q] = k->pci;
  }
  const int share = st == RCCLX_SUCCESS ? rcclx_ranks_on_gpu(where, nranks, &mine.pci) : 0;
  c->ranks_on_device = share;
  int nblocks = 0;
  if (st == RCCLX_SUCCESS) st = rcclx_comm_grid_(&cfg, device, share, &nblocks);
  /* Second exchange: the grid all ranks will use (the smallest). */
  int32_t grids[RCCLX_MAX_RANKS], my_grid = st == RCCLX_SUCCESS ? nblocks : -1;
  if (allgather(ctx, &my_grid, grids, sizeof(int32_t)) != 0 && st == RCCLX_SUCCESS) st = RCCLX_ERR_RUNTIME;
  for (int q = 0; q < nranks && st == RCCLX_SUCCESS; ++q) {
    if (grids[q] < 1) st = RCCLX_ERR_PEER_ACCESS;
    else if (grids[q] < nblocks) nblocks = grids[q];
  }
  if (st == RCCLX_SUCCESS) {
    /* Processes sharing one GPU need only device scope; peers' ordinary
     * memory is never reachable across processes (no RCCLX_VIEW_DIRECT). */
    rcclx_comm_fill_view_(c, rank, nranks, &cfg, nblocks,
                          (share == nranks && !cfg.system_scope ? RCCLX_VIEW_ONE_DEVICE : 0u) |
                              rcclx_config_ll_push_flag(&cfg, share == nranks));
    rcclx_comm_set_peer_(c, rank, c->alloc, c->polled);
    for (int q = 0; q < nranks && st == RCCLX_SUCCESS; ++q) {
      if (q == rank) continue;
      /* Kept only once opened: destroy closes what is kept. */
      void *p = NULL, *s = NULL;
      if (hipIpcOpenMemHandle(&p, cards[q].handle, hipIpcMemLazyEnablePeerAccess) != hipSuccess) p = NULL;
      if (p && hipIpcOpenMemHandle(&s, cards[q].polled_handle, hipIpcMemLazyEnablePeerAccess) != hipSuccess) s = NULL;
      c->ipc_mapped[q] = p;
      c->ipc_polled_mapped[q] = s;
      if (!p || !s) st = RCCLX_ERR_PEER_ACCESS;
      else rcclx_comm_set_peer_(c, q, p, s);
    }
  }
  (void)hipSetDevice(prev);
  if (st != RCCLX_SUCCESS) rcclx_comm_destroy(c);
  return st;
}

/* Reads and clears the first error a kernel of this rank recorded.  Call
 * after the rank's stream is synchronised.  RCCLX_ERR_PEER_TIMEOUT leaves
 * the barrier epochs out of step: destroy the communicators of all ranks
 * and create new ones.  RCCLX_ERR_RANK_MISMATCH from a barrier kernel (DDA
 * flat or tree, low precision) ended that call on every rank at its first
 * barrier (its output is undefined) and the communicator stays usable;
 * from the LL kernel (rcclx/dda/ll.h) it needs new ones too.
 * Until the error is read, every later collective of this rank is skipped
 * (its output untouched): a call that follows a mismatch, such as the next
 * chunk of a count the peers did not pass, never waits for peers that are
 * not coming, and every rank of a mismatch recorded it, so all skip. */
RCCLX_HOST rcclx_status rcclx_comm_check(rcclx_comm* c, rcclx_error_record* detail) {
  if (!c || !c->kind) return RCCLX_ERR_NULL_POINTER;
  int prev = 0;
  RCCLX_TRY(rcclx_set_device_(c->device, &prev));
  rcclx_error_record rec;
  rcclx_error_record* dev = &c->view.sigs[c->view.rank]->error;
  rcclx_status st = RCCLX_SUCCESS;
  if (hipMemcpy(&rec, dev, sizeof rec, hipMemcpyDeviceToHost) != hipSuccess) st = RCCLX_ERR_RUNTIME;
  else if (rec.status && hipMemset(dev, 0, sizeof rec) != hipSuccess) st = RCCLX_ERR_RUNTIME;
  (void)hipSetDevice(prev);
  if (st != RCCLX_SUCCESS) return st;
  if (detail) *detail = rec;
  return (rcclx_status)rec.status;
}

#endif /* RCCLX_GPU_LANG */
