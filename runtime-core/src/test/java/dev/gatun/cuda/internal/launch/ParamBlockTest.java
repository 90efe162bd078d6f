package dev.gatun.cuda.internal.launch;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.gatun.cuda.KernelArg;
import java.lang.foreign.ValueLayout;
import org.junit.jupiter.api.Test;

class ParamBlockTest {

    @Test
    void theArgumentBlockHasOneAlignedSlotPerParameter() {
        ParamBlock block = new ParamBlock(4);
        block.set(0, KernelArg.i8((byte) -1), 0);
        block.set(1, KernelArg.f64(1.5), 0);
        block.set(2, KernelArg.i16((short) 7), 0);
        block.set(3, KernelArg.address(0xABCDEF), 0xABCDEF);
        for (int i = 0; i < 4; i++) {
            long slot = block.kernelParams().getAtIndex(ValueLayout.ADDRESS, i).address();
            assertEquals(block.slots().address() + 8L * i, slot);
            assertEquals(0, slot % 8, "every slot is 8-aligned, enough for any scalar or pointer");
        }
        assertEquals(-1, block.slots().get(ValueLayout.JAVA_BYTE, 0));
        assertEquals(0, block.slots().get(ValueLayout.JAVA_BYTE, 1), "a narrow slot's unused bytes are cleared");
        assertEquals(1.5, block.slots().get(ValueLayout.JAVA_DOUBLE, 8));
        assertEquals(7, block.slots().get(ValueLayout.JAVA_SHORT, 16));
        assertEquals(0xABCDEFL, block.slots().get(ValueLayout.JAVA_LONG, 24));
    }
}
