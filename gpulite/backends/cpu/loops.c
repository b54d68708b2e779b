/* The CPU backend's compiled loops (see jit.py): depthwise taps, conv epilogue, im2col.
 *
 * Built on first use by the system C compiler with -ffp-contract=off, so every element
 * gets the float operations written here, in this order, and no fused multiply-adds.
 * Bounds are checked in Python (jit.check_*) before a call is bound; nothing here checks.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

/* out[r*out_stride + m] = bt[m % P] + sum_t src[r*row_stride + offs[t] + m] * wt[t, m % P]
 * for m < length, nine taps per pass over a segment of P elements (ntap is a multiple of 9). */
#define DEPTHWISE(NAME, T)                                                                  \
void NAME(const T *src, const int64_t *offs, int64_t ntap, int64_t row_stride,            \
          const T *restrict wt, const T *restrict bt, T *out, int64_t rows, int64_t length,   \
          int64_t period, int64_t out_stride) {                                             \
    for (int64_t r = 0; r < rows; r++) {                                                    \
        T *o = out + r * out_stride;                                                        \
        const T *base = src + r * row_stride;                                               \
        for (int64_t s = 0; s < length; s += period) {                                      \
            T *restrict seg = o + s;                                                        \
            for (int64_t g = 0; g < ntap; g += 9) {                                         \
                const T *restrict a0 = base + offs[g] + s;                                  \
                const T *restrict a1 = base + offs[g + 1] + s;                              \
                const T *restrict a2 = base + offs[g + 2] + s;                              \
                const T *restrict a3 = base + offs[g + 3] + s;                              \
                const T *restrict a4 = base + offs[g + 4] + s;                              \
                const T *restrict a5 = base + offs[g + 5] + s;                              \
                const T *restrict a6 = base + offs[g + 6] + s;                              \
                const T *restrict a7 = base + offs[g + 7] + s;                              \
                const T *restrict a8 = base + offs[g + 8] + s;                              \
                const T *w = wt + g * period;                                               \
                const T *restrict w0 = w, *restrict w1 = w + period;                        \
                const T *restrict w2 = w + 2 * period, *restrict w3 = w + 3 * period;       \
                const T *restrict w4 = w + 4 * period, *restrict w5 = w + 5 * period;       \
                const T *restrict w6 = w + 6 * period, *restrict w7 = w + 7 * period;       \
                const T *restrict w8 = w + 8 * period;                                      \
                if (g == 0) {                                                               \
                    for (int64_t m = 0; m < period; m++)                                    \
                        seg[m] = bt[m] + a0[m] * w0[m] + a1[m] * w1[m] + a2[m] * w2[m]      \
                                 + a3[m] * w3[m] + a4[m] * w4[m] + a5[m] * w5[m]            \
                                 + a6[m] * w6[m] + a7[m] * w7[m] + a8[m] * w8[m];           \
                } else {                                                                    \
                    for (int64_t m = 0; m < period; m++)                                    \
                        seg[m] += a0[m] * w0[m] + a1[m] * w1[m] + a2[m] * w2[m]             \
                                  + a3[m] * w3[m] + a4[m] * w4[m] + a5[m] * w5[m]           \
                                  + a6[m] * w6[m] + a7[m] * w7[m] + a8[m] * w8[m];          \
                }                                                                           \
            }                                                                               \
        }                                                                                   \
    }                                                                                       \
}

DEPTHWISE(depthwise_rows_f32, float)
DEPTHWISE(depthwise_rows_f64, double)

/* Depthwise taps through an indirection table: for each of `npix` output pixels and each
 * of its `ntap` taps (a multiple of 9), ind holds the address of the C input values the tap
 * reads (a zero vector where it falls in the padding), so no padded or phase-split copy of
 * the input is made, whatever the stride. out[p, m] = bt[m] + sum_t ind[p, t][m] * wt[t, m],
 * summed nine taps at a time in the order of DEPTHWISE above; pixel p is written at outs[p]
 * (an address) when outs is given, else at out + p*c. */
