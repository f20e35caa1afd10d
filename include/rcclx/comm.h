/* rcclx/comm.h - rank views: what a kernel needs to reach every rank's
 * buffer and signals, and the host calls that build them.
 *
 * ---- Device view --------------------------------------------------------
 * rcclx_dev_comm is a plain struct passed by value into kernels.  Its
 * pointers are valid on this rank's device: its own two allocations (below),
 * and its peers' through peer access (one process, one GPU per rank), the
 * same device (virtual ranks on one GPU) or IPC mappings (one process per
 * rank).
 *
 * ---- Registered buffer of each rank (bufs[r]) -----------------------------
 * Ordinary device memory, read by peers only after a barrier.  Three
 * regions of `region_bytes` each (a multiple of 4 KiB):
 *   region 0, 1   copy-in halves.  A copy-in call stages its input into half
 *                 (call count of the block slot & 1); the next call uses the
 *                 other half, so a call never needs an end barrier.
 *   region 2      the registered input (rcclx_comm_input): a producer kernel
 *                 (a GEMM epilogue) writes its output here and the call reads
 *                 it with no copy; such a call ends with a barrier so no rank
 *                 rewrites the region while a peer still reads it.
 *
 * ---- Polled area of each rank (sigs[r]) -----------------------------------
 * What ranks read or write while a peer's kernel spins on it, so allocated
 * by rcclx_malloc_polled (rcclx/platform.h: uncached on AMD, where a peer
 * GPU's store to ordinary memory stays invisible to its owner's running
 * kernel), zero at creation (RCCLX_POLLED_BYTES):
 *   the signal area (rcclx_signal, RCCLX_SIGNAL_BYTES): barrier arrivals,
 *                 call cards, counters, the error record, tile flags;
 *   the LL area (RCCLX_LL_BYTES, rcclx/dda/ll.h): 2 buffers (LL call
 *                 parity) of RCCLX_LL_BUFFER_BYTES holding messages as
 *                 tagged words: this rank's own, which peers read (pull),
 *                 or each peer's, written by that peer (push).
 *
 * ---- Fixed grid --------------------------------------------------------
 * Every collective kernel of a communicator runs exactly `nblocks` blocks of
 * `nthreads` threads (but the LL one-shot, which runs as many of them, and
 * as many of their threads, as its message needs, and advances the state
 * of the others' block slots too: rcclx/dda/ll.h), and 16-byte vector v of
 * a message is handled by the same thread of the same block in every phase
 * of a call and on every rank (rcclx_grid_first_vector in rcclx/dda/flat.h:
 * warp-sized runs of vectors dealt to the blocks in turn, so small messages
 * reach every block).  So
 * within a call block b of one rank only shares memory with block b of its
 * peers, and a barrier between same-index blocks (rcclx/signal.h) orders
 * everything the call needs.  Across calls the kernel boundary does: a
 * rank reaches any barrier of call k+1 only after its call k completed, so
 * once a block passed a barrier of call k+1, every peer's call k is over
 * (call k+2 reuses call k's copy-in half).  (The low-precision kernels
 * deal groups to blocks differently; they rely on the same two rules.)
 * With virtual ranks the grids of all ranks on one GPU must be co-resident
 * and must leave room for the ranks' other kernels (a producer GEMM runs
 * while the other ranks' collectives spin), so there nblocks is at most one
 * block per multiprocessor, RCCLX_SHARED_GPU_FREE_SMS of them left free
 * (rcclx_comm_grid_ in comm_setup.h); one rank per GPU gets the occupancy
 * API's full grid.
 *
 * Driving several ranks from ONE host thread (virtual ranks, or one process
 * with several GPUs), two runtime settings matter, because a rank's kernel
 * spins until its peers' kernels run and those are launched later by the
 * same thread:
 *   - Kernels must be loaded before the first collective.  Lazy loading
 *     (CUDA_MODULE_LOADING=LAZY, CUDA's default since 12.2; HIP's deferred
 *     code-object loading) may make the first launch of a kernel wait for
 *     the context to go idle, which a spinning rank never lets happen: a
 *     deadlock.  Set CUDA_MODULE_LOADING=EAGER / HIP_ENABLE_DEFERRED_LOADING=0,
 *     or load every kernel you launch on a rank stream once beforehand
 *     (hipFuncGetAttributes loads it).  rcclx's DDA kernels are loaded at
 *     communicator creation, by the occupancy queries that size the grid;
 *     a low-precision kernel by the co-residency query its launcher makes
 *     before its first launch.
 *   - Each rank's stream needs a hardware queue of its own
 *     (CUDA_DEVICE_MAX_CONNECTIONS >= streams, HIP: GPU_MAX_HW_QUEUES), or
 *     two ranks can share one FIFO and a kernel waiting in it blocks the
 *     peer a barrier waits for.
 * One process per rank (IPC) is not exposed to either: a rank's stall never
 * holds another process's launches back.
 *
 * The host calls that build views are in rcclx/comm_setup.h (GPU builds).
 */
