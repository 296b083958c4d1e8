"""STABLEHLO_RNG_BIT_GENERATOR: random bits from a counter-based generator, and the next state.

TFLite (``kernels/stablehlo_rng_bit_generator.cc``): input the initial state (uint64, 1-D);
outputs the new state (its shape) and the random bits (int32, int64, uint32 or uint64, the
shape the model gives it). The state's uint64 words are read as uint32 pairs (little-endian
memory): ``key = (s[0], s[1])``, the 64-bit counter ``(s[2], s[3])``. The output's bytes
are the generator's 32-bit words in order, one block per counter value, the counter (the
pair, as one 64-bit number) counting up from the state's; the new state is the key and the
counter after the last block.

- PHILOX (and DEFAULT): Philox4x32-10, four words a block, its counter words 2 and 3
  ``(s[4], s[5])`` for a state of three words, else ``(s[0], s[1])`` (the key again: TFLite's
  choice); a three-word state keeps its third word.
- THREEFRY: Threefry2x32-20, two words a block; the state has two words.

The same state gives LiteRT's bits exactly. One difference: a node without an options table
runs Philox here (the table's default, DEFAULT), where LiteRT refuses it (its parser leaves
the algorithm unknown). Version 1 (the only one).
"""

from __future__ import annotations

import numpy as np

from backends.cpu.kernel import CpuKernel, register
from backends.cpu.kernels._counter_rng import philox4x32, threefry2x32
from schema.enums import BuiltinOperator, RngAlgorithm, TensorType

T = TensorType


@register(BuiltinOperator.STABLEHLO_RNG_BIT_GENERATOR, 1, 1)  # v1 (the only version)
class StablehloRngBitGenerator(CpuKernel):
    """STABLEHLO_RNG_BIT_GENERATOR v1 (Philox and Threefry)."""

    def prepare(self) -> None:
        self.require_num_inputs(1)
        if len(self.outputs) != 2:
            raise self.unsupported(f"has {len(self.outputs)} outputs; it needs two (the new state, the bits)")
        state, new_state, bits = self.inputs[0], self.outputs[0], self.outputs[1]
        self.require_types(state, T.UINT64, role="initial state")
        self.require_types(new_state, T.UINT64, role="output state")
        self.require_types(bits, T.INT32, T.INT64, T.UINT32, T.UINT64, role="output")
        if len(state.shape) != 1:
            raise self.unsupported(f"the initial state has shape {list(state.shape)}; it must be 1-D")
        self.threefry = self.params.algorithm == RngAlgorithm.THREEFRY
        allowed = (2,) if self.threefry else (2, 3)
        if state.shape[0] not in allowed:
            name = "THREEFRY" if self.threefry else "PHILOX"
            raise self.unsupported(
                f"the initial state has {state.shape[0]} words; {name} takes {' or '.join(map(str, allowed))}"
            )
        new_state.resize(state.shape)
        bits.resize(bits.shape)  # (the model's shape: LiteRT's output is static)

    def invoke(self) -> None:
        words = np.ascontiguousarray(self.inputs[0].data).view("<u4")
        key_0, key_1 = int(words[0]), int(words[1])
        counter = int(words[2]) | int(words[3]) << 32
        out = self.outputs[1].data
        count = out.nbytes // 4  # 32-bit words to fill
        width = 2 if self.threefry else 4
        blocks = -(-count // width)
        counters = (counter + np.arange(blocks, dtype=np.uint64)) if blocks else np.zeros(0, np.uint64)
        low, high = (counters & np.uint64(0xFFFFFFFF)).astype(np.uint32), (counters >> np.uint64(32)).astype(np.uint32)
        if self.threefry:
            block_words = threefry2x32(key_0, key_1, (low, high))
        else:
            fixed = (words[4], words[5]) if len(words) == 6 else (words[0], words[1])
            block_words = philox4x32(key_0, key_1, (low, high, np.full(blocks, fixed[0], np.uint32),
                                                    np.full(blocks, fixed[1], np.uint32)))
        stream = np.stack(block_words, axis=1).reshape(-1)[:count]
        out.reshape(-1).view("<u4")[...] = stream
        new_state = self.outputs[0].data.reshape(-1).view("<u4")
        new_state[...] = words
        end = (counter + blocks) % (1 << 64)
        new_state[2], new_state[3] = end & 0xFFFFFFFF, end >> 32