void depthwise_ind_f32(const int64_t *ind, int64_t ntap, const float *restrict wt, const float *restrict bt,
                       float *out, const int64_t *outs, int64_t npix, int64_t c) {
    for (int64_t p = 0; p < npix; p++) {
        const int64_t *ip = ind + p * ntap;
        float *restrict seg = outs ? (float *)(intptr_t)outs[p] : out + p * c;
        for (int64_t g = 0; g < ntap; g += 9) {
            const float *restrict a0 = (const float *)(intptr_t)ip[g];
            const float *restrict a1 = (const float *)(intptr_t)ip[g + 1];
            const float *restrict a2 = (const float *)(intptr_t)ip[g + 2];
            const float *restrict a3 = (const float *)(intptr_t)ip[g + 3];
            const float *restrict a4 = (const float *)(intptr_t)ip[g + 4];
            const float *restrict a5 = (const float *)(intptr_t)ip[g + 5];
            const float *restrict a6 = (const float *)(intptr_t)ip[g + 6];
            const float *restrict a7 = (const float *)(intptr_t)ip[g + 7];
            const float *restrict a8 = (const float *)(intptr_t)ip[g + 8];
            const float *w = wt + g * c;
            const float *restrict w0 = w, *restrict w1 = w + c, *restrict w2 = w + 2 * c;
            const float *restrict w3 = w + 3 * c, *restrict w4 = w + 4 * c, *restrict w5 = w + 5 * c;
            const float *restrict w6 = w + 6 * c, *restrict w7 = w + 7 * c, *restrict w8 = w + 8 * c;
            if (g == 0) {
                for (int64_t m = 0; m < c; m++)
                    seg[m] = bt[m] + a0[m] * w0[m] + a1[m] * w1[m] + a2[m] * w2[m] + a3[m] * w3[m]
                             + a4[m] * w4[m] + a5[m] * w5[m] + a6[m] * w6[m] + a7[m] * w7[m] + a8[m] * w8[m];
            } else {
                for (int64_t m = 0; m < c; m++)
                    seg[m] += a0[m] * w0[m] + a1[m] * w1[m] + a2[m] * w2[m] + a3[m] * w3[m]
                              + a4[m] * w4[m] + a5[m] * w5[m] + a6[m] * w6[m] + a7[m] * w7[m] + a8[m] * w8[m];
            }
        }
    }
}

/* Max pooling through an indirection table (see depthwise_ind_f32; padding taps point at a
 * vector of the lowest float): out[p, m] = max_t ind[p, t][m], NaN propagating as np.maximum. */
void maxpool_ind_f32(const int64_t *ind, int64_t ntap, float *out, int64_t npix, int64_t c) {
    for (int64_t p = 0; p < npix; p++) {
        const int64_t *ip = ind + p * ntap;
        float *restrict o = out + p * c;
        memcpy(o, (const float *)(intptr_t)ip[0], (size_t)c * sizeof(float));
        for (int64_t t = 1; t < ntap; t++) {
            const float *restrict a = (const float *)(intptr_t)ip[t];
            for (int64_t m = 0; m < c; m++) {
                float x = o[m], y = a[m];
                o[m] = (x >= y || x != x) ? x : y;
            }
        }
    }
}

/* Patches of output rows r0.. of one padded (H, W, C) image into the first KH*KW*C
 * columns of dst (one row of `k` elements per output pixel, `ow` pixels per row). */
#define IM2COL(NAME, T)                                                                     \
void NAME(const T *src, int64_t wp, int64_t c, T *dst, int64_t k, int64_t rows, int64_t r0, \
          int64_t ow, int64_t sh, int64_t sw, int64_t dh, int64_t dw, int64_t kh, int64_t kw) { \
    for (int64_t yy = 0; yy < rows; yy++)                                                   \
        for (int64_t i = 0; i < kh; i++) {                                                  \
            const T *row = src + ((r0 + yy) * sh + i * dh) * wp * c;                        \
            for (int64_t x = 0; x < ow; x++) {                                              \
                T *d = dst + (yy * ow + x) * k + i * kw * c;                                \
                if (dw == 1 && kw * c <= 16) { /* short runs: a loop, not a libc call */   \
                    const T *s = row + x * sw * c;                                          \
                    for (int64_t e = 0; e < kw * c; e++) d[e] = s[e];                       \
                } else if (dw == 1) {                                                       \
                    memcpy(d, row + x * sw * c, (size_t)(kw * c) * sizeof(T));              \
                } else {                                                                    \
                    for (int64_t j = 0; j < kw; j++)                                        \
                        memcpy(d + j * c, row + (x * sw + j * dw) * c, (size_t)c * sizeof(T)); \
                }                                                                           \
            }                                                                               \
        }                                                                                   \
}

