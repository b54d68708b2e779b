// gpulite common header, prepended to every kernel.
// Binding 0 is the whole arena: activations at the memory plan's offsets, then constants,
// as f32 words (or i32 / u32 words: `word` in make_program; the layout only says "storage").
// Binding 1 is this dispatch's uniform block: tensor offsets (in f32 words) and sizes.
// Binding 2 is the same arena seen as vec4s, for kernels that read 4 channels at once
// (tensor and constant offsets are 16-byte aligned, so word offset w is buf4[w / 4]); or, for a
// kernel that flags bad inputs (make_program's `atomics`), as atomic u32 words `abuf`.
// A kernel file defines `fn run(i: u32)`; thread i is only called for i < P.n (or, for
// cooperating workgroups, `fn run_group(g: u32, t: u32)`: program.py, make_program's `groups`).

$PARAMS

@group(0) @binding(0) var<storage, read_write> buf: array<$WORD>;
@group(0) @binding(1) var<uniform> P: Params;
@group(0) @binding(2) var<storage, read_write> $BINDING2;

fn act(v: $WORD) -> $WORD { $ACT }

// ld(i): a word of the arena (activations). For f32 words, wt(i) / wt4(i) follow this header:
// weights and constant operands stored by GpuContext.weight, as f32 or (precision="fp16") f16,
// always returned as f32 (program.py).
fn ld(i: u32) -> $WORD { return buf[i]; }

$MAIN
