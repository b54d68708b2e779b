// PAD and STRIDED_SLICE: each output element reads input coordinate begin + c * stride
// (4-D, shapes padded with leading 1s). Coordinates outside the input read P.value
// (PAD's constant; never the case for a slice).

fn run(i: u32) {
    var r = i;
    let c3 = r % P.out_shape.w;
    r = r / P.out_shape.w;
    let c2 = r % P.out_shape.z;
    r = r / P.out_shape.z;
    let c = vec4<i32>(vec4<u32>(r / P.out_shape.y, r % P.out_shape.y, c2, c3));
    let src = P.begin + c * P.stride;
    if (any(src < vec4<i32>(0)) || any(src >= vec4<i32>(P.in_shape))) {
        buf[P.out_off + i] = P.value;
        return;
    }
    buf[P.out_off + i] = buf[P.x_off + dot(vec4<u32>(src), P.in_strides)];
}