IM2COL(im2col_rows_f32, float)
IM2COL(im2col_rows_f64, double)

/* Epilogue steps over n float32 values, block by block of `period` elements (whole
 * pixels of c channels): 0 bias vecs[s], 1 clamp [lo, hi], 2 add res (rc channels per
 * pixel, added to the first rc), 3 max(x, a*x), 4 min(x, a*x), 5 min(x, 0)*a + max(x, 0),
 * 6 hard swish x * clamp(x + lo, 0, hi) / hi. Clamps keep NaN, as np.clip does. */
void epilogue_steps(float *o, const float *res, int64_t n, const int64_t *codes, int64_t nsteps,
                    const float *vecs, const float *lo, const float *hi, int64_t period, int64_t c, int64_t rc) {
    for (int64_t b = 0; b < n; b += period) {
        int64_t len = n - b < period ? n - b : period;
        float *restrict seg = o + b;
        const float *restrict r = res + b / c * rc;
        for (int64_t s = 0; s < nsteps; s++) {
            const float *restrict v = vecs + s * period;
            const float a = lo[s], z = hi[s];
            switch (codes[s]) {
            case 0:
                for (int64_t m = 0; m < len; m++) seg[m] += v[m];
                break;
            case 1:
                for (int64_t m = 0; m < len; m++) {
                    float x = seg[m];
                    seg[m] = x < a ? a : (x > z ? z : x);
                }
                break;
            case 2:
                if (rc == c) {
                    for (int64_t m = 0; m < len; m++) seg[m] += r[m];
                } else {
                    for (int64_t p = 0; p < len / c; p++)
                        for (int64_t m = 0; m < rc; m++) seg[p * c + m] += r[p * rc + m];
                }
                break;
            case 3:
                for (int64_t m = 0; m < len; m++) {
                    float x = seg[m], y = x * v[m];
                    seg[m] = x >= y ? x : y;
                }
                break;
            case 4:
                for (int64_t m = 0; m < len; m++) {
                    float x = seg[m], y = x * v[m];
                    seg[m] = x <= y ? x : y;
                }
                break;
            case 5:
                for (int64_t m = 0; m < len; m++) {
                    float x = seg[m];
                    float neg = x < 0.0f ? x : 0.0f, pos = x > 0.0f ? x : 0.0f;
                    seg[m] = neg * v[m] + pos;
                }
                break;
            default:
                for (int64_t m = 0; m < len; m++) {
                    float x = seg[m], t = x + a;
                    t = t < 0.0f ? 0.0f : (t > z ? z : t);
                    seg[m] = (t * x) / z;
                }
                break;
            }
        }
    }
}

/* ---- Programs: stages of chunks, each chunk a list of tasks, run over a thread pool ----
 *
 * A task is a function taking one int64 array of arguments (pointers and integers), so
 * that Python binds a whole kernel once (jit.Program) and an invoke makes one call per
 * kernel. A program is int64s:
 *   [nstages, stage offsets...]; a stage: [nchunks, nvariants, list offsets (chunk-major)];
 *   a list: [ntasks, (function, argument array) pairs].
 * Chunk k of a stage runs list (k, t) on thread t (t < nvariants: each variant has its own
 * scratch); stages run one after the other. Thread t owns the t-th contiguous range of a
 * stage's chunks (so consecutive kernels split alike keep their rows on one core's cache)
 * and, done with it, takes what is left of the others' ranges. The caller runs chunks too,
 * so a worker that wakes late only takes fewer chunks and correctness never depends on the
 * workers. Each range's next chunk is claimed by compare-and-swap of (generation, index),
 * so a worker still looking at an earlier stage claims nothing of a later one. Workers spin
 * for a bounded time after a stage (the next one usually follows within microseconds),
 * then sleep on a condition variable: an idle process takes no CPU from others. One
 * program runs on the pool at a time; a caller finding it busy runs its stage alone
 * (variant 0). */
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>
#include <sched.h>

