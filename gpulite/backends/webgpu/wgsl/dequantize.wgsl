// DEQUANTIZE to float32: out = (q - zero_point) * scale, per tensor or per channel (channel
// of element i: (i / P.inner) % P.channels), as TFLite computes it in float32. `load` reads
// element e of the narrow input from the u32 view of the arena.

fn load(e: u32) -> f32 {
    return $LOAD;
}

fn run(i: u32) {
    let ch = (i / P.inner) % P.channels;
    let v = (load(i) - bitcast<f32>(buf[P.zp_off + ch])) * bitcast<f32>(buf[P.scale_off + ch]);
    buf[P.out_off + i] = bitcast<u32>(v);
}
