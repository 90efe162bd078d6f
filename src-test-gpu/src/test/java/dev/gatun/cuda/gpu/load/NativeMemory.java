package dev.gatun.cuda.gpu.load;

import java.lang.management.ManagementFactory;
import java.util.OptionalLong;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.management.ObjectName;

/**
 * The JVM's committed native memory from Native Memory Tracking, read in-process through the
 * DiagnosticCommand MBean (what {@code jcmd <pid> VM.native_memory summary} prints; the bundle's
 * trimmed JDK has no jcmd). Needs {@code -XX:NativeMemoryTracking=summary}.
 */
public final class NativeMemory {

    private static final Pattern TOTAL = Pattern.compile("Total: reserved=(\\d+)KB, committed=(\\d+)KB");

    private NativeMemory() {
    }

    /** The NMT summary text, as the diagnostic command returns it. */
    public static String summary() {
        try {
            ObjectName name = new ObjectName("com.sun.management:type=DiagnosticCommand");
            return (String) ManagementFactory.getPlatformMBeanServer().invoke(name, "vmNativeMemory",
                    new Object[] {new String[] {"summary"}}, new String[] {String[].class.getName()});
        } catch (javax.management.JMException e) {
            throw new IllegalStateException("the DiagnosticCommand MBean could not run VM.native_memory summary: " + e, e);
        }
    }

    /**
     * The committed bytes of the summary's Total line; empty when there is none (NMT off: the
     * command then says "Native memory tracking is not enabled").
     */
    public static OptionalLong committedBytes(String summary) {
        Matcher m = TOTAL.matcher(summary);
        return m.find() ? OptionalLong.of(Long.parseLong(m.group(2)) * 1024) : OptionalLong.empty();
    }
}
