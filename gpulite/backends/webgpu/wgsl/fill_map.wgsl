// Index map of FILL: every output element is the value (the driver's P.val_off element 0).

const NONE: u32 = 0xffffffffu;

fn src(e: u32) -> u32 {
    return NONE;
}