typedef void (*task_fn)(const int64_t *);
#define MAX_WORKERS 63

static pthread_mutex_t pool_mu = PTHREAD_MUTEX_INITIALIZER, pool_busy = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t pool_cv = PTHREAD_COND_INITIALIZER;
static _Atomic int64_t pool_gen;                   /* the current stage's generation */
static _Atomic int64_t next_chunk[MAX_WORKERS + 1]; /* per range: generation << 32 | next chunk */
static _Atomic int64_t range_end[MAX_WORKERS + 1];
static _Atomic int64_t finished;                   /* chunks of the current stage done */
static const int64_t *job_prog, *job_stage;
static int64_t job_variants;
static int pool_workers, pool_forked_hook;
static int64_t spin_ns = 200000;

static void run_list(const int64_t *prog, int64_t off) {
    const int64_t *l = prog + off;
    for (int64_t i = 0; i < l[0]; i++)
        ((task_fn)(intptr_t)l[1 + 2 * i])((const int64_t *)(intptr_t)l[2 + 2 * i]);
}

static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/* Chunk index claimed from range r of generation gen, or -1 when it has none left. The range
 * end is read after the counter shows this generation, which was stored after the end. */
static int64_t claim(int64_t gen, int64_t r) {
    int64_t c = atomic_load(&next_chunk[r]);
    while ((c >> 32) == gen && (c & 0xFFFFFFFF) < atomic_load_explicit(&range_end[r], memory_order_relaxed))
        if (atomic_compare_exchange_weak(&next_chunk[r], &c, c + 1)) return c & 0xFFFFFFFF;
    return -1;
}

/* Run chunks of generation `gen` as thread `id`: its own range, then the others'. */
static void take_chunks(int64_t gen, int64_t id) {
    if ((atomic_load(&next_chunk[0]) >> 32) != gen) return;
    int64_t v = job_variants;  /* this stage's: stored before its counters */
    if (id >= v) return;
    for (int64_t i = 0; i < v; i++) {
        int64_t r = (id + i) % v, k;
        while ((k = claim(gen, r)) >= 0) {
            run_list(job_prog, job_stage[2 + k * job_variants + id]);
            atomic_fetch_add(&finished, 1);
        }
    }
}

static void *pool_worker(void *arg) {
    int64_t id = (int64_t)(intptr_t)arg, seen = atomic_load(&pool_gen);
    for (;;) {
        int64_t start = now_ns();
        for (int64_t s = 0; atomic_load(&pool_gen) == seen; s++) {
            cpu_relax();
            if ((s & 255) == 255 && now_ns() - start > spin_ns) {
                pthread_mutex_lock(&pool_mu);
                while (atomic_load(&pool_gen) == seen) pthread_cond_wait(&pool_cv, &pool_mu);
                pthread_mutex_unlock(&pool_mu);
            }
        }
        seen = atomic_load(&pool_gen);
        take_chunks(seen, id);
    }
    return NULL;
}

static void pool_after_fork(void) {  /* the child has none of the parent's threads */
    pthread_mutex_init(&pool_mu, NULL);
    pthread_mutex_init(&pool_busy, NULL);
    pthread_cond_init(&pool_cv, NULL);
    pool_workers = 0;
}

