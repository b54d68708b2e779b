"""ImageToTensor's GPU path: upload the frame once, warp and normalise it with ``image_to_tensor.wgsl``.

The result is a :class:`~.common.DeviceTensor` in a buffer of its own, which the Inference
calculator binds to the model input (``Interpreter.bind_input``): the frame's bytes are the
only upload, and the tensor never visits the host.

A frame too large for the device (its buffer, or its binding, over the device's limits) is
refused before anything is created or submitted, with a :class:`~gpulite.errors.DeviceLimitsError`
naming each limit, what needs it and the device's value.
"""

from __future__ import annotations

import struct
from typing import Any

import numpy as np
import wgpu

from gpulite.errors import DeviceMismatchError

from ..requirements import Need, check_device
from .common import COUNTERS, STORAGE_OUT, DeviceTensor, compute_pipeline, shared_device, write_padded

_FRAME_USAGE = wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_DST
_BORDER = {"zero": 0, "replicate": 1}
_WG = 64


class ImageToTensorGpu:
    """Warps images into (1, H, W, 3) float32 GPU tensors; one instance per calculator node.

    Parameters
    ----------
    device : GpuDevice, wgpu.GPUDevice or str, optional
        Default: the shared device interpreters use, so the tensor can be bound without a copy.
    """

    def __init__(self, device: Any = None) -> None:
        self.gdev = shared_device(device)
        self.pipeline = compute_pipeline(self.gdev, "image_to_tensor")
        self._frame: Any = None             # uploaded frames land here (grown as needed)
        self._staged: Any = None            # texture inputs are copied here, rows padded to 256 bytes
        self._params = self.gdev.device.create_buffer(
            label="gpulite.pipeline.image_to_tensor.params", size=64,
            usage=wgpu.BufferUsage.UNIFORM | wgpu.BufferUsage.COPY_DST)
        self._last_params = b""

    def _buffer(self, attr: str, nbytes: int, usage: int) -> Any:
        buf = getattr(self, attr)
        if buf is None or buf.size < nbytes:
            buf = self.gdev.device.create_buffer(label=f"gpulite.pipeline.{attr}", size=max(-(-nbytes // 4) * 4, 4),
                                                 usage=usage)
            setattr(self, attr, buf)
        return buf

    def _source(self, image: Any, enc: Any) -> tuple[Any, int, int, int, int, int]:
        """(buffer, width, height, bytes per pixel, bytes per row, byte offset) of the image on the GPU."""
        if isinstance(image, np.ndarray):
            h, w, c = image.shape
            shared = getattr(image, "gpu_copy", False) is not False  # a SharedFrame: uploaded once for all nodes
            if shared and image.gpu_copy is not None and image.gpu_copy[0] is self.gdev:
                return image.gpu_copy[1], w, h, c, w * c, 0
            if shared:
                buf = self.gdev.device.create_buffer(label="gpulite.pipeline.shared_frame",
                                                     size=max(-(-image.nbytes // 4) * 4, 4), usage=_FRAME_USAGE)
                image.gpu_copy = (self.gdev, buf)
            else:
                buf = self._buffer("_frame", image.nbytes, _FRAME_USAGE)
            write_padded(self.gdev, buf, image)
            return buf, w, h, c, w * c, 0
        handle, w, h = image.handle, image.width, image.height
        if image.device is not None and image.device is not self.gdev.device:
            raise DeviceMismatchError(
                f"ImageToTensor: the GpuImage lives on another device than {self.gdev.describe()}")
        if image.format in ("rgb8", "rgba8"):
            c = 3 if image.format == "rgb8" else 4
            return handle, w, h, c, w * c, 0
        # rgba8unorm texture: a GPU-side copy into a buffer (rows padded to 256 bytes, as WebGPU requires)
        row = -(-w * 4 // 256) * 256
        buf = self._buffer("_staged", row * h, _FRAME_USAGE)
        enc.copy_texture_to_buffer({"texture": handle, "mip_level": 0, "origin": (0, 0, 0)},
                                   {"buffer": buf, "offset": 0, "bytes_per_row": row, "rows_per_image": h},
                                   (w, h, 1))
        return buf, w, h, 4, row, 0

    def _check_limits(self, image: Any, out_w: int, out_h: int) -> None:
        """Raise :class:`DeviceLimitsError` when ``image`` or the ``out_w`` x ``out_h`` tensor
        does not fit the device's buffer, binding or dispatch limits (all of them in one message)."""
        if isinstance(image, np.ndarray):
            h, w, c = image.shape
            src, what = -(-image.nbytes // 4) * 4, f"a {w}x{h} frame ({c} channels, {image.nbytes} bytes)"
        elif image.format in ("rgb8", "rgba8"):
            src, what = int(image.handle.size), f"a {image.width}x{image.height} {image.format} GpuImage buffer"
        else:  # a texture, copied into a buffer with rows padded to 256 bytes
            src = -(-image.width * 4 // 256) * 256 * image.height
            what = f"a {image.width}x{image.height} {image.format} GpuImage texture"
        out, groups = out_w * out_h * 12, -(-(out_w * out_h) // _WG)
        needs = [
            Need("max-buffer-size", src, "the frame's buffer"),
            Need("max-storage-buffer-binding-size", src, "the frame, bound whole by image_to_tensor.wgsl"),
            Need("max-buffer-size", out, f"the {out_w}x{out_h} input tensor"),
            Need("max-storage-buffer-binding-size", out, f"the {out_w}x{out_h} input tensor"),
            Need("max-compute-workgroups-per-dimension", groups, "the image_to_tensor dispatch"),
        ]
        check_device(self.gdev, needs, what=f"ImageToTensor on {what}",
                     hint="downscale the frame first, or use backend='cpu'")

    def run(self, image: Any, a: np.ndarray, out_w: int, out_h: int, border: str, scale: float,
            offset: float, *, match_opencv: bool = False) -> DeviceTensor:
        """Warp ``image`` (uint8 RGB/RGBA numpy array or GpuImage) by the 2x3 sampling matrix ``a``.

        ``match_opencv``: sample at 1/32-pixel positions and round to whole grey levels, as the
        CPU converter's option of that name.
        """
        gdev = self.gdev
        self._check_limits(image, out_w, out_h)
        with gdev.guard("ImageToTensor (webgpu)"):
            enc = gdev.device.create_command_encoder(label="gpulite.pipeline.image_to_tensor")
            src, w, h, bpp, row, start = self._source(image, enc)
            params = struct.pack("<4f4f4I4I", a[0, 0], a[0, 1], a[0, 2], scale, a[1, 0], a[1, 1], a[1, 2], offset,
                                 w, h, bpp, row, out_w, out_h, _BORDER[border] | (2 if match_opencv else 0), start)
            if params != self._last_params:  # a fixed region and frame size: written once
                gdev.queue.write_buffer(self._params, 0, params)
                COUNTERS.add(uploaded=len(params))
                self._last_params = params
            n = out_w * out_h
            out = gdev.device.create_buffer(label="gpulite.pipeline.input_tensor", size=n * 12, usage=STORAGE_OUT)
            bg = gdev.device.create_bind_group(layout=self.pipeline.get_bind_group_layout(0), entries=[
                {"binding": 0, "resource": {"buffer": src, "offset": 0, "size": src.size}},
                {"binding": 1, "resource": {"buffer": out, "offset": 0, "size": out.size}},
                {"binding": 2, "resource": {"buffer": self._params, "offset": 0, "size": 64}},
            ])
            cp = enc.begin_compute_pass()
            cp.set_pipeline(self.pipeline)
            cp.set_bind_group(0, bg)
            cp.dispatch_workgroups(-(-n // _WG), 1, 1)
            cp.end()
            gdev.queue.submit([enc.finish()])
        return DeviceTensor(gdev, out, 0, (1, out_h, out_w, 3))
