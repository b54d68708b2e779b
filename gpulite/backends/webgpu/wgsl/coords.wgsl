// Index decomposition shared by the kernels: `//#include "coords.wgsl"`.

// The coordinates of element i of a row-major tensor of 4-D shape `shape` (the last
// coordinate varies fastest; shape.x, the outermost size, is not needed).
fn coords4(i: u32, shape: vec4<u32>) -> vec4<u32> {
    let c3 = i % shape.w;
    var r = i / shape.w;
    let c2 = r % shape.z;
    r = r / shape.z;
    return vec4<u32>(r / shape.y, r % shape.y, c2, c3);
}