static void run_stage(const int64_t *prog, const int64_t *stage) {
    int64_t n = stage[0], v = stage[1];
    if (v > 1 && n > 1 && v <= MAX_WORKERS + 1 && pthread_mutex_trylock(&pool_busy) == 0) {
        if (!pool_forked_hook) {
            pthread_atfork(NULL, NULL, pool_after_fork);
            pool_forked_hook = 1;
        }
        while (pool_workers < v - 1 && pool_workers < MAX_WORKERS) {
            pthread_t th;
            if (pthread_create(&th, NULL, pool_worker, (void *)(intptr_t)(pool_workers + 1)) != 0) break;
            pthread_detach(th);
            pool_workers++;
        }
        int64_t gen = atomic_load(&pool_gen) + 1;
        job_prog = prog;
        job_stage = stage;
        job_variants = v;
        atomic_store(&finished, 0);
        for (int64_t r = 0; r < v; r++) {  /* the end first: claim() reads it after the counter */
            atomic_store_explicit(&range_end[r], n * (r + 1) / v, memory_order_relaxed);
            atomic_store(&next_chunk[r], gen << 32 | (n * r / v));
        }
        pthread_mutex_lock(&pool_mu);
        atomic_store(&pool_gen, gen);
        pthread_cond_broadcast(&pool_cv);
        pthread_mutex_unlock(&pool_mu);
        take_chunks(gen, 0);
        for (int64_t s = 0; atomic_load(&finished) < n; s++) {
            cpu_relax();
            if ((s & 1023) == 1023) sched_yield();
        }
        pthread_mutex_unlock(&pool_busy);
        return;
    }
    for (int64_t k = 0; k < n; k++) run_list(prog, stage[2 + k * v]);
}

void run_program(const int64_t *prog) {
    for (int64_t s = 0; s < prog[0]; s++) run_stage(prog, prog + prog[1 + s]);
}

void set_spin_ns(int64_t ns) { spin_ns = ns; }

/* ---- Tasks: the loops above, and a GEMM, with their arguments in one int64 array ---- */
#define P(i, T) ((T *)(intptr_t)a[i])

void task_depthwise_f32(const int64_t *a) {
    depthwise_rows_f32(P(0, const float), P(1, const int64_t), a[2], a[3], P(4, const float),
                       P(5, const float), P(6, float), a[7], a[8], a[9], a[10]);
}

void task_depthwise_f64(const int64_t *a) {
    depthwise_rows_f64(P(0, const double), P(1, const int64_t), a[2], a[3], P(4, const double),
                       P(5, const double), P(6, double), a[7], a[8], a[9], a[10]);
}

void task_im2col_f32(const int64_t *a) {
    im2col_rows_f32(P(0, const float), a[1], a[2], P(3, float), a[4], a[5], a[6], a[7], a[8], a[9], a[10],
                    a[11], a[12], a[13]);
}

void task_im2col_f64(const int64_t *a) {
    im2col_rows_f64(P(0, const double), a[1], a[2], P(3, double), a[4], a[5], a[6], a[7], a[8], a[9], a[10],
                    a[11], a[12], a[13]);
}

void task_epilogue(const int64_t *a) {
    epilogue_steps(P(0, float), P(1, const float), a[2], P(3, const int64_t), a[4], P(5, const float),
                   P(6, const float), P(7, const float), a[8], a[9], a[10]);
}

/* dst[i, j, k, :inner] = src[i, j, k, :inner] for a d0 x d1 x d2 grid of contiguous runs,
 * strides in elements: dst a[6..8], src a[9..11]. */
void task_copy_f32(const int64_t *a) {
    float *dst = P(0, float);
    const float *src = P(1, const float);
    for (int64_t i = 0; i < a[2]; i++)
        for (int64_t j = 0; j < a[3]; j++)
            for (int64_t k = 0; k < a[4]; k++)
                memcpy(dst + i * a[6] + j * a[7] + k * a[8], src + i * a[9] + j * a[10] + k * a[11],
                       (size_t)a[5] * sizeof(float));
}

/* dst[i, j, k, :inner] = the float whose bits are a[8], over a d0 x d1 x d2 grid of runs
 * (strides in elements a[5..7]). */
