// Data movement of 1- or 2-byte elements (int8, uint8, bool, float16, int16), packed $PER to a
// u32 word. Output element e is input element src(e) (from P.x_off), or the element at
// P.val_off when src(e) is NONE (padding). One thread builds one whole output word, so no
// two threads write the same word; the bytes past the last element of the last word are the
// tensor's alignment padding (the plan aligns tensors to 64 bytes).

fn element(word0: u32, e: u32) -> u32 {
    let b = e * (4u / ${PER}u);
    return (buf[word0 + b / 4u] >> ((b % 4u) * 8u)) & $MASK;
}

fn run(i: u32) {
    var w = 0u;
    for (var k = 0u; k < ${PER}u; k++) {
        let e = i * ${PER}u + k;
        if (e >= P.elems) {
            break;
        }
        let s = src(e);
        var v = element(P.val_off, 0u);
        if (s != NONE) {
            v = element(P.x_off, s);
        }
        w |= v << (k * (32u / ${PER}u));
    }
    buf[P.out_off + i] = w;
}