#pragma once

#include <rcclx/status.h>
#include <rcclx/types.h>
#include <stdlib.h>
#include <string.h>

#define RCCLX_MAX_RANKS 8
#define RCCLX_MAX_BLOCKS 128
/* Most threads per block of a communicator's kernels: the DDA kernels'
 * launch bounds, which leave the tree's 8-source reduce 128 registers on
 * sm_90 (at 1024 threads, 64, it spilled). */
#define RCCLX_MAX_THREADS 512
#define RCCLX_MAX_TILES 2048 /* tiles a fused kernel can publish per call */
/* The LL area (flag-in-data one-shot AllReduce, rcclx/dda/ll.h): 2 buffers
 * (LL call parity), each a header line of 128 bytes per block slot (a word
 * per source rank: the peers poll them), then a slot per source rank for a
 * message of at most RCCLX_LL_MAX_BYTES per launch as 8-byte words of 4
 * data bytes each.  Source q's words are written by q only: in q's own
 * area, where its peers poll them (pull), or in each peer's, where that
 * peer polls them (push, RCCLX_VIEW_LL_PUSH). */
#define RCCLX_LL_MAX_BYTES ((size_t)64 << 10)
#define RCCLX_LL_HEADER_STRIDE 128
#define RCCLX_LL_HEADER_BYTES ((size_t)RCCLX_MAX_BLOCKS * RCCLX_LL_HEADER_STRIDE)
#define RCCLX_LL_SLOT_BYTES (2 * RCCLX_LL_MAX_BYTES)
#define RCCLX_LL_BUFFER_BYTES (RCCLX_LL_HEADER_BYTES + RCCLX_MAX_RANKS * RCCLX_LL_SLOT_BYTES)
static_assert(8 * RCCLX_MAX_RANKS <= RCCLX_LL_HEADER_STRIDE, "a header line holds a word per source rank");
#define RCCLX_LL_BYTES (2 * RCCLX_LL_BUFFER_BYTES)

/* First error a kernel recorded (status 0 = none); read and cleared by
 * rcclx_comm_check. */
typedef struct rcclx_error_record {
  uint32_t status; /* an rcclx_status */
  int32_t rank, block, peer;
  uint32_t epoch;
  uint32_t pad[3];
} rcclx_error_record;

/* A rank's user pointers for one call (see rcclx_signal.call_card). */
typedef struct rcclx_call_card {
  const void* send;
  void* recv;
} rcclx_call_card;

/* Per block slot, each on a 128-byte line of its own: neighbouring slots
 * are blocks on different multiprocessors, and with the counters of all
 * slots packed into a few lines each block of a kernel waited its turn on
 * them (bench/RESULTS.md, run 14: about 36 ns per block). */
typedef struct __attribute__((aligned(128))) rcclx_slot_arrivals {
  /* from[src]: block b of rank src's latest arrival, one word so that a
   * barrier learns both halves in one load: the epoch it reached (low 32
   * bits) and that barrier's call fingerprint (high 32; 0 where it checks
   * none).  Written by src (release), read by the owner (acquire). */
  uint64_t from[RCCLX_MAX_RANKS];
} rcclx_slot_arrivals;
typedef struct __attribute__((aligned(128))) rcclx_slot_counters {
  uint32_t epoch;            /* barriers passed by this rank's block b */
  uint32_t calls;            /* DDA / low-precision calls run by block b */
  uint32_t ll_calls;         /* LL calls run by this rank (every call
                                advances every slot: rcclx/dda/ll.h) */
  uint32_t ll_cleaned[2];    /* ll_calls when each LL buffer was last
                                re-tagged (rcclx/dda/ll.h) */
} rcclx_slot_counters;