void task_fill_f32(const int64_t *a) {
    float *dst = P(0, float), value;
    uint32_t bits = (uint32_t)a[8];
    memcpy(&value, &bits, sizeof value);
    for (int64_t i = 0; i < a[1]; i++)
        for (int64_t j = 0; j < a[2]; j++)
            for (int64_t k = 0; k < a[3]; k++) {
                float *d = dst + i * a[5] + j * a[6] + k * a[7];
                for (int64_t m = 0; m < a[4]; m++) d[m] = value;
            }
}

/* C (M x N, row stride ldc) = A (M x K, lda) @ B (K x N, ldb; or N x K read transposed when
 * a[2]) through the CBLAS sgemm at a[0], whose integers are 64-bit when a[1]. */
typedef void (*sgemm64_t)(int, int, int, int64_t, int64_t, int64_t, float, const float *, int64_t,
                          const float *, int64_t, float, float *, int64_t);
typedef void (*sgemm32_t)(int, int, int, int, int, int, float, const float *, int, const float *, int,
                          float, float *, int);
void task_gemm_f32(const int64_t *a) {
    int tb = a[2] ? 112 : 111;  /* CblasTrans : CblasNoTrans; row-major is 101 */
    if (a[1])
        ((sgemm64_t)(intptr_t)a[0])(101, 111, tb, a[3], a[4], a[5], 1.0f, P(6, const float), a[7],
                                    P(8, const float), a[9], 0.0f, P(10, float), a[11]);
    else
        ((sgemm32_t)(intptr_t)a[0])(101, 111, tb, (int)a[3], (int)a[4], (int)a[5], 1.0f, P(6, const float),
                                    (int)a[7], P(8, const float), (int)a[9], 0.0f, P(10, float), (int)a[11]);
}

/* Bilinear 2x upsampling with half-pixel centres (resize.py's _upsample2x, the same float32
 * operations, XNNPACK's: lo + (hi - lo) * alpha): output 0 blends inputs 0, 1 with weight 0,
 * output 2k (k >= 1) inputs k-1, k with 3/4, output 2k+1 inputs k, k+1 with 1/4, and the last
 * output the last input with itself (1/4).
 * Columns: a[2] rows of a[3] (> 1) pixels of a[4] floats, from a[0] into a[1] (2*a[3] pixels per row). */
void task_up2_cols(const int64_t *a) {
    const float *src = P(0, const float);
    float *dst = P(1, float);
    int64_t rows = a[2], w = a[3], c = a[4];
    for (int64_t r = 0; r < rows; r++) {
        const float *x = src + r * w * c;
        float *d = dst + r * 2 * w * c;
        for (int64_t m = 0; m < c; m++) d[m] = x[m] + (x[c + m] - x[m]) * 0.0f;
        for (int64_t k = 1; k < w; k++)
            for (int64_t m = 0; m < c; m++) {
                const float lo = x[(k - 1) * c + m];
                d[2 * k * c + m] = lo + (x[k * c + m] - lo) * 0.75f;
            }
        for (int64_t k = 0; k < w - 1; k++)
            for (int64_t m = 0; m < c; m++) {
                const float lo = x[k * c + m];
                d[(2 * k + 1) * c + m] = lo + (x[(k + 1) * c + m] - lo) * 0.25f;
            }
        for (int64_t m = 0; m < c; m++) {
            const float lo = x[(w - 1) * c + m];
            d[(2 * w - 1) * c + m] = lo + (lo - lo) * 0.25f;
        }
    }
}

/* Rows: output rows 2k and 2k+1, k in [a[4], a[5]), of an image of a[2] (> 1) input rows of a[3]
 * floats each, from a[0] into a[1]. */
void task_up2_rows(const int64_t *a) {
    const float *src = P(0, const float);
    float *dst = P(1, float);
    int64_t h = a[2], len = a[3];
    for (int64_t k = a[4]; k < a[5]; k++) {
        const float *x = src + k * len;
        float *ev = dst + 2 * k * len, *od = ev + len;
        if (k == 0) {
            for (int64_t m = 0; m < len; m++) ev[m] = x[m] + (x[len + m] - x[m]) * 0.0f;
        } else {
            const float *up = x - len;
            for (int64_t m = 0; m < len; m++) ev[m] = up[m] + (x[m] - up[m]) * 0.75f;
        }
        const float *down = k + 1 < h ? x + len : x;
        for (int64_t m = 0; m < len; m++) od[m] = x[m] + (down[m] - x[m]) * 0.25f;
    }
}

