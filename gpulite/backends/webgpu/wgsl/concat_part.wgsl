// One input of a CONCATENATION: tensors viewed as [outer, axis * inner]; this input's row of
// P.part words lands at word P.start of each P.row-word output row.

fn run(i: u32) {
    let o = i / P.part;
    let k = i % P.part;
    buf[P.out_off + o * P.row + P.start + k] = act(buf[P.x_off + i]);
}