/* One per rank, in device memory, zeroed at creation and never reset. */
typedef struct rcclx_signal {
  rcclx_slot_arrivals arrive[RCCLX_MAX_BLOCKS];
  /* call_sig[b][src]: fingerprint of src's current call (count, dtype, op,
   * algorithm), written by src before its arrival; ranks that disagree are
   * reported as RCCLX_ERR_RANK_MISMATCH instead of computing garbage.  A
   * barrier reads it only when src already arrived at the next barrier
   * (from[src] then carries that one's fingerprint). */
  uint32_t call_sig[RCCLX_MAX_BLOCKS][RCCLX_MAX_RANKS][2]; /* by epoch parity */
  /* call_card[b][src]: the user pointers of src's current call, for calls
   * whose peers read and write the user's buffers directly
   * (RCCLX_VIEW_DIRECT); exchanged like call_sig. */
  rcclx_call_card call_card[RCCLX_MAX_BLOCKS][RCCLX_MAX_RANKS][2];
  rcclx_slot_counters slot[RCCLX_MAX_BLOCKS]; /* block b's own counters */
  rcclx_error_record error;
  /* Tile flags of fused kernels (rcclx/tile.h): tile_ready[t][src] is the
   * epoch at which src published tile t, tile_done[t][src] the epoch at
   * which src finished reading everyone's tile t; tile_epoch[t] counts this
   * rank's publications of tile t. */
  uint32_t tile_ready[RCCLX_MAX_TILES][RCCLX_MAX_RANKS];
  uint32_t tile_done[RCCLX_MAX_TILES][RCCLX_MAX_RANKS];
  uint32_t tile_epoch[RCCLX_MAX_TILES];
} rcclx_signal;

/* The signal area's bytes, rounded up to 4 KiB: the LL area follows it in
 * the polled allocation (rcclx_ll_buffer in rcclx/dda/ll.h). */
#define RCCLX_SIGNAL_BYTES ((sizeof(rcclx_signal) + 4095u) & ~(size_t)4095u)
/* A rank's polled allocation: signal area, then LL area. */
#define RCCLX_POLLED_BYTES (RCCLX_SIGNAL_BYTES + RCCLX_LL_BYTES)

/* rcclx_dev_comm.flags */
/* Every rank's memory and kernels are on this one GPU (virtual ranks, or
 * processes sharing it): device (agent) scope orders the barriers; without
 * it they use system scope, which GPUs reached over links need. */
#define RCCLX_VIEW_ONE_DEVICE 1u
/* The ranks are driven by one process and can address each other's
 * ordinary device memory (one GPU, or GPUs with peer access): a large
 * collective may read peers' send buffers and write its shard into their
 * receive buffers directly, with no staging copy (rcclx/dda/kernels.h). */
#define RCCLX_VIEW_DIRECT 2u
/* The DDA kernels let the stream's next kernel be scheduled as soon as they
 * start (rcclx_dda_launch_next_early in rcclx/signal.h), not after their
 * last wait on a peer: set with RCCLX_PDL_EARLY where programmatic
 * dependent launch is used (rcclx_comm_fill_view_; the grid is sized so
 * that two of every rank on the GPU fit at once).  Unlike the other flags it may differ
 * between ranks: it only moves when a rank's next kernel is scheduled. */
#define RCCLX_VIEW_LAUNCH_EARLY 4u
/* The LL one-shot pushes: a rank stores its tagged words into a slot of
 * every peer's LL area and polls only its own, so each poll stays on its
 * GPU and the link carries each word once (NCCL's LL, TensorRT-LLM's
 * Lamport, QuickReduce all push).  Without it a rank writes its words
 * once into its own area and the peers poll them there (pull), which
 * measured faster with every rank on one GPU, where no poll crosses a
 * link (bench/RESULTS.md, run 85).  rcclx_config.ll_push decides. */
#define RCCLX_VIEW_LL_PUSH 8u