void task_depthwise_ind_f32(const int64_t *a) {
    depthwise_ind_f32(P(0, const int64_t), a[1], P(2, const float), P(3, const float), P(4, float),
                      P(5, const int64_t), a[6], a[7]);
}

void task_maxpool_ind_f32(const int64_t *a) { maxpool_ind_f32(P(0, const int64_t), a[1], P(2, float), a[3], a[4]); }

/* MediaPipe's TransformTensorBilinear v2 (mediapipe_ops.transform_tensor_bilinear, the numpy
 * reference): out (oh, ow, c) samples src (h, w, c) at m[0:4] . (x, y, 0, 1) and
 * m[4:8] . (x, y, 0, 1) after the half-pixel correction, computed in double and stored to
 * float; float32 dot products in MediaPipe's order. Outside [0, w-1] x [0, h-1]: weights 0
 * and corners 0; a non-finite coordinate inside: corners 0, weights as computed (NaN out);
 * corners past the last row or column read 0 (from `zero`, c zeros, so the channel loop has no
 * branch). a: src, m (16 floats), out, h, w, c, oh, ow, zero. */
void task_bilinear_f32(const int64_t *a) {
    const float *src = P(0, const float), *m = P(1, const float), *zero = P(8, const float);
    float *out = P(2, float);
    const int64_t h = a[3], w = a[4], c = a[5], oh = a[6], ow = a[7];
    const float ox = (float)((double)m[3] + ((double)m[0] * 0.5 + (double)m[1] * 0.5 - 0.5));
    const float oy = (float)((double)m[7] + ((double)m[4] * 0.5 + (double)m[5] * 0.5 - 0.5));
    const float zx = m[2] * 0.0f, zy = m[6] * 0.0f;
    const float wmax = (float)(w - 1), hmax = (float)(h - 1);
    for (int64_t y = 0; y < oh; y++) {
        for (int64_t x = 0; x < ow; x++) {
            const float fxp = (float)x, fyp = (float)y;
            float tx = fxp * m[0], ty = fxp * m[4], t;
            t = fyp * m[1]; tx = tx + t; tx = tx + zx; tx = tx + ox;
            t = fyp * m[5]; ty = ty + t; ty = ty + zy; ty = ty + oy;
            const int outside = tx < 0.0f || tx > wmax || ty < 0.0f || ty > hmax;
            float fx = floorf(tx), fy = floorf(ty);
            float right = tx - fx, lower = ty - fy;
            const int bad = outside || !isfinite(fx) || !isfinite(fy);
            if (outside) right = lower = 0.0f;
            const float *q00 = zero, *q01 = zero, *q10 = zero, *q11 = zero;
            if (!bad) {
                const int64_t ix = (int64_t)fx, iy = (int64_t)fy;
                const float *row0 = src + (iy * w + ix) * c;
                q00 = row0;
                if (ix + 1 < w) q01 = row0 + c;
                if (iy + 1 < h) q10 = row0 + w * c;
                if (ix + 1 < w && iy + 1 < h) q11 = row0 + w * c + c;
            }
            const float r1 = 1.0f - right, l1 = 1.0f - lower;
            float *restrict o = out + (y * ow + x) * c;
            for (int64_t k = 0; k < c; k++) {
                const float up = q00[k] * r1 + q01[k] * right;
                const float lo = q10[k] * r1 + q11[k] * right;
                o[k] = lo * lower + up * l1;
            }
        }
    }
}

/* Bits of a[i] as a double (how a task carries its double arguments). */
static double arg_f64(const int64_t *a, int i) {
    double v;
    memcpy(&v, &a[i], sizeof v);
    return v;
}

