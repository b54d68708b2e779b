/* The CPU backend's compiled loops (see jit.py): depthwise taps, conv epilogue, im2col.
 *
 * Built on first use by the system C compiler with -ffp-contract=off, so every element
 * gets the float operations written here, in this order, and no fused multiply-adds.
 * Bounds are checked in Python (jit.check_*) before a call is bound; nothing here checks.
 */
#include <stdint.h>
#include <string.h>

/* out[r, m] = bt[m % P] + sum_t src[r*row_stride + offs[t] + m] * wt[t, m % P], nine taps
 * per pass over a segment of P elements (ntap is a multiple of 9). */
#define DEPTHWISE(NAME, T)                                                                  \
void NAME(const T *src, const int64_t *offs, int64_t ntap, int64_t row_stride,            \
          const T *restrict wt, const T *restrict bt, T *out, int64_t rows, int64_t length,   \
          int64_t period) {                                                                 \
    for (int64_t r = 0; r < rows; r++) {                                                    \
        T *o = out + r * length;                                                            \
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
                if (dw == 1) {                                                              \
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
 * pixels): 0 bias vecs[s], 1 clamp [lo, hi], 2 add res, 3 max(x, a*x), 4 min(x, a*x),
 * 5 min(x, 0)*a + max(x, 0), 6 hard swish x * clamp(x + lo, 0, hi) / hi. Clamps keep NaN,
 * as np.clip does. */
void epilogue_steps(float *o, const float *res, int64_t n, const int64_t *codes, int64_t nsteps,
                    const float *vecs, const float *lo, const float *hi, int64_t period) {
    for (int64_t b = 0; b < n; b += period) {
        int64_t len = n - b < period ? n - b : period;
        float *restrict seg = o + b;
        const float *restrict r = res + b;
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
                for (int64_t m = 0; m < len; m++) seg[m] += r[m];
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
