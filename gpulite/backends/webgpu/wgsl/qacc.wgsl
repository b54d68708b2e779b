// The accumulator of the integer matrix products (kernels/qgemm.py): `//#include "qacc.wgsl"`.
// $ACC is i32 for 8-bit inputs (TFLite's int32 accumulator, wrapping as it does) or vec2<u32>
// for 16-bit ones (int64: 16x8 products overflow int32 sums); acc_add adds one product,
// acc_wide gives the total as 64 bits.
//#include "qmath.wgsl"

fn acc_add(a: $ACC, p: i32) -> $ACC {
    return $ADD;
}

fn acc_wide(a: $ACC) -> vec2<u32> {
    return $WIDE;
}