typedef struct rcclx_dev_comm {
  int32_t rank, nranks;
  int32_t nblocks, nthreads; /* the fixed grid of every collective kernel */
  void* bufs[RCCLX_MAX_RANKS];          /* registered buffers (regions) */
  rcclx_signal* sigs[RCCLX_MAX_RANKS]; /* polled areas (signals, then LL) */
  size_t region_bytes;
  uint64_t watchdog_ns; /* 0: wait forever */
  uint32_t flags;       /* RCCLX_VIEW_*; the same on every rank */
} rcclx_dev_comm;

/* Byte offset of a region in every rank's buffer. */
#define RCCLX_REGION_COPY0 0
#define RCCLX_REGION_COPY1 1
#define RCCLX_REGION_INPUT 2
#define RCCLX_NUM_REGIONS 3

/* Byte offset of region `region` (RCCLX_REGION_*) in every rank's buffer:
 * the same on every rank, so bufs[peer] + it is that peer's region. */
RCCLX_HOST_DEVICE size_t rcclx_region_offset(const rcclx_dev_comm* v, int region) {
  return (size_t)region * v->region_bytes;
}
/* Rank r's registered input region, as this rank's device addresses it
 * (r == v->rank: where a producer kernel writes for a zero-copy call). */
RCCLX_HOST_DEVICE char* rcclx_input_region(const rcclx_dev_comm* v, int r) {
  return (char*)v->bufs[r] + rcclx_region_offset(v, RCCLX_REGION_INPUT);
}

/* Creation parameters; zero fields take defaults (and RCCLX_* environment
 * overrides, see rcclx_config_resolve). */
typedef struct rcclx_config {
  size_t region_bytes;  /* default 32 MiB (RCCLX_BUFFER_BYTES); 4 KiB multiple, < 64 GiB */
  int nthreads;         /* default 512; 64..RCCLX_MAX_THREADS, a multiple of 64 */
  int max_blocks;       /* default 64, at most RCCLX_MAX_BLOCKS (RCCLX_NBLOCKS) */
  uint64_t watchdog_ns; /* default 0 = off (RCCLX_WATCHDOG_MS) */
  /* Barrier scope: 0 = device scope when every rank is on one GPU, else
   * system; 1 = always system scope (RCCLX_SYSTEM_SCOPE=1). */
  int system_scope;
  /* Direct user-buffer access for one-process communicators
   * (RCCLX_VIEW_DIRECT; RCCLX_DIRECT): RCCLX_DIRECT_AUTO (0) turns it on
   * when every rank is on one GPU; RCCLX_DIRECT_OFF always stages;
   * RCCLX_DIRECT_ON also across GPUs, which requires every send and recv
   * buffer to be reachable from every peer GPU (hipMalloc memory with peer
   * access; not a stream-ordered pool without access granted).  One process
   * per rank (IPC) never uses it. */
  int direct;
  /* Programmatic dependent launch of the DDA kernels (rcclx_launch in
   * rcclx/platform.h; RCCLX_PDL), where the device has it (NVIDIA sm_90+):
   * a call's kernel is scheduled while the stream's previous one runs, and
   * waits for it on the GPU before touching memory.
   *   RCCLX_PDL_AUTO (0): a DDA kernel lets the next one be scheduled
   *     after its last wait on a peer.
   *   RCCLX_PDL_OFF (1): plain launches.
   *   RCCLX_PDL_EARLY (2): as soon as it starts (RCCLX_VIEW_LAUNCH_EARLY),
   *     so the next call's launch is off the critical path.  Opt-in, for
   *     latency-bound use: the next collective's blocks then wait resident
   *     for the whole call, holding multiprocessors that kernels on other
   *     streams (compute overlapped with the collective) could use; with
   *     several ranks on one GPU (virtual ranks) the fixed grid is also
   *     halved (rcclx_comm_grid_), so that two grids per rank fit, which
   *     costs large messages bandwidth (bench/RESULTS.md, runs 20-21). */
  int pdl;
  /* LL one-shot (rcclx/dda/ll.h) by push or pull (RCCLX_VIEW_LL_PUSH;
   * RCCLX_LL_PUSH): RCCLX_LL_PUSH_AUTO (0) pushes when the ranks are on
   * several GPUs and pulls when they all share one; RCCLX_LL_PUSH_OFF (1)
   * always pulls; RCCLX_LL_PUSH_ON (2) always pushes.  Every rank must
   * pass the same (one-process-per-rank init checks it). */
  int ll_push;
} rcclx_config;
#define RCCLX_DIRECT_AUTO 0
#define RCCLX_DIRECT_OFF 1
#define RCCLX_DIRECT_ON 2
#define RCCLX_PDL_AUTO 0
#define RCCLX_PDL_OFF 1
#define RCCLX_PDL_EARLY 2
#define RCCLX_LL_PUSH_AUTO 0
#define RCCLX_LL_PUSH_OFF 1
#define RCCLX_LL_PUSH_ON 2

