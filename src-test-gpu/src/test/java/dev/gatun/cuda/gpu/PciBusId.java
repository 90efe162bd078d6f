package dev.gatun.cuda.gpu;

import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A PCI address, compared by value: nvidia-smi writes the domain with 8 hex digits
 * ({@code 00000000:00:06.0}), {@code cuDeviceGetPCIBusId} with 4 ({@code 0000:00:06.0}).
 */
record PciBusId(int domain, int bus, int device, int function) {

    private static final Pattern FORM = Pattern.compile("(\\p{XDigit}{1,8}):(\\p{XDigit}{1,2}):(\\p{XDigit}{1,2})\\.(\\p{XDigit})");

    /** @throws IllegalArgumentException when {@code text} is not {@code domain:bus:device.function} in hex */
    static PciBusId parse(String text) {
        Matcher m = FORM.matcher(text.trim());
        if (!m.matches()) {
            throw new IllegalArgumentException("not a PCI bus id (domain:bus:device.function): \"" + text + "\"");
        }
        return new PciBusId(Integer.parseUnsignedInt(m.group(1), 16), Integer.parseInt(m.group(2), 16),
                Integer.parseInt(m.group(3), 16), Integer.parseInt(m.group(4), 16));
    }

    @Override
    public String toString() {
        return String.format(Locale.ROOT, "%04x:%02x:%02x.%x", domain, bus, device, function);
    }
}
