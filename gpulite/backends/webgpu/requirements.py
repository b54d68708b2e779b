"""What a compiled plan needs from a device, checked once, up front, at ``allocate_tensors``.

A device the application supplies may have been created with WebGPU's default limits or
smaller ones, and gpulite's own device only raises the two limits the arena needs. Checking
every need before creating any buffer turns what would be a wgpu validation error in the
middle of building (or, worse, at the first dispatch) into one :class:`DeviceLimitsError`
that lists everything missing: what the model needs against what the device has.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gpulite.errors import DeviceLimitsError

from .program import Program

# Fixed by the bind-group layout every kernel shares (device.py): two storage bindings of the
# arena, one uniform block, in one bind group.
_LAYOUT_NEEDS = {
    "max-bind-groups": 1,
    "max-bindings-per-bind-group": 3,
    "max-storage-buffers-per-shader-stage": 2,
    "max-uniform-buffers-per-shader-stage": 1,
}
# precision="fp16" kernels also bind the arena as array<vec4<f16>> (binding 3).
_F16_LAYOUT_NEEDS = {
    "max-bindings-per-bind-group": 4,
    "max-storage-buffers-per-shader-stage": 3,
}


@dataclass(frozen=True)
class Need:
    """One limit: the value needed and what needs it (for the message)."""

    limit: str
    value: int
    why: str


def plan_needs(*, arena_bytes: int, buffer_bytes: int, programs: list[Program]) -> list[Need]:
    """Every limit a plan needs: its arena binding, its largest buffer and its dispatches.

    Parameters
    ----------
    arena_bytes : int
        Size of the arena, bound whole as one storage buffer.
    buffer_bytes : int
        The largest buffer the plan creates (arena, uniforms or staging).
    programs : list of Program
        Every GPU dispatch of the plan.
    """
    needs = [Need(k, v, "gpulite's bind-group layout") for k, v in _LAYOUT_NEEDS.items()]
    if any(p.weights == "f16" for p in programs):  # fp16 weights: the arena bound a fourth time
        needs += [Need(k, v, "gpulite's fp16 bind-group layout") for k, v in _F16_LAYOUT_NEEDS.items()]
    needs.append(Need("max-storage-buffer-binding-size", arena_bytes, "the arena (activations + constants)"))
    needs.append(Need("max-buffer-size", buffer_bytes, "the largest buffer"))
    if programs:
        wg = max(programs, key=lambda p: p.workgroup_size)
        grid = max(programs, key=lambda p: max(p.dispatch))
        ub = max(programs, key=lambda p: len(p.params))
        needs += [
            Need("max-compute-workgroup-size-x", wg.workgroup_size, wg.name),
            Need("max-compute-invocations-per-workgroup", wg.workgroup_size, wg.name),
            Need("max-compute-workgroups-per-dimension", max(grid.dispatch), grid.name),
            Need("max-uniform-buffer-binding-size", len(ub.params), ub.name),
        ]
    return needs


_HINT = "a device the application creates must request these in required_limits/required_features"


def check_device(gdev: Any, needs: list[Need], *, features: tuple[str, ...] = (), what: str = "this model",
                 hint: str = _HINT) -> None:
    """Raise :class:`DeviceLimitsError` listing every unmet need of ``needs`` on ``gdev``.

    Limits the device does not report are taken as met (wgpu validates them anyway). ``what``
    names what cannot run in the message, ``hint`` what to do about it.
    """
    missing = [f"feature {f!r}: needed, the device lacks it" for f in features if f not in gdev.device.features]
    for n in needs:
        have = gdev.limits.get(n.limit)
        if have is not None and n.value > have:
            missing.append(f"{n.limit}: needs {n.value} ({n.why}), the device has {have}")
    if missing:
        raise DeviceLimitsError(f"{gdev.describe()} cannot run {what}:\n  " + "\n  ".join(missing) + f"\n({hint})")