typedef enum : int { RCCLX_COMM_LOCAL = 1, RCCLX_COMM_IPC = 2 } rcclx_comm_kind;

/* A GPU's place on the PCI bus: how one process per rank (IPC) finds the
 * ranks that share its GPU, which decides the grid (co-residency) and
 * whether device-scope ordering is enough.  All three parts count: GPUs in
 * different PCI domains can have the same bus and device numbers. */
typedef struct rcclx_pci_location {
  int32_t domain, bus, device;
} rcclx_pci_location;

/* How many of the locations all[0..nranks) are `mine` (its own included
 * when listed). */
RCCLX_HOST int rcclx_ranks_on_gpu(const rcclx_pci_location* all, int nranks, const rcclx_pci_location* mine) {
  int n = 0;
  for (int q = 0; q < nranks; ++q)
    n += all[q].domain == mine->domain && all[q].bus == mine->bus && all[q].device == mine->device;
  return n;
}

/* The low-precision switches (rcclx/fp8/lowp_plan.h) as the environment
 * held them when the communicator was created, read once then (as RCCLX
 * reads its parameters), never on a call: a call neither pays for the
 * lookups nor races with a thread that changes the environment. */
typedef struct rcclx_lowp_switches {
  uint32_t on;      /* bit c: collective c (rcclx_collective) goes over FP8 */
  size_t min_bytes; /* ... from this many bytes per rank */
  int format;       /* the FP8 wire's format and block size */
  int block_size;
} rcclx_lowp_switches;

/* Host handle of one rank.  Zero-initialise before init; destroy is safe on
 * a zeroed or half-built handle. */
typedef struct rcclx_comm {
  rcclx_dev_comm view;
  int device;
  int kind;           /* rcclx_comm_kind, 0 if not built */
  int ranks_on_device; /* ranks sharing this GPU (virtual ranks) */
  void* alloc;        /* this rank's registered buffer */
  void* polled;       /* this rank's polled area (rcclx_malloc_polled) */
  void* ipc_mapped[RCCLX_MAX_RANKS];        /* peers' buffers opened by IPC */
  void* ipc_polled_mapped[RCCLX_MAX_RANKS]; /* peers' polled areas opened by IPC */
  size_t flat_max_bytes;  /* auto: flat at or below this, tree above */
  size_t ll_max_bytes;      /* auto: LL at or below this (0: never) */
  size_t direct_min_bytes;  /* RCCLX_VIEW_DIRECT views: DIRECT from this size up */
  int pdl;                  /* launch the DDA kernels with programmatic dependent launch */
  rcclx_lowp_switches lowp; /* read at creation (rcclx_lowp_switches_from_env) */
  size_t lowp_flat_max_bytes; /* low-precision AllReduce: flat at or below this, tree above */
} rcclx_comm;

RCCLX_HOST size_t rcclx_env_size(const char* name, size_t fallback) {
  const char* s = getenv(name);
  if (!s || !*s) return fallback;
  char* end = NULL;
  unsigned long long v = strtoull(s, &end, 10);
  return (end && *end == '\0') ? (size_t)v : fallback;
}

/* 32-bit fingerprint (FNV-1a over 64-bit parts) of a call's shape, never 0
 * (no fingerprint) nor all-ones; ranks compare fingerprints in-kernel
 * (rcclx/signal.h, rcclx/dda/ll.h). */
RCCLX_HOST uint32_t rcclx_fingerprint(const uint64_t* parts, int n) {
  uint64_t h = 14695981039346656037ull;
  for (int i = 0; i < n; ++i) h = (h ^ parts[i]) * 1099511628211ull;
  const uint32_t s = (uint32_t)(h ^ (h >> 32));
  return s == 0u ? 1u : s == 0xFFFFFFFFu ? 2u : s;
}

