// Quantized REDUCE_PROD (int8 / int16) as LiteRT's QuantizedReduceProd (the cpu's
// reduce.quantized_prod), through qwords.wgsl: output e's first x - zp_in, times each next one
// in input order, every 64-bit product rescaled by (P.m, P.shift) with the int64
// MultiplyByQuantizedMultiplier (q_mbqm_i64) and cast to int32 as the C does; then once more,
// plus the output zero point, clamped. Each step rounds, so one thread folds an output's
// P.count elements in order. The kept dims (P.kshape / P.kstride) locate the first element,
// the reduced ones (P.rshape / P.rstride) the others, as reduce_rows.wgsl.
//#include "coords.wgsl"

fn out_code(e: u32) -> i32 {
    let base = dot(coords4(e, P.kshape), P.kstride);
    var acc = $LOAD(P.x_off, base) - P.zp_in;
    for (var j = 1u; j < P.count; j++) {
        let v = $LOAD(P.x_off, base + dot(coords4(j, P.rshape), P.rstride)) - P.zp_in;
        acc = bitcast<i32>(q_mbqm_i64(q_mul_wide(acc, v), P.m, P.shift).x);
    }
    return q_out(bitcast<i32>(q_mbqm_i64(q_i64(acc), P.m, P.shift).x), P.zp, P.qmin, P.qmax);
}