/* min/max as numpy's: NaN as soon as one value is NaN. */
static double nan_min(double lo, double v) { return isnan(v) || v < lo ? v : lo; }
static double nan_max(double hi, double v) { return isnan(v) || v > hi ? v : hi; }

/* MediaPipe's Landmarks2TransformMatrix v2 (mediapipe_ops.landmarks_to_transform_matrix, the
 * numpy reference, in double with the same operations in the same order): rotation from two
 * landmarks, the subset's box in the rotated frame, out = the 4x4 matrix as float.
 * a: landmarks (n x 3 floats), subset (int64), subset size, left, right, out (16 floats), then
 * as double bits: target rotation, output width / 2, output height / 2, scale_x / output width,
 * scale_y / output height. */
void task_landmarks_matrix_f32(const int64_t *a) {
    const float *lm = P(0, const float);
    const int64_t *subset = P(1, const int64_t);
    const int64_t ns = a[2], left = a[3], right = a[4];
    float *out = P(5, float);
    const double target = arg_f64(a, 6), half_x = arg_f64(a, 7), half_y = arg_f64(a, 8);
    const double rel_x = arg_f64(a, 9), rel_y = arg_f64(a, 10);
    const double dx = (double)lm[3 * right] - (double)lm[3 * left];
    const double dy = (double)lm[3 * right + 1] - (double)lm[3 * left + 1];
    const double rotation = target - atan2(dy, dx);
    const double c = isfinite(rotation) ? cos(rotation) : NAN, s = isfinite(rotation) ? sin(rotation) : NAN;
    double lo_x = 0, hi_x = 0, lo_y = 0, hi_y = 0;
    for (int64_t i = 0; i < ns; i++) {
        const double x = lm[3 * subset[i]], y = lm[3 * subset[i] + 1];
        const double px = x * c - y * s, py = x * s + y * c;
        if (i == 0) {
            lo_x = hi_x = px;
            lo_y = hi_y = py;
        } else {
            lo_x = nan_min(lo_x, px), hi_x = nan_max(hi_x, px);
            lo_y = nan_min(lo_y, py), hi_y = nan_max(hi_y, py);
        }
    }
    const double mx = (lo_x + hi_x) / 2, my = (lo_y + hi_y) / 2;
    const double cx = c * mx + s * my, cy = -s * mx + c * my;  /* R(-rotation) @ the box centre */
    const double kx = rel_x * (hi_x - lo_x), ky = rel_y * (hi_y - lo_y);
    const double l00 = c * kx, l01 = s * ky, l10 = -s * kx, l11 = c * ky;
    const float m[16] = {(float)l00, (float)l01, 0, (float)(cx - (l00 * half_x + l01 * half_y)),
                         (float)l10, (float)l11, 0, (float)(cy - (l10 * half_x + l11 * half_y)),
                         0, 0, 1, 0, 0, 0, 0, 1};
    memcpy(out, m, sizeof m);
}

/* MediaPipe's TransformLandmarks v2 (mediapipe_ops.transform_landmarks, the numpy reference):
 * (x, y) -> ((m0 x + m1 y) + m2 0) + m3 and ((m4 x + m5 y) + m6 0) + m7 in float, a third
 * coordinate copied. a: landmarks (n x d floats), m (16 floats), out (n x d), n, d (2 or 3). */
void task_transform_landmarks_f32(const int64_t *a) {
    const float *lm = P(0, const float), *m = P(1, const float);
    float *out = P(2, float);
    const int64_t n = a[3], d = a[4];
    const float zx = m[2] * 0.0f, zy = m[6] * 0.0f;
    for (int64_t i = 0; i < n; i++) {
        const float x = lm[i * d], y = lm[i * d + 1];
        float ox = x * m[0], oy = x * m[4], t;
        t = y * m[1]; ox = ox + t; ox = ox + zx; ox = ox + m[3];
        t = y * m[5]; oy = oy + t; oy = oy + zy; oy = oy + m[7];
        if (d == 3) out[i * d + 2] = lm[i * d + 2];
        out[i * d] = ox;
        out[i * d + 1] = oy;
    }
}
