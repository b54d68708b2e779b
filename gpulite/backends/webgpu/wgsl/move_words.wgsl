// Data movement of 4- or 8-byte elements (any dtype: buf is u32 words, so every bit moves).
// Output element e is input element src(e) (an element index from P.x_off), or the element
// at P.val_off when src(e) is NONE (padding). One thread per output word; $WPE words per
// element. The index map (fn src) is concatenated before this file.

fn run(i: u32) {
    let s = src(i / ${WPE}u);
    let part = i % ${WPE}u;
    if (s == NONE) {
        buf[P.out_off + i] = buf[P.val_off + part];
    } else {
        buf[P.out_off + i] = buf[P.x_off + s * ${WPE}u + part];
    }
}
