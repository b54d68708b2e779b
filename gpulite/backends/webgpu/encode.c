/* The native encoder of the WebGPU backend (encode.py): one call records a GPU partition's
 * dispatches into an open compute pass, calling wgpu-native's C API through the function
 * pointers wgpu-py's cffi library exposes (so nothing is linked: the addresses come in
 * `fns`). Pipelines, bind groups and workgroup counts were made at allocate time; a pipeline
 * equal to the previous dispatch's is not set again (the pass keeps it). Built on first use
 * by gpulite.native. */
#include <stddef.h>
#include <stdint.h>

typedef void (*set_pipeline_fn)(void *pass, void *pipeline);
typedef void (*set_bind_group_fn)(void *pass, uint32_t index, void *group, size_t offsets, const uint32_t *offset);
typedef void (*dispatch_fn)(void *pass, uint32_t x, uint32_t y, uint32_t z);

void record(void *pass, const uintptr_t *fns, int64_t n, void *const *pipelines, void *const *groups,
            const uint32_t *grids) {
    set_pipeline_fn set_pipeline = (set_pipeline_fn)fns[0];
    set_bind_group_fn set_bind_group = (set_bind_group_fn)fns[1];
    dispatch_fn dispatch = (dispatch_fn)fns[2];
    void *last = NULL;
    for (int64_t i = 0; i < n; i++) {
        if (pipelines[i] != last) {
            set_pipeline(pass, pipelines[i]);
            last = pipelines[i];
        }
        set_bind_group(pass, 0, groups[i], 0, NULL);
        dispatch(pass, grids[3 * i], grids[3 * i + 1], grids[3 * i + 2]);
    }
}