/* Defaults and environment applied; returns an error for values out of range. */
RCCLX_HOST rcclx_status rcclx_config_resolve(const rcclx_config* in, rcclx_config* out) {
  rcclx_config c;
  memset(&c, 0, sizeof c);
  if (in) c = *in;
  if (!c.region_bytes) c.region_bytes = rcclx_env_size("RCCLX_BUFFER_BYTES", (size_t)32 << 20);
  if (!c.nthreads) c.nthreads = 512;
  if (!c.max_blocks) c.max_blocks = (int)rcclx_env_size("RCCLX_NBLOCKS", 64);
  if (!c.watchdog_ns) c.watchdog_ns = (uint64_t)rcclx_env_size("RCCLX_WATCHDOG_MS", 0) * 1000000ull;
  if (!c.system_scope) c.system_scope = (int)rcclx_env_size("RCCLX_SYSTEM_SCOPE", 0);
  if (!c.direct) c.direct = (int)rcclx_env_size("RCCLX_DIRECT", RCCLX_DIRECT_AUTO);
  if (!c.pdl) c.pdl = (int)rcclx_env_size("RCCLX_PDL", RCCLX_PDL_AUTO);
  if (!c.ll_push) c.ll_push = (int)rcclx_env_size("RCCLX_LL_PUSH", RCCLX_LL_PUSH_AUTO);
  if (c.system_scope < 0 || c.system_scope > 1) return RCCLX_ERR_INVALID_ARGUMENT;
  if (c.direct < RCCLX_DIRECT_AUTO || c.direct > RCCLX_DIRECT_ON) return RCCLX_ERR_INVALID_ARGUMENT;
  if (c.pdl < RCCLX_PDL_AUTO || c.pdl > RCCLX_PDL_EARLY) return RCCLX_ERR_INVALID_ARGUMENT;
  if (c.ll_push < RCCLX_LL_PUSH_AUTO || c.ll_push > RCCLX_LL_PUSH_ON) return RCCLX_ERR_INVALID_ARGUMENT;
  if (c.region_bytes < 4096 || (c.region_bytes & 4095u) || c.region_bytes >= ((size_t)1 << 36))
    return RCCLX_ERR_INVALID_ARGUMENT;
  if (c.nthreads < 64 || c.nthreads > RCCLX_MAX_THREADS || (c.nthreads & 63)) return RCCLX_ERR_INVALID_ARGUMENT;
  if (c.max_blocks < 1 || c.max_blocks > RCCLX_MAX_BLOCKS) return RCCLX_ERR_INVALID_ARGUMENT;
  *out = c;
  return RCCLX_SUCCESS;
}

/* RCCLX_VIEW_LL_PUSH or 0 for a resolved config, given whether every rank
 * is on one GPU (which all ranks answer alike). */
RCCLX_HOST uint32_t rcclx_config_ll_push_flag(const rcclx_config* cfg, int one_device) {
  const int push = cfg->ll_push == RCCLX_LL_PUSH_ON || (cfg->ll_push == RCCLX_LL_PUSH_AUTO && !one_device);
  return push ? RCCLX_VIEW_LL_PUSH : 0u;
}

/* Whether [p, p + bytes) overlaps this rank's registered buffer (its
 * copy-in halves and input region) or its polled area (signals and LL
 * buffers), which peers read or write during a call. */
RCCLX_HOST_DEVICE int rcclx_overlaps_registered(const rcclx_dev_comm* v, const void* p, size_t bytes) {
  return rcclx_ranges_overlap(p, bytes, v->bufs[v->rank], RCCLX_NUM_REGIONS * v->region_bytes) ||
         rcclx_ranges_overlap(p, bytes, v->sigs[v->rank], RCCLX_POLLED_BYTES);
}

/* The registered input region of this rank: a producer writes a message of
 * at most region_bytes here and passes this pointer as `send` to make the
 * call zero-copy. */
RCCLX_HOST void* rcclx_comm_input(const rcclx_comm* comm) {
  return comm && comm->view.bufs[comm->view.rank]
             ? rcclx_input_region(&comm->view, comm->view.rank)
             : NULL;
}
