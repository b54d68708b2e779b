/* The native encoder of the WebGPU backend (encode.py): two calls encode and submit a GPU
 * partition's invoke. `encode` creates a command encoder, records the copies in front (bound
 * inputs), begins a compute pass, records every dispatch, ends the pass, records the copies
 * behind (readbacks into staging), finishes, and releases the pass and the encoder; `submit`
 * submits the command buffer and releases it. Two calls, because wgpu-native reports an
 * encoding error at finish but aborts the process when an invalid command buffer is
 * submitted: encode.py looks for a reported error in between. wgpu-native's C API is called
 * through the function pointers wgpu-py's cffi library exposes (nothing is linked: the
 * addresses come in `fns`, in the order of encode.py's FUNCTIONS). Pipelines, bind groups,
 * workgroup counts and the copies behind were made at allocate time; a pipeline equal to the
 * previous dispatch's is not set again (the pass keeps it). Built on first use by
 * gpulite.native. */
#include <stddef.h>
#include <stdint.h>

typedef void *(*create_encoder_fn)(void *device, const void *descriptor);
typedef void (*copy_fn)(void *encoder, void *src, uint64_t src_offset, void *dst, uint64_t dst_offset,
                        uint64_t size);
typedef void *(*begin_pass_fn)(void *encoder, const void *descriptor);
typedef void (*set_pipeline_fn)(void *pass, void *pipeline);
typedef void (*set_bind_group_fn)(void *pass, uint32_t index, void *group, size_t offsets, const uint32_t *offset);
typedef void (*dispatch_fn)(void *pass, uint32_t x, uint32_t y, uint32_t z);
typedef void (*end_pass_fn)(void *pass);
typedef void *(*finish_fn)(void *encoder, const void *descriptor);
typedef void (*submit_fn)(void *queue, size_t count, void *const *buffers);
typedef void (*release_fn)(void *object);

enum { CREATE_ENCODER, COPY, BEGIN_PASS, SET_PIPELINE, SET_BIND_GROUP, DISPATCH, END_PASS, FINISH, SUBMIT,
       RELEASE_PASS, RELEASE_ENCODER, RELEASE_COMMAND_BUFFER };

/* A buffer-to-buffer copy: source, source offset, destination, destination offset, bytes. */
typedef struct {
    uint64_t src, src_offset, dst, dst_offset, size;
} copy_t;

static void copies(const uintptr_t *fns, void *encoder, const copy_t *c, int64_t n) {
    copy_fn copy = (copy_fn)fns[COPY];
    for (int64_t i = 0; i < n; i++)
        copy(encoder, (void *)(uintptr_t)c[i].src, c[i].src_offset, (void *)(uintptr_t)c[i].dst, c[i].dst_offset,
             c[i].size);
}

/* Everything up to the command buffer, which it returns. The descriptors (a
 * WGPUCommandEncoderDescriptor and a WGPUCommandBufferDescriptor) label the encoder and its
 * command buffer. */
void *encode(const uintptr_t *fns, void *device, const void *encoder_descriptor, const void *buffer_descriptor,
             const copy_t *before, int64_t n_before, int64_t n, void *const *pipelines, void *const *groups,
             const uint32_t *grids, const copy_t *after, int64_t n_after) {
    void *encoder = ((create_encoder_fn)fns[CREATE_ENCODER])(device, encoder_descriptor);
    copies(fns, encoder, before, n_before);
    if (n > 0) {
        set_pipeline_fn set_pipeline = (set_pipeline_fn)fns[SET_PIPELINE];
        set_bind_group_fn set_bind_group = (set_bind_group_fn)fns[SET_BIND_GROUP];
        dispatch_fn dispatch = (dispatch_fn)fns[DISPATCH];
        void *pass = ((begin_pass_fn)fns[BEGIN_PASS])(encoder, NULL);
        void *last = NULL;
        for (int64_t i = 0; i < n; i++) {
            if (pipelines[i] != last) {
                set_pipeline(pass, pipelines[i]);
                last = pipelines[i];
            }
            set_bind_group(pass, 0, groups[i], 0, NULL);
            dispatch(pass, grids[3 * i], grids[3 * i + 1], grids[3 * i + 2]);
        }
        ((end_pass_fn)fns[END_PASS])(pass);
        ((release_fn)fns[RELEASE_PASS])(pass);
    }
    copies(fns, encoder, after, n_after);
    void *buffer = ((finish_fn)fns[FINISH])(encoder, buffer_descriptor);
    ((release_fn)fns[RELEASE_ENCODER])(encoder);
    return buffer;
}

/* Submit a command buffer `encode` made (only if no error was reported while encoding:
 * wgpu-native aborts the process on an invalid one) and release it. */
void submit(const uintptr_t *fns, void *queue, void *buffer) {
    ((submit_fn)fns[SUBMIT])(queue, 1, &buffer);
    ((release_fn)fns[RELEASE_COMMAND_BUFFER])(buffer);
}
