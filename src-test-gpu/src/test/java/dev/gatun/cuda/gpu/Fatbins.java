package dev.gatun.cuda.gpu;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * Wraps a cubin in a fatbin container laid out as nvcc writes one (NVRTC makes no fatbins, and
 * Gatun's API has no fatbin writer): a 16-byte header (magic 0xBA55ED50, version 1, header size
 * 16, fat size), then one 64-byte ELF entry header (kind 2, version 0x0101, header size 64,
 * payload size padded to 8, code version 1.8, SM arch, flags 0x11 for uncompressed 64-bit Linux
 * code) and the cubin, zero-padded to 8 bytes. runtime-core's tests build the same layout.
 */
final class Fatbins {

    private Fatbins() {
    }

    static byte[] wrap(int smArch, byte[] cubin) {
        int padded = (cubin.length + 7) & ~7;
        ByteBuffer b = ByteBuffer.allocate(16 + 64 + padded).order(ByteOrder.LITTLE_ENDIAN);
        b.putInt(0xBA55ED50).putShort((short) 1).putShort((short) 16).putLong(64 + padded);
        b.putShort((short) 2).putShort((short) 0x0101).putInt(64).putLong(padded);
        b.putInt(0).putInt(0).putShort((short) 8).putShort((short) 1).putInt(smArch).putInt(0).putInt(0);
        b.putLong(0x11).putLong(0).putLong(0);
        b.put(cubin);
        return b.array();
    }
}
